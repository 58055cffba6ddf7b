// Traces made on a real GPU (an H100): the CUPTI adapter's own example, read back.
#include <doctest/doctest.h>

#include <filesystem>
#include <map>
#include <string>

#include <tracemodel/algo/analyze.hpp>
#include <tracemodel/formats/chrome_trace_reader.hpp>
#include <tracemodel/formats/chrome_trace_writer.hpp>

using namespace tracemodel;
namespace fs = std::filesystem;

namespace {
std::string h100(const char* name) { return (fs::path(TRACEMODEL_TEST_DATA_DIR) / "h100" / name).string(); }
}  // namespace

TEST_SUITE("formats") {
  TEST_CASE("an H100 trace from the CUPTI adapter: every GPU activity under its launch, under its op") {
    // examples/cupti_kernels on an H100 (CUDA 13, driver 580): 3 steps of 6 ops with a memcpy, a
    // memset and 4 kernels, then 2000 empty kernels in ops; its warm-up ran with the queue stopped.
    event_table t = read_chrome_trace_file(h100("cupti_kernels.json.gz"));
    REQUIRE(t.size() == 8082);
    const analysis a = analyze(t);
    CHECK(a.device.unlinked == 0);
    CHECK(a.device.dangling_correlations == 0);
    CHECK(a.device.by_flow == 2018);  // one ac2g flow per launch: 2018 in the file
    std::map<std::string, int> gpu;
    std::size_t host_calls = 0, ops = 0;
    thread_key op_tid = 0;
    for (event_index i = 0; i < t.size(); ++i) {
      const auto& e = t.events[i];
      if (e.is<event_kind::op>()) {
        ++ops;
        op_tid = e.tid;
        continue;
      }
      const auto* d = e.get_if<event_kind::device_activity>();
      REQUIRE(d != nullptr);
      if (d->activity == activity_type::cuda_runtime) {
        ++host_calls;
        CHECK(e.tid == op_tid);  // CUPTI's thread id was mapped to the ops' thread
        continue;
      }
      if (d->activity != activity_type::kernel && d->activity != activity_type::gpu_memcpy &&
          d->activity != activity_type::gpu_memset)
        continue;
      ++gpu[std::string(t.name(i))];
      const event_index launch = e.parent;
      REQUIRE(launch != no_event);
      CHECK(t.events[launch].get<event_kind::device_activity>().activity == activity_type::cuda_runtime);
      CHECK(t.events[launch].get<event_kind::device_activity>().correlation_id == d->correlation_id);
      CHECK(t.events[t.events[launch].parent].is<event_kind::op>());
    }
    CHECK(ops == 2018);
    CHECK(host_calls > 4018);
    // Kernel names demangled as Kineto writes them.
    CHECK(gpu == std::map<std::string, int>{{"(anonymous namespace)::block_sum(float const*, float*, int)", 3},
                                            {"(anonymous namespace)::empty_kernel()", 2000},
                                            {"(anonymous namespace)::saxpy(float const*, float*, float, int)", 3},
                                            {"(anonymous namespace)::scale(float*, float, int)", 3},
                                            {"Memcpy HtoD (Pageable -> Device)", 3},
                                            {"Memset (Device)", 6}});
    // Write, read, write: the same bytes.
    const std::string once = chrome_trace_string(t);
    event_table back = read_chrome_trace_string(once);
    analyze(back);
    CHECK(chrome_trace_string(back) == once);
  }
}
