// Trace diff by the exact rules: by hand, and the comparison against brute force (HTA's rules:
// tests/hta/trace_diff.cpp).
#include <doctest/doctest.h>

#include <map>
#include <random>
#include <string>
#include <vector>

#include <tracemodel/algo/trace_diff.hpp>
#include <tracemodel/formats/chrome_trace_reader.hpp>

using namespace tracemodel;

namespace {}  // namespace

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
  CHECK(trace_steps(t) == std::vector<std::int64_t>{1, 2});
  const op_totals one = op_totals_of(t, {.iteration = 1});
  CHECK(one.by_name.at("aten::mm") == op_total{1, 20000});
  CHECK(one.by_name.at("gemm") == op_total{1, 10000});  // launched in step 1
  CHECK(one.by_name.at("cudaLaunchKernel") == op_total{1, 2000});
  CHECK(one.by_name.at("ProfilerStep#1") == op_total{1, 100000});
  CHECK(one.by_name.size() == 4);
  const op_totals two = op_totals_of(t, {.iteration = 2, .device = diff_device::gpu});
  REQUIRE(two.by_name.size() == 1);
  CHECK(two.by_name.at("gemm") == op_total{1, 5000});  // no call: its own start
  const op_totals all = op_totals_of(t);
  CHECK(all.by_name.at("aten::mm") == op_total{2, 50000});
  CHECK(all.by_name.at("gemm") == op_total{2, 15000});
  CHECK(all.by_name.count("forward") == 0);  // a GPU annotation is neither side
  const auto rows = compare_totals(one, op_totals_of(t, {.iteration = 2}));
  const auto top = top_regressions(rows, 2);
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
    const auto rows = compare_totals(control, test);
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
