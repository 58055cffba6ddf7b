// HTA's rules where the order of its sorts decides the numbers (docs/hta-rules.md): NumPy's
// argsort against NumPy's own answers, and traces built so that the order matters, with
// HTA's answers computed from its rules (pandas 1.5 and NumPy 1.24 applying them to the rows):
// the memory bandwidth's residues and returns to zero, the kernel type breakdown's transient
// sets, the queue length's ties, and the critical path's kernel-to-kernel limit. Also: the
// launch join's two paths, and a rank's report on one thread and on two.
#include <doctest/doctest.h>

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <tracemodel/algo/kernel_type_breakdown.hpp>
#include <tracemodel/algo/queue_length.hpp>
#include <tracemodel/formats/chrome_trace_reader.hpp>
#include <tracemodel/hta/critical_path.hpp>
#include <tracemodel/hta/device_time.hpp>
#include <tracemodel/hta/frame.hpp>
#include <tracemodel/hta/kernel_type_breakdown.hpp>
#include <tracemodel/hta/numpy.hpp>
#include <tracemodel/hta/queue_length.hpp>
#include <tracemodel/hta/read.hpp>
#include <tracemodel/hta/report.hpp>
#include <tracemodel/threads.hpp>

#include "../support/json.hpp"

using namespace tracemodel;

namespace {
event_table read_hta(std::string text) {
  return read_chrome_trace(text, text.size(), hta::reading());
}
/// A device row of stream 7 (copies and sets by name).
std::string device_row(const char* cat, const std::string& name, std::int64_t ts, std::int64_t dur,
                       int correlation, const std::string& bw = "") {
  return R"({"ph":"X","cat":")" + std::string(cat) + R"(","name":")" + name +
         R"(","pid":0,"tid":7,"ts":)" + std::to_string(ts) + R"(,"dur":)" + std::to_string(dur) +
         R"(,"args":{"device":0,"stream":7,"correlation":)" + std::to_string(correlation) +
         (bw.empty() ? "" : R"x(,"memory bandwidth (GB/s)":)x" + bw) + "}}";
}
std::string trace_of(const std::vector<std::string>& rows) {
  std::string text = R"({"traceEvents":[)";
  for (std::size_t k = 0; k < rows.size(); ++k) text += (k ? ",\n" : "\n") + rows[k];
  return text + "]}";
}
}  // namespace

TEST_CASE("numpy_argsort: NumPy 1.24's own orders of keys with ties") {
  std::ifstream in(tmtest::data_path("numpy/argsort.txt"));
  REQUIRE(in.good());
  std::string line;
  int cases = 0;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const auto bar = line.find('|');
    REQUIRE(bar != std::string::npos);
    std::istringstream keys_text(line.substr(0, bar)), order_text(line.substr(bar + 1));
    std::vector<std::int64_t> keys;
    std::vector<std::size_t> want;
    for (std::int64_t x = 0; keys_text >> x;) keys.push_back(x);
    for (std::size_t x = 0; order_text >> x;) want.push_back(x);
    CAPTURE(keys.size());
    CHECK(hta::numpy_argsort(keys) == want);
    ++cases;
  }
  CHECK(cases == 68);
}

