// Trace diff: HTA's own expectations on trace_compare base/test (hta-analyses.md, section
// 16.3), HTA's short names, the exact policy by hand, and the comparison against brute force.
#include <doctest/doctest.h>

#include <map>
#include <random>
#include <string>
#include <vector>

#include <tracemodel/algo/trace_diff.hpp>
#include <tracemodel/formats/chrome_trace_reader.hpp>

#include "../support/json.hpp"

using namespace tracemodel;

namespace {
event_table read_hta_side(const char* file) {
  read_options o;
  o.keep_file_order = true;  // HTA's frame is in file order
  return read_chrome_trace_file(tmtest::data_path(std::string("kineto/") + file), o);
}
std::map<char, int> categories(const std::vector<diff_row>& rows) {
  std::map<char, int> n;
  for (const diff_row& r : rows) ++n[r.change];
  return n;
}
}  // namespace

TEST_CASE("trace diff as HTA: trace_compare base against test, rank 1, iteration 1010") {
  const event_table base = read_hta_side("trace_compare_base_base.json.gz");
  const event_table test = read_hta_side("trace_compare_test_test.json.gz");
  const hta_trace_diff hta;
  CHECK(hta.iterations(base) == std::vector<std::int64_t>{1009, 1010});
  CHECK(hta.iterations(test) == std::vector<std::int64_t>{1009, 1010});
  diff_selection cpu{.iteration = 1010, .device = diff_device::cpu};
  const op_totals base_cpu = hta.totals(base, cpu);
  // HTA: 6 host events in 1010, each name once.
  const std::map<std::string, std::int64_t> want = {
      {"ProfilerStep#1010", 122149}, {"aten::as_strided", 0}, {"aten::empty", 0},
      {"cudaEventQuery", 4},         {"cudaLaunchKernel", 4}, {"nccl:all_reduce", 67}};
  REQUIRE(base_cpu.by_name.size() == want.size());
  for (const auto& w : want) {
    const std::string& name = w.first;  // (clang 14 cannot capture a structured binding)
    CAPTURE(name);
    REQUIRE(base_cpu.by_name.count(name) == 1);
    CHECK(base_cpu.by_name.at(name).count == 1);
    CHECK(base_cpu.by_name.at(name).duration == w.second);
  }
  diff_selection gpu{.iteration = 1010, .device = diff_device::gpu};
  CHECK(hta.totals(base, gpu).by_name.size() == 1);  // one kernel
  // Compared with short names: CPU {=: 5, +: 3, -: 1}, GPU {-: 1}.
  cpu.short_names = gpu.short_names = true;
  const std::vector<diff_row> cpu_rows =
      compare_totals(hta.totals(base, cpu), hta.totals(test, cpu));
  CHECK(categories(cpu_rows) == std::map<char, int>{{'+', 3}, {'-', 1}, {'=', 5}});
  const std::vector<diff_row> gpu_rows =
      compare_totals(hta.totals(base, gpu), hta.totals(test, gpu));
  CHECK(categories(gpu_rows) == std::map<char, int>{{'-', 1}});
  const ops_change c = ops_diff(cpu_rows);
  CHECK(c.added ==
        std::vector<std::string>{"AddmmBackward0", "All2All_Pooled_Req", "CatBackward0"});
  CHECK(c.deleted == std::vector<std::string>{"nccl:all_reduce"});
  CHECK(c.unchanged == std::vector<std::string>{"ProfilerStep#1010", "aten::as_strided",
                                                "aten::empty", "cudaEventQuery",
                                                "cudaLaunchKernel"});
  CHECK(c.increased.empty());
  CHECK(c.decreased.empty());
  // Rows in the names' byte order, test minus control.
  for (std::size_t k = 1; k < cpu_rows.size(); ++k) CHECK(cpu_rows[k - 1].name < cpu_rows[k].name);
  for (const diff_row& r : cpu_rows) {
    CHECK(r.diff_counts ==
          static_cast<std::int64_t>(r.test_counts) - static_cast<std::int64_t>(r.control_counts));
    CHECK(r.diff_duration == r.test_total_duration - r.control_total_duration);
  }
}

TEST_CASE("HTA's short names") {
  CHECK(
      shorten_name("void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::"
                   "(anonymous namespace)::TensorListMetadata<3>, float>(int, float)") ==
      "at::native::::multi_tensor_apply_kernel");
  CHECK(shorten_name("aten::add") == "aten::add");
  CHECK(shorten_name("Memcpy HtoD (Pageable -> Device)") == "Memcpy HtoD (Pageable -> Device)");
  CHECK(shorten_name("autograd::engine::evaluate_function: AddmmBackward0") ==
        "autograd::engine::evaluate_function: AddmmBackward0");  // no '<' or '(': as it is
  CHECK(shorten_name("void f<a->b>(x)") == "f");
  CHECK(shorten_name("std::vector<int> (anonymous)") == "std::vector");  // trailing space trimmed
}

