// Trace diff by HTA's rules: HTA's own expectations on trace_compare base/test
// (docs/hta-rules.md, "Trace diff").
#include <doctest/doctest.h>

#include <map>
#include <string>
#include <vector>

#include <tracemodel/hta/read.hpp>
#include <tracemodel/hta/trace_diff.hpp>

#include "../support/json.hpp"

using namespace tracemodel;

namespace {
event_table read_hta_side(const char* file) {
  return hta::read_trace_file(tmtest::data_path(std::string("kineto/") + file));
}
std::map<char, int> categories(const row_list<diff_row>& rows) {
  std::map<char, int> n;
  for (const diff_row& r : rows) ++n[r.change];
  return n;
}
}  // namespace

TEST_CASE("HTA's trace diff: trace_compare base against test, rank 1, iteration 1010") {
  const event_table base = read_hta_side("trace_compare_base_base.json.gz");
  const event_table test = read_hta_side("trace_compare_test_test.json.gz");
  CHECK(hta::trace_steps(hta::frame(base)) == std::vector<std::int64_t>{1009, 1010});
  CHECK(hta::trace_steps(hta::frame(test)) == std::vector<std::int64_t>{1009, 1010});
  diff_selection cpu{.iteration = 1010, .device = diff_device::cpu};
  const op_totals base_cpu = hta::op_totals_of(base, cpu);
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
  CHECK(hta::op_totals_of(base, gpu).by_name.size() == 1);  // one kernel
  // Compared with short names: CPU {=: 5, +: 3, -: 1}, GPU {-: 1}.
  cpu.short_names = gpu.short_names = true;
  const auto cpu_rows = compare_totals(hta::op_totals_of(base, cpu), hta::op_totals_of(test, cpu));
  CHECK(categories(cpu_rows) == std::map<char, int>{{'+', 3}, {'-', 1}, {'=', 5}});
  const auto gpu_rows = compare_totals(hta::op_totals_of(base, gpu), hta::op_totals_of(test, gpu));
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

TEST_CASE("HTA's short names are the short kernel names") {
  CHECK(short_kernel_name(
            "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::"
            "(anonymous namespace)::TensorListMetadata<3>, float>(int, float)") ==
        "at::native::::multi_tensor_apply_kernel");
  CHECK(short_kernel_name("aten::add") == "aten::add");
  CHECK(short_kernel_name("Memcpy HtoD (Pageable -> Device)") ==
        "Memcpy HtoD (Pageable -> Device)");
  CHECK(short_kernel_name("autograd::engine::evaluate_function: AddmmBackward0") ==
        "autograd::engine::evaluate_function: AddmmBackward0");  // no '<' or '(': as it is
  CHECK(short_kernel_name("void f<a->b>(x)") == "f");
  CHECK(short_kernel_name("std::vector<int> (anonymous)") == "std::vector");  // trailing space
  // As HTA keeps the names of its memory class: copies and sets by name, not hip*'s.
  CHECK(short_kernel_name("hipMemcpyAsync(x)") == "hipMemcpyAsync");
  CHECK(short_kernel_name("dma_copy<1>(x)") == "dma_copy<1>(x)");
}