TEST_CASE("HTA's memory bandwidth: residues of the sums in NumPy's order, returns to zero") {
  // Nine device-to-device copies (two of no duration, counted as 1 us) and four sets; 26
  // changes, so NumPy's introsort partitions them and equal times come out of the order it
  // leaves. HTA's series of the copies: 0.7, 0.0 (back to zero), 0.1, 0.0, 1.1, 4.0, ...,
  // -4.4e-16 (a residue below 0, no sample); of the sets ... 2.8e-17 (a residue above 0, a
  // sample). Summed in the order of a stable sort instead, the copies give 16 samples, not
  // HTA's 15.
  const char* dtod = "Memcpy DtoD (Device -> Device)";
  const char* set = "Memset (Device)";
  struct copy {
    const char* cat;
    const char* name;
    std::int64_t ts, dur;
    const char* bw;
  };
  const std::vector<copy> copies = {
      {"gpu_memcpy", dtod, 8, 6, "0.05"},  {"gpu_memcpy", dtod, 7, 3, "1.1"},
      {"gpu_memcpy", dtod, 9, 1, "0.2"},   {"gpu_memcpy", dtod, 12, 4, "0.7"},
      {"gpu_memcpy", dtod, 10, 4, "0.05"}, {"gpu_memcpy", dtod, 2, 0, "0.7"},
      {"gpu_memcpy", dtod, 4, 1, "0.1"},   {"gpu_memcpy", dtod, 8, 6, "2.9"},
      {"gpu_memcpy", dtod, 10, 0, "1.1"},  {"gpu_memset", set, 7, 4, "0.2"},
      {"gpu_memset", set, 9, 0, "0.1"},    {"gpu_memset", set, 0, 0, "0.2"},
      {"gpu_memset", set, 3, 4, "0.1"}};
  std::vector<std::string> rows;
  int correlation = 1;
  for (const copy& c : copies)
    rows.push_back(device_row(c.cat, c.name, c.ts, c.dur, correlation++, c.bw));
  const event_table t = read_hta(trace_of(rows));
  const auto bw = hta::memory_bandwidth(hta::frame(t));
  REQUIRE(bw.size() == 2);
  CHECK(bw[0].kind == "Memcpy DtoD");
  CHECK(bw[1].kind == "Memset");
  // HTA's series, step by step (times in us)
  const std::vector<double> copies_series = {0.7,
                                             0.0,
                                             0.1,
                                             0.0,
                                             1.1,
                                             4.0,
                                             4.05,
                                             4.25,
                                             3.15,
                                             2.9499999999999997,
                                             4.05,
                                             4.1,
                                             2.9999999999999996,
                                             3.6999999999999993,
                                             3.6499999999999995,
                                             0.7499999999999996,
                                             0.6999999999999995,
                                             -4.440892098500626e-16};
  const std::vector<std::int64_t> copies_times = {2,  3,  4,  5,  7,  8,  8,  9,  10,
                                                  10, 10, 10, 11, 12, 14, 14, 14, 16};
  REQUIRE(bw[0].steps.size() == copies_series.size());
  for (std::size_t k = 0; k < copies_series.size(); ++k) {
    CAPTURE(k);
    CHECK(bw[0].steps[k].gbps == copies_series[k]);
    CHECK(bw[0].steps[k].ts == copies_times[k]);
  }
  const interval_stats& c = bw[0].summary;
  CHECK(c.count == 15);
  CHECK(c.mean == doctest::Approx(2.683333333333334).epsilon(1e-15));
  CHECK(c.std == doctest::Approx(1.5370038882126982).epsilon(1e-14));
  CHECK(c.min == 0.1);
  CHECK(c.q25 == doctest::Approx(0.9249999999999998).epsilon(1e-15));
  CHECK(c.q50 == 3.15);
  CHECK(c.q75 == doctest::Approx(4.025).epsilon(1e-15));
  CHECK(c.max == 4.25);
  const interval_stats& s = bw[1].summary;
  CHECK(s.count == 7);
  CHECK(s.min == 2.7755575615628914e-17);
  CHECK(s.mean == doctest::Approx(0.18571428571428572).epsilon(1e-15));
  CHECK(s.max == 0.30000000000000004);
}

TEST_CASE("HTA's kernel type breakdown: sets passed through at a shared time are rows of 0") {
  // A copy [0, 10) and a kernel [10, 20): HTA's sweep adds the kernel's end after the copy's
  // start, so at 10 it passes through COMPUTATION overlapping MEMORY for no time. The exact
  // breakdown has no such row.
  const std::string one =
      trace_of({device_row("gpu_memcpy", "Memcpy HtoD (Pageable to Device)", 0, 10, 1, "1"),
                device_row("kernel", "gemm", 10, 10, 2)});
  const event_table t = read_hta(one);
  const auto iv = hta::device_intervals(hta::frame(t));
  const auto rows = hta::kernel_type_rows(hta::class_sets_of(iv));
  REQUIRE(rows.size() == 3);
  CHECK(rows[0].kernel_type == "COMPUTATION");
  CHECK(rows[0].sum == 10);
  CHECK(rows[0].percentage == 50.0);
  CHECK(rows[1].kernel_type == "MEMORY");
  CHECK(rows[1].sum == 10);
  CHECK(rows[2].kernel_type == "COMPUTATION overlapping MEMORY");
  CHECK(rows[2].sum == 0);
  CHECK(rows[2].percentage == 0.0);
  CHECK(kernel_type_breakdown({std::span<const device_interval>(iv)}).size() == 2);

  // A communication kernel [5, 10) beside them: two transients at 10, largest first, the
  // zero rows in the order pandas' descending sort leaves them.
  const std::string two =
      trace_of({device_row("gpu_memcpy", "Memcpy HtoD (Pageable to Device)", 0, 10, 1, "1"),
                device_row("kernel", "gemm", 10, 10, 2),
                device_row("kernel", "ncclKernel_AllReduce_RING_LL_Sum_float", 5, 5, 3)});
  const event_table t2 = read_hta(two);
  const auto rows2 =
      hta::kernel_type_rows(hta::class_sets_of(hta::device_intervals(hta::frame(t2))));
  const std::vector<std::pair<std::string, std::int64_t>> want = {
      {"COMPUTATION", 10},
      {"COMMUNICATION overlapping MEMORY", 5},
      {"MEMORY", 5},
      {"COMPUTATION overlapping COMMUNICATION overlapping MEMORY", 0},
      {"COMPUTATION overlapping MEMORY", 0}};
  REQUIRE(rows2.size() == want.size());
  for (std::size_t k = 0; k < want.size(); ++k) {
    CHECK(rows2[k].kernel_type == want[k].first);
    CHECK(rows2[k].sum == want[k].second);
  }
  CHECK(rows2[1].percentage == 25.0);
}