TEST_CASE("trace diff, exact: host and device, by step, by hand") {
  // Steps 1 [0, 100) and 2 [100, 200) us; an op in each; a launch in step 1 whose kernel runs
  // in step 2 (it counts in step 1, with its call); a kernel without a call at 150 (step 2).
  // clang-format off
  std::string text = R"json({"traceEvents":[
{"ph":"X","cat":"user_annotation","name":"ProfilerStep#1","pid":1,"tid":1,"ts":0,"dur":100},
{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":10,"dur":20},
{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":95,"dur":2,"args":{"correlation":7}},
{"ph":"X","cat":"user_annotation","name":"ProfilerStep#2","pid":1,"tid":1,"ts":100,"dur":100},
{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":110,"dur":30},
{"ph":"X","cat":"kernel","name":"gemm","pid":0,"tid":7,"ts":120,"dur":10,"args":{"device":0,"stream":7,"correlation":7}},
{"ph":"X","cat":"kernel","name":"gemm","pid":0,"tid":7,"ts":150,"dur":5,"args":{"device":0,"stream":7,"correlation":8}},
{"ph":"X","cat":"gpu_user_annotation","name":"forward","pid":0,"tid":7,"ts":120,"dur":40,"args":{"device":0,"stream":7}}
]})json";
  // clang-format on
  const event_table t = read_chrome_trace(text, text.size());
  const exact_trace_diff exact;
  CHECK(exact.iterations(t) == std::vector<std::int64_t>{1, 2});
  const op_totals one = exact.totals(t, {.iteration = 1});
  CHECK(one.by_name.at("aten::mm") == op_total{1, 20000});
  CHECK(one.by_name.at("gemm") == op_total{1, 10000});  // launched in step 1
  CHECK(one.by_name.at("cudaLaunchKernel") == op_total{1, 2000});
  CHECK(one.by_name.at("ProfilerStep#1") == op_total{1, 100000});
  CHECK(one.by_name.size() == 4);
  const op_totals two = exact.totals(t, {.iteration = 2, .device = diff_device::gpu});
  REQUIRE(two.by_name.size() == 1);
  CHECK(two.by_name.at("gemm") == op_total{1, 5000});  // no call: its own start
  const op_totals all = exact.totals(t);
  CHECK(all.by_name.at("aten::mm") == op_total{2, 50000});
  CHECK(all.by_name.at("gemm") == op_total{2, 15000});
  CHECK(all.by_name.count("forward") == 0);  // a GPU annotation is neither side
  const std::vector<diff_row> rows = compare_totals(one, exact.totals(t, {.iteration = 2}));
  const std::vector<diff_row> top = top_regressions(rows, 2);
  REQUIRE(top.size() == 2);
  CHECK(top[0].name == "ProfilerStep#2");  // a name of its own: added
  CHECK(top[0].diff_duration == 100000);
  CHECK(top[1].name == "aten::mm");  // 20 us to 30 us
  CHECK(top[1].diff_duration == 10000);
}

TEST_CASE("compare_totals and ops_diff against brute force, on random totals") {
  std::mt19937_64 rng(47);
  const std::vector<std::string> names = {"a", "b", "c", "d", "e", "f", "g", "h"};
  for (int round = 0; round < 500; ++round) {
    op_totals control, test;
    for (op_totals* side : {&control, &test})
      for (const std::string& n : names)
        for (int k = std::uniform_int_distribution<int>(-2, 3)(rng); k > 0; --k)
          side->add(n, std::uniform_int_distribution<std::int64_t>(0, 100)(rng));
    const std::vector<diff_row> rows = compare_totals(control, test);
    std::size_t k = 0;
    for (const std::string& n : names) {
      const auto c = control.by_name.find(n);
      const auto t = test.by_name.find(n);
      if (c == control.by_name.end() && t == test.by_name.end()) continue;
      REQUIRE(k < rows.size());
      const diff_row& r = rows[k++];
      CHECK(r.name == n);
      const op_total cc = c == control.by_name.end() ? op_total{} : c->second;
      const op_total tt = t == test.by_name.end() ? op_total{} : t->second;
      CHECK(r.control_counts == cc.count);
      CHECK(r.test_total_duration == tt.duration);
      CHECK(r.change == (tt.count > cc.count ? '+' : tt.count < cc.count ? '-' : '='));
    }
    CHECK(k == rows.size());
    const ops_change ch = ops_diff(rows);
    std::size_t sorted = ch.added.size() + ch.deleted.size() + ch.increased.size() +
                         ch.decreased.size() + ch.unchanged.size();
    CHECK(sorted == rows.size());  // every name in exactly one list
  }
}