TEST_CASE("HTA's queue length: ties in the order NumPy's sort leaves them") {
  // Nine launches and their kernels on stream 7 with many equal times; 18 changes, partitioned
  // by NumPy's introsort. HTA's series: 1 2 1 0 1 2 1 0 1 0 1 2 3 4 3 2 1 0 (mean 25/18); a
  // stable sort gives another (mean 31/18).
  const std::vector<std::int64_t> calls = {9, 8, 2, 5, 9, 7, 10, 9, 1};
  const std::vector<std::int64_t> kernels = {13, 8, 5, 7, 13, 8, 11, 12, 5};
  std::vector<std::string> rows;
  for (std::size_t k = 0; k < calls.size(); ++k)
    rows.push_back(
        R"({"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":)" +
        std::to_string(calls[k]) + R"(,"dur":1,"args":{"correlation":)" + std::to_string(k + 1) +
        "}}");
  for (std::size_t k = 0; k < kernels.size(); ++k)
    rows.push_back(device_row("kernel", "k", kernels[k], 1, static_cast<int>(k + 1)));
  const event_table t = read_hta(trace_of(rows));
  const auto q = hta::queue_length(hta::frame(t));
  REQUIRE(q.size() == 1);
  std::vector<std::int64_t> lengths;
  for (const queue_step& s : q[0].steps) lengths.push_back(s.length);
  CHECK(lengths == std::vector<std::int64_t>{1, 2, 1, 0, 1, 2, 1, 0, 1, 0, 1, 2, 3, 4, 3, 2, 1, 0});
  CHECK(q[0].summary.count == 18);
  CHECK(q[0].summary.mean == 1.3888888888888888);
  CHECK(q[0].summary.std == doctest::Approx(1.1447521637192346).epsilon(1e-15));
  CHECK(q[0].summary.q75 == 2.0);
  CHECK(q[0].summary.max == 4.0);
}

TEST_CASE("HTA's critical path: a kernel-to-kernel gap under the limit is an edge, at it none") {
  // Two launches 1 us apart; k1 runs [10, 20) and k2 starts `gap` us after k1's end. k2's call
  // found k1 queued (queue 2): no launch delay, so the delay from k1 is kernel to kernel when
  // the gap is under 1,500 us, and no edge at 1,500 (k2 keeps only its zero-weight launch edge).
  for (const std::int64_t gap : {1499, 1500}) {
    CAPTURE(gap);
    const std::string text = trace_of(
        {R"({"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":0,"dur":1,"args":{"correlation":1}})",
         R"({"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":2,"dur":1,"args":{"correlation":2}})",
         device_row("kernel", "k1", 10, 10, 1), device_row("kernel", "k2", 20 + gap, 5, 2)});
    const event_table t = read_hta(text);
    const critical_path cp = hta::critical_path_of(t);
    int kernel_kernel = 0;
    for (const cp_edge& e : cp.edges) {
      if (e.type != cp_edge_type::kernel_kernel_delay) continue;
      ++kernel_kernel;
      CHECK(e.weight == gap * 1000);
    }
    CHECK(kernel_kernel == (gap < 1500 ? 1 : 0));
    CHECK(hta::critical_path_of(t, {.kernel_kernel_threshold_us = 0}).edges.size() ==
          cp.edges.size() + (gap < 1500 ? 0 : 1));
  }
}

TEST_CASE("HTA's launch statistics: small ids bucketed and large ones searched give one join") {
  // Calls joined with every device row of their correlation id, in the frame's order: a call
  // with two kernels, one with none, kernels without a call. The same trace with ids of 2^40
  // and more (searched, not bucketed) gives the same rows.
  auto trace = [](std::int64_t scale) {
    std::vector<std::string> rows;
    const std::vector<std::pair<std::int64_t, std::int64_t>> calls = {
        {3, 0}, {1, 10}, {7, 20}, {2, 30}};
    for (const auto& [id, ts] : calls)
      rows.push_back(
          R"({"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":)" +
          std::to_string(ts) + R"(,"dur":4,"args":{"correlation":)" + std::to_string(id * scale) +
          "}}");
    const std::vector<std::pair<std::int64_t, std::int64_t>> kernels = {
        {1, 15}, {3, 8}, {9, 40}, {3, 50}, {2, 60}};
    int k = 0;
    for (const auto& [id, ts] : kernels)
      rows.push_back(R"({"ph":"X","cat":"kernel","name":"k)" + std::to_string(k++) +
                     R"(","pid":0,"tid":7,"ts":)" + std::to_string(ts) +
                     R"(,"dur":2,"args":{"device":0,"stream":7,"correlation":)" +
                     std::to_string(id * scale) + "}}");
    return trace_of(rows);
  };
  const auto small = hta::launch_stats(hta::frame(read_hta(trace(1))));
  const auto large = hta::launch_stats(hta::frame(read_hta(trace(std::int64_t{1} << 40))));
  // Calls in frame order: 3 (its kernels at 8 and 50), 1 (15), 7 (none), 2 (60).
  const std::vector<std::pair<std::uint64_t, std::int64_t>> want = {
      {3, 4}, {3, 46}, {1, 1}, {2, 26}};
  REQUIRE(small.size() == want.size());
  REQUIRE(large.size() == want.size());
  for (std::size_t k = 0; k < want.size(); ++k) {
    CAPTURE(k);
    CHECK(small[k].correlation == want[k].first);
    CHECK(small[k].launch_delay == want[k].second);
    CHECK(large[k].correlation == want[k].first << 40);
    CHECK(large[k].launch_delay == small[k].launch_delay);
    CHECK(large[k].cpu_duration == small[k].cpu_duration);
    CHECK(large[k].gpu_duration == small[k].gpu_duration);
  }
}

TEST_CASE("HTA's report of a rank: its analyses on two threads give what one thread gives") {
  for (const char* file : {"kineto/negative_queue_length_values_check_rank0.json.gz",
                           "kineto/nccl_parser_config_nccl_data.json.gz"}) {
    CAPTURE(file);
    const event_table t = hta::read_trace_file(tmtest::data_path(file));
    const hta::frame f(t, true);
    const gpu_rank one = hta::gpu_rank_of(t, f, true, thread_options{1, {}});
    const gpu_rank two = hta::gpu_rank_of(t, f, true, thread_options{2, {}});
    REQUIRE(one.queues.size() == two.queues.size());
    REQUIRE(!one.queues.empty());
    for (std::size_t k = 0; k < one.queues.size(); ++k) {
      CHECK(one.queues[k].stream == two.queues[k].stream);
      CHECK(one.queues[k].steps.size() == two.queues[k].steps.size());
      CHECK(one.queues[k].summary.mean == two.queues[k].summary.mean);
    }
    REQUIRE(one.bandwidth.size() == two.bandwidth.size());
    for (std::size_t k = 0; k < one.bandwidth.size(); ++k) {
      CHECK(one.bandwidth[k].kind == two.bandwidth[k].kind);
      CHECK(one.bandwidth[k].summary.count == two.bandwidth[k].summary.count);
      CHECK(one.bandwidth[k].summary.mean == two.bandwidth[k].summary.mean);
    }
    REQUIRE(one.launches.size() == two.launches.size());
    CHECK(!one.launches.empty());
    for (std::size_t k = 0; k < one.launches.size(); ++k) {
      CHECK(one.launches[k].correlation == two.launches[k].correlation);
      CHECK(one.launches[k].launch_delay == two.launches[k].launch_delay);
    }
    REQUIRE(one.idle.size() == two.idle.size());
    for (std::size_t k = 0; k < one.idle.size(); ++k)
      CHECK(one.idle[k].idle_time == two.idle[k].idle_time);
    REQUIRE(one.kernels.size() == two.kernels.size());
    for (std::size_t k = 0; k < one.kernels.size(); ++k) {
      CHECK(one.kernels[k].name == two.kernels[k].name);
      CHECK(one.kernels[k].sum == two.kernels[k].sum);
    }
    CHECK(one.gpu_annotations.size() == two.gpu_annotations.size());
    CHECK(one.has_gpu_annotations == two.has_gpu_annotations);
    CHECK(one.temporal.idle == two.temporal.idle);
    CHECK(one.temporal.compute == two.temporal.compute);
    CHECK(one.class_sets == two.class_sets);
    CHECK(one.class_sets_seen == two.class_sets_seen);
    CHECK(one.timeline.steps.size() == two.timeline.steps.size());
    CHECK(one.timeline.collectives.size() == two.timeline.collectives.size());
  }
}
