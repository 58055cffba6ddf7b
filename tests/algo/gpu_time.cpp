// Device time by the exact rules: the intervals, the breakdowns and the per-stream analyses on
// hand-computed traces, against brute force on random intervals and random traces, and the
// report of several ranks (HTA's rules: tests/hta/).
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include <tracemodel/algo/annotation_breakdown.hpp>
#include <tracemodel/algo/comm_comp_overlap.hpp>
#include <tracemodel/algo/device_time.hpp>
#include <tracemodel/algo/idle_time.hpp>
#include <tracemodel/algo/kernel_breakdown.hpp>
#include <tracemodel/algo/kernel_type_breakdown.hpp>
#include <tracemodel/algo/launch_stats.hpp>
#include <tracemodel/algo/queue_length.hpp>
#include <tracemodel/algo/temporal_breakdown.hpp>
#include <tracemodel/formats/chrome_trace_reader.hpp>
#include <tracemodel/formats/gpu_report.hpp>
#include <tracemodel/formats/ranks.hpp>

#include "../support/device_traces.hpp"
#include "../support/json.hpp"

using namespace tracemodel;

namespace {

event_table read_text(std::string text) { return read_chrome_trace(text, text.size()); }

using tmtest::launches_trace;
using tmtest::small_trace;
}  // namespace

TEST_CASE("device intervals: the exact policy takes device work on a stream, classed by kind") {
  const event_table t = read_text(small_trace);
  const auto iv = device_intervals(t);
  REQUIRE(iv.size() == 5);
  std::vector<std::array<std::int64_t, 3>> got;
  for (const auto& d : iv) got.push_back({d.start, d.end, static_cast<std::int64_t>(d.cls)});
  std::sort(got.begin(), got.end());
  using C = kernel_class;
  const std::vector<std::array<std::int64_t, 3>> want{
      {10000, 20000, static_cast<std::int64_t>(C::computation)},
      {15000, 30000, static_cast<std::int64_t>(C::communication)},
      {28000, 35000, static_cast<std::int64_t>(C::memory)},
      {40000, 41500, static_cast<std::int64_t>(C::computation)},
      {50000, 51000, static_cast<std::int64_t>(C::other)}};
  CHECK(got == want);
}

TEST_CASE("temporal breakdown, kernel types and overlap: exact, by hand") {
  const auto iv = device_intervals(read_text(small_trace));
  const temporal_breakdown_row b = temporal_breakdown(iv);
  // Merged: [10, 35) [40, 41.5) [50, 51) us; compute [10, 20) and [40, 41.5).
  CHECK(b.any);
  CHECK(b.kernel_time == 41000);
  CHECK(b.idle == 13500);
  CHECK(b.compute == 11500);
  CHECK(b.non_compute == 16000);
  CHECK(b.idle_pctg == 32.93);
  CHECK(b.compute_pctg == 28.05);
  CHECK(b.non_compute_pctg == 39.02);

  const auto k = kernel_type_breakdown({iv});
  REQUIRE(k.size() == 5);
  CHECK(k[0].kernel_type == "COMMUNICATION");  // [20, 28)
  CHECK(k[0].sum == 8000);
  CHECK(k[0].percentage == 30.2);
  CHECK(k[1].kernel_type == "COMPUTATION");  // [10, 15) and [40, 41.5)
  CHECK(k[1].sum == 6500);
  CHECK(k[2].kernel_type == "COMPUTATION overlapping COMMUNICATION");  // [15, 20)
  CHECK(k[2].sum == 5000);
  CHECK(k[2].percentage == 18.9);
  CHECK(k[3].kernel_type == "MEMORY");  // [30, 35)
  CHECK(k[3].sum == 5000);
  CHECK(k[4].kernel_type == "COMMUNICATION overlapping MEMORY");  // [28, 30)
  CHECK(k[4].sum == 2000);
  CHECK(k[4].percentage == 7.5);

  const std::optional<double> o = comm_comp_overlap(iv);  // 5 of the 15 us of communication
  REQUIRE(o.has_value());
  CHECK(*o == 33.33);
}

TEST_CASE("the classifier names communication kernels: prefixes and substrings, configurable") {
  kernel_classifier c;
  CHECK(c.communication("ncclDevKernel_AllGather"));
  CHECK(c.communication("rcclKernel_x"));
  CHECK(c.communication("void x::ncclKernel_y"));
  CHECK_FALSE(c.communication("gemm"));
  c.prefixes.push_back("my_allreduce");
  CHECK(c.communication("my_allreduce_v2"));
}

TEST_CASE("short kernel names: templates, argument lists and arrows gone, the last word kept") {
  CHECK(short_kernel_name("void at::native::vectorized_elementwise_kernel<4, "
                          "at::native::FillFunctor<float>, at::detail::Array<char*, 1> >(int, "
                          "at::native::FillFunctor<float>, at::detail::Array<char*, 1>)") ==
        "at::native::vectorized_elementwise_kernel");
  CHECK(short_kernel_name("gemm") == "gemm");
  CHECK(short_kernel_name("Memcpy HtoD (Pageable -> Device)") ==
        "Memcpy HtoD (Pageable -> Device)");
  CHECK(short_kernel_name("a->b(int)") == "ab");
}

TEST_CASE("a trace without device work: zeros, no rows, no overlap") {
  const event_table t = read_text(R"({"traceEvents":[
{"ph":"X","cat":"cpu_op","name":"aten::add","pid":1,"tid":1,"ts":0,"dur":5}]})");
  {
    const auto iv = device_intervals(t);
    CHECK(iv.empty());
    const temporal_breakdown_row b = temporal_breakdown(iv);
    CHECK_FALSE(b.any);
    CHECK(b.kernel_time == 0);
    CHECK(kernel_type_breakdown({iv}).empty());
    CHECK_FALSE(comm_comp_overlap(iv).has_value());
  }
}

TEST_CASE("breakdowns against a brute-force sweep over unit cells, on random intervals") {
  std::mt19937 rng(46);
  for (int round = 0; round < 300; ++round) {
    std::vector<device_interval> iv(std::uniform_int_distribution<std::size_t>(1, 12)(rng));
    for (auto& d : iv) {
      d.start = std::uniform_int_distribution<std::int64_t>(0, 60)(rng);
      d.end = d.start + std::uniform_int_distribution<std::int64_t>(0, 12)(rng);
      d.cls = static_cast<kernel_class>(std::uniform_int_distribution<int>(0, 3)(rng));
    }
    std::int64_t lo = iv[0].start, hi = iv[0].end;
    for (const auto& d : iv) lo = std::min(lo, d.start), hi = std::max(hi, d.end);
    std::int64_t busy = 0, compute = 0, comm = 0, both = 0;
    std::array<std::int64_t, 8> sets{};
    for (std::int64_t cell = lo; cell < hi; ++cell) {
      unsigned any = 0, mask = 0;
      for (const auto& d : iv)
        if (d.start <= cell && cell < d.end) {
          any = 1;
          if (d.cls != kernel_class::other) mask |= 1u << static_cast<unsigned>(d.cls);
        }
      busy += any;
      compute += (mask & 1) != 0;
      comm += (mask & 2) != 0;
      both += (mask & 3) == 3;
      ++sets[mask];
    }
    const temporal_breakdown_row b = temporal_breakdown(iv);
    CHECK(b.kernel_time == hi - lo);
    CHECK(b.idle == hi - lo - busy);
    CHECK(b.compute == compute);
    CHECK(b.non_compute == busy - compute);
    const auto t = class_overlap_times(iv);
    for (std::size_t m = 1; m < 8; ++m) CHECK(t[m] == sets[m]);
    const std::optional<double> o = comm_comp_overlap(iv);
    CHECK(o.has_value() == (comm > 0));
    if (o) CHECK(*o == detail::percent_of(both, comm, 2));
  }
}

TEST_CASE(
    "ranks: from distributedInfo, else the file name, else the order, and one rank twice fails") {
  CHECK(rank_in_name("run/trace_rank-3.json") == 3);
  CHECK(rank_in_name("rank12.json.gz") == 12);
  CHECK(rank_in_name("ranks/trace.json") == std::nullopt);  // a folder's name does not count
  CHECK(rank_in_name("frank.json") == std::nullopt);
  const std::string d = tmtest::data_path("kineto/");
  read_options two;
  two.threads = 2;
  const auto both = for_each_rank(
      {d + "trace_filter_sampled_rank-1.json.gz", d + "trace_filter_sampled_rank-0.json.gz"}, two,
      [](std::int64_t rank, event_table& t) {
        CHECK(distributed_rank(t) == rank);
        return t.size();
      });
  REQUIRE(both.size() == 2);
  CHECK(both[0].first == 0);
  CHECK(both[1].first == 1);
  CHECK(both[0].second > 1000);
  // No distributedInfo and no rank in the name: the position in the list.
  const auto by_order = for_each_rank({d + "triton_example_triton_example.json.gz",
                                       d + "amd_trace_mi250_minitoy_train_ROCm6_2_kineto.json.gz"},
                                      {}, [](std::int64_t, event_table&) { return 0; });
  CHECK(by_order[0].first == 0);
  CHECK(by_order[1].first == 1);
  // At most `at_once` calls of the function at a time: the other thread reads meanwhile.
  for (const unsigned at_once : {1u, 2u}) {
    std::atomic<int> inside{0}, most{0};
    const auto capped = for_each_rank(
        {d + "trace_filter_sampled_rank-1.json.gz", d + "trace_filter_sampled_rank-0.json.gz",
         d + "triton_example_triton_example.json.gz",
         d + "amd_trace_mi250_minitoy_train_ROCm6_2_kineto.json.gz"},
        two,
        [&](std::int64_t, event_table& t) {
          const int now = ++inside;
          for (int m = most; m < now && !most.compare_exchange_weak(m, now);) {
          }
          std::this_thread::sleep_for(std::chrono::milliseconds(20));
          --inside;
          return t.size();
        },
        at_once);
    CHECK(capped.size() == 4);
    CHECK(most <= static_cast<int>(at_once));
    if (at_once == 1) CHECK(most == 1);
  }
  // After each rank the array cache keeps about a table, not every analysis's scratch.
  {
    std::size_t largest = 0;
    std::mutex m;
    (void)for_each_rank(
        {d + "trace_filter_sampled_rank-1.json.gz", d + "trace_filter_sampled_rank-0.json.gz",
         d + "triton_example_triton_example.json.gz"},
        two,
        [&](std::int64_t, event_table& t) {
          detail::scratch_vector<std::uint32_t> scratch(std::size_t{8} << 20);  // 32 MiB
          scratch.back() = 1;
          const std::lock_guard lock(m);
          largest = std::max(largest, t.memory_bytes());
          return t.size();
        },
        1);
    CHECK(largest > 0);
    CHECK(memory_usage().regions_cached <= largest);
  }
  // The same rank in two files: an error naming both.
  try {
    (void)for_each_rank(
        {d + "trace_compare_base_base.json.gz", d + "trace_compare_test_test.json.gz"}, {},
        [](std::int64_t, event_table&) { return 0; });
    FAIL("no error");
  } catch (const input_error& e) {
    const std::string what = e.what();
    CHECK(what.find("rank 1 is in two files") != std::string::npos);
    CHECK(what.find("trace_compare_base_base") != std::string::npos);
    CHECK(what.find("trace_compare_test_test") != std::string::npos);
  }
  // A folder: its .json and .json.gz files, by name.
  const std::vector<std::string> files = trace_files({d});
  CHECK(files.size() == 15);
  CHECK(std::is_sorted(files.begin(), files.end()));
  CHECK_THROWS_AS((void)trace_files({d + "no-such-file.json"}), input_error);
}

TEST_CASE("idle time: host wait, kernel wait and other, by hand") {
  std::string text = launches_trace;
  const event_table t = read_chrome_trace(text, text.size());
  // Exact: (device 0, stream 7) and (device 1, stream 7) apart. k2 waits 5 us for k1 (kernel
  // wait), k3 was launched after k2 ended (host wait, 80 us), k4 was launched early but starts
  // 80 us after k3 (other), the memset follows k4 at once and has no launching call (kernel
  // wait, 0); k6 alone on its stream (other, no gap).
  const auto exact = idle_time_breakdown(t);
  REQUIRE(exact.size() == 4);
  CHECK(exact[0].device == 1);  // first met in time
  CHECK(exact[0].category == idle_category::other);
  CHECK(exact[0].idle_time == 0);
  CHECK_FALSE(exact[0].ratio.has_value());
  CHECK(exact[0].stats.count == 0);
  const idle_row& host = exact[1];
  CHECK(host.device == 0);
  CHECK(host.stream == 7);
  CHECK(host.category == idle_category::host_wait);
  CHECK(host.idle_time == 80000);
  CHECK(*host.ratio == doctest::Approx(80.0 / 165));
  const idle_row& wait = exact[2];
  CHECK(wait.category == idle_category::kernel_wait);
  CHECK(wait.idle_time == 5000);
  CHECK(wait.stats.count == 2);
  CHECK(wait.stats.mean == 2500);
  CHECK(wait.stats.std == doctest::Approx(3535.5339));
  CHECK(wait.stats.min == 0);
  CHECK(wait.stats.q25 == 1250);
  CHECK(wait.stats.q50 == 2500);
  CHECK(wait.stats.q75 == 3750);
  CHECK(wait.stats.max == 5000);
  CHECK(exact[3].category == idle_category::other);
  CHECK(exact[3].idle_time == 80000);
  // A threshold of 4 us makes k2's 5 us wait `other`.
  const auto strict = idle_time_breakdown(t, {.threshold = 4000});
  CHECK(strict[2].category == idle_category::kernel_wait);
  CHECK(strict[2].idle_time == 0);
  CHECK(strict[3].idle_time == 85000);
}

TEST_CASE("kernel breakdown: per class and name, exact, with the rest as others") {
  const event_table t = read_text(small_trace);
  const auto rows = kernel_breakdown(t);
  REQUIRE(rows.size() == 3);  // the stream wait (other) is not counted
  CHECK(rows[0].cls == kernel_class::communication);
  CHECK(rows[0].name == "ncclKernel_AllReduce_RING_LL_Sum_float");
  CHECK(rows[0].sum == 15000);
  const kernel_row& gemm = rows[1];
  CHECK(gemm.cls == kernel_class::computation);
  CHECK(gemm.name == "gemm");
  CHECK(gemm.count == 2);
  CHECK(gemm.sum == 11500);
  CHECK(gemm.min == 1500);
  CHECK(gemm.max == 10000);
  CHECK(gemm.mean == 5750);
  CHECK(gemm.std == doctest::Approx(6010.4076));
  CHECK(rows[2].cls == kernel_class::memory);
  CHECK(rows[2].sum == 7000);
  // No name kept: every class is one "others" row of its kernels' durations.
  const auto others = kernel_breakdown(t, {.top = 0});
  REQUIRE(others.size() == 3);
  for (const kernel_row& r : others) CHECK(r.name == "others");
  CHECK(others[1].count == 2);
  CHECK(others[1].std == doctest::Approx(6010.4076));
}

TEST_CASE("launch statistics: each call with its work") {
  std::string text = launches_trace;
  const event_table t = read_chrome_trace(text, text.size());
  const auto rows = launch_stats(t);
  REQUIRE(rows.size() == 4);  // in the order of the calls: correlation 1, 2, 4, 3
  CHECK(rows[0].correlation == 1);
  CHECK(rows[0].cpu_duration == 2000);
  CHECK(rows[0].gpu_duration == 10000);
  CHECK(rows[0].launch_delay == 8000);  // 110 - (100 + 2) us
  CHECK_FALSE(rows[0].short_kernel);
  CHECK(rows[1].correlation == 2);
  CHECK(rows[1].launch_delay == 18000);
  CHECK(rows[2].correlation == 4);
  CHECK(rows[2].launch_delay == 148000);
  CHECK(rows[2].delay_outlier);
  CHECK(rows[2].short_kernel);  // 1 us of work for a 2 us call
  CHECK_FALSE(rows[2].runtime_outlier);
  CHECK(rows[3].correlation == 3);
}

TEST_CASE("queue length, memory bandwidth and annotations: exact, by hand") {
  std::string text = launches_trace;
  const event_table t = read_chrome_trace(text, text.size());
  // Device 0, stream 7: launches at 100, 105, 150, 200 us; starts at 110, 125, 210, 300 (the
  // memset has no call and does not count). Steps: 1, 2, 1, 0, 1, 2, 1, 0.
  const auto q = queue_length(t);
  REQUIRE(q.size() == 1);
  CHECK(q[0].device == 0);
  CHECK(q[0].stream == 7);
  std::vector<std::int64_t> lengths, times;
  for (const queue_step& s : q[0].steps) {
    lengths.push_back(s.length);
    times.push_back(s.ts / 1000);
  }
  CHECK(lengths == std::vector<std::int64_t>{1, 2, 1, 0, 1, 2, 1, 0});
  CHECK(times == std::vector<std::int64_t>{100, 105, 110, 125, 150, 200, 210, 300});
  CHECK(q[0].summary.count == 8);
  CHECK(q[0].summary.mean == 1.0);
  CHECK(q[0].summary.max == 2.0);
  // At or above 2: from 105 to 110 and from 200 to 210 us.
  CHECK(queue_length(t, {.full = 2})[0].time_full == 15000);

  // Copies: 1000 bytes in 1 us and 3000 bytes in 2 us overlapping: 1 GB/s, then 2.5, then 1.5.
  // clang-format off
  std::string copies = R"json({"traceEvents":[
{"ph":"X","cat":"gpu_memcpy","name":"Memcpy HtoD (Pinned -> Device)","pid":0,"tid":7,"ts":10,"dur":1,"args":{"device":0,"stream":7,"bytes":1000}},
{"ph":"X","cat":"gpu_memcpy","name":"Memcpy HtoD (Pinned -> Device)","pid":0,"tid":8,"ts":10.5,"dur":2,"args":{"device":0,"stream":8,"bytes":3000}},
{"ph":"X","cat":"gpu_memset","name":"Memset (Device)","pid":0,"tid":7,"ts":20,"dur":1,"args":{"device":0,"stream":7,"bytes":500}},
{"ph":"X","cat":"gpu_user_annotation","name":"step","pid":0,"tid":7,"ts":9,"dur":4},
{"ph":"X","cat":"gpu_user_annotation","name":"step","pid":0,"tid":7,"ts":19,"dur":2}
]})json";
  // clang-format on
  const event_table c = read_chrome_trace(copies, copies.size());
  const auto bw = memory_bandwidth(c);
  REQUIRE(bw.size() == 2);
  CHECK(bw[0].kind == "Memcpy HtoD");
  std::vector<double> values;
  for (const bandwidth_step& s : bw[0].steps) values.push_back(s.gbps);
  CHECK(values == std::vector<double>{1.0, 2.5, 1.5, 0.0});
  CHECK(bw[0].summary.count == 3);  // the steps above 0
  CHECK(bw[0].summary.max == 2.5);
  CHECK(bw[1].kind == "Memset");
  CHECK(bw[1].summary.mean == 0.5);

  const auto ann = annotation_breakdown(c);
  REQUIRE(ann.size() == 1);
  CHECK(ann[0].name == "step");
  CHECK(ann[0].count == 2);
  CHECK(ann[0].sum == 6000);
  CHECK(ann[0].min == 2000);
  CHECK(ann[0].max == 4000);
  CHECK(annotation_breakdown(c, {.on_gpu = false}).empty());
}

TEST_CASE("across ranks: steps and collectives matched by kind and order, stragglers") {
  CHECK(collective_of_kernel("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*)") ==
        "AllReduce");
  CHECK(collective_of_kernel("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096>)") ==
        "AllGather");
  CHECK(collective_of_kernel("void x::rcclKernel_SendRecv<1>()") == "SendRecv");
  CHECK(collective_of_kernel("gemm").empty());
  // Rank 0 names its collectives through `Collective name` (the kernel name says nothing);
  // rank 1 through the kernel names NCCL 2.19 uses. Both: AllReduce, AllGather, AllReduce.
  // clang-format off
  std::string r0 = R"json({"traceEvents":[
{"ph":"X","cat":"user_annotation","name":"ProfilerStep#7","pid":1,"tid":1,"ts":0,"dur":100},
{"ph":"X","cat":"cpu_op","name":"record_param_comms","pid":1,"tid":1,"ts":1,"dur":1,"args":{"External id":11,"Collective name":"allreduce"}},
{"ph":"X","cat":"cpu_op","name":"record_param_comms","pid":1,"tid":1,"ts":2,"dur":1,"args":{"External id":12,"Collective name":"allgather"}},
{"ph":"X","cat":"cpu_op","name":"record_param_comms","pid":1,"tid":1,"ts":3,"dur":1,"args":{"External id":13,"Collective name":"allreduce"}},
{"ph":"X","cat":"kernel","name":"ncclKernel_x","pid":0,"tid":9,"ts":10,"dur":5,"args":{"stream":9,"External id":11}},
{"ph":"X","cat":"kernel","name":"ncclKernel_x","pid":0,"tid":9,"ts":20,"dur":5,"args":{"stream":9,"External id":12}},
{"ph":"X","cat":"kernel","name":"ncclKernel_x","pid":0,"tid":9,"ts":40,"dur":5,"args":{"stream":9,"External id":13}}
]})json";
  std::string r1 = R"json({"traceEvents":[
{"ph":"X","cat":"user_annotation","name":"ProfilerStep#7","pid":1,"tid":1,"ts":3,"dur":90},
{"ph":"X","cat":"kernel","name":"ncclDevKernel_AllReduce_Sum_f32_RING_LL(x)","pid":0,"tid":9,"ts":12,"dur":3,"args":{"stream":9}},
{"ph":"X","cat":"kernel","name":"ncclDevKernel_AllGather_RING_LL(x)","pid":0,"tid":9,"ts":19,"dur":6,"args":{"stream":9}},
{"ph":"X","cat":"kernel","name":"ncclDevKernel_AllReduce_Sum_f32_RING_LL(x)","pid":0,"tid":9,"ts":44,"dur":1,"args":{"stream":9}}
]})json";
  // clang-format on
  const event_table t0 = read_chrome_trace(r0, r0.size());
  const event_table t1 = read_chrome_trace(r1, r1.size());
  std::vector<std::pair<std::int64_t, rank_timeline>> ranks;
  ranks.emplace_back(0, rank_timeline_of(t0));
  ranks.emplace_back(1, rank_timeline_of(t1));
  REQUIRE(ranks[0].second.collectives.size() == 3);
  CHECK(ranks[0].second.collectives[0].key == "allreduce #0");
  CHECK(ranks[1].second.collectives[0].key == "allreduce #0");  // "AllReduce" in the name
  const rank_spread s = spread_across_ranks(ranks);
  REQUIRE(s.steps.size() == 1);
  CHECK(s.steps[0].key == "ProfilerStep#7");
  CHECK(s.steps[0].start_spread == 3000);
  CHECK(s.steps[0].min_duration == 90000);
  CHECK(s.steps[0].max_duration == 100000);
  CHECK(s.steps[0].last_rank == 1);
  REQUIRE(s.collectives.size() == 3);  // in order of their first start
  CHECK(s.collectives[0].key == "allreduce #0");
  CHECK(s.collectives[0].start_spread == 2000);
  CHECK(s.collectives[0].last_rank == 1);
  CHECK(s.collectives[1].key == "allgather #0");
  CHECK(s.collectives[1].last_rank == 0);  // rank 0 at 20, rank 1 at 19
  CHECK(s.collectives[2].key == "allreduce #1");
  CHECK(s.collectives[2].start_spread == 4000);
  REQUIRE(s.stragglers.size() == 2);
  CHECK(s.stragglers[0].last == 1);
  CHECK(s.stragglers[0].mean_lag == doctest::Approx(1000.0 / 3));  // 0 + 1 + 0 us
  CHECK(s.stragglers[1].last == 2);
  CHECK(s.stragglers[1].mean_lag == doctest::Approx(6000.0 / 3));  // 2 + 0 + 4 us
}

namespace {
// A random trace for the exact analyses' property test: launch calls (runtime and driver) and
// device work (kernels, copies, sets, a stream wait that is not queued work) on two devices and
// two streams each, correlation ids drawn from a small range (so that ids repeat among calls,
// several pieces of work share a call, and some work has no call). Every start is distinct, so
// the table's order is the order of the starts.
struct random_call {
  std::int64_t ts, dur;
  std::uint64_t corr;
};
struct random_work {
  std::int64_t ts, dur;
  std::uint64_t corr;
  int device;
  std::int64_t stream;
  bool queued;
};
struct random_trace {
  std::vector<random_call> calls;  // in start order
  std::vector<random_work> work;   // in start order
  std::string json;
};
random_trace make_random_trace(std::mt19937_64& rng) {
  random_trace r;
  const int n = std::uniform_int_distribution<int>(1, 40)(rng);
  std::vector<std::int64_t> starts(static_cast<std::size_t>(2 * n));
  for (std::size_t k = 0; k < starts.size(); ++k) starts[k] = static_cast<std::int64_t>(k) * 7;
  std::shuffle(starts.begin(), starts.end(), rng);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  const int ids = pick(1, n);
  // Dense ids (the view looks them up in an array) or ids far apart (in a hash map).
  const std::uint64_t spread = pick(0, 1) == 1 ? 1 : 1'000'003;
  r.json = R"({"traceEvents":[)";
  for (int k = 0; k < 2 * n; ++k) {
    const std::int64_t ts = starts[static_cast<std::size_t>(k)];
    const auto corr = static_cast<std::uint64_t>(pick(1, ids + 2)) * spread;
    if (k > 0) r.json += ",";
    if (k % 2 == 0) {
      const random_call c{ts, pick(1, 5), corr};
      r.calls.push_back(c);
      const bool driver = pick(0, 1) == 1;
      r.json += fmt::format(
          R"({{"ph":"X","cat":"{}","name":"{}","pid":1,"tid":1,"ts":{},"dur":{},"args":{{"correlation":{}}}}})",
          driver ? "cuda_driver" : "cuda_runtime", driver ? "cuLaunchKernel" : "cudaLaunchKernel",
          c.ts, c.dur, c.corr);
    } else {
      const int kind = pick(0, 3);
      const random_work w{ts, pick(1, 20), corr, pick(0, 1), 7 + pick(0, 1), kind != 3};
      r.work.push_back(w);
      const char* cat[] = {"kernel", "gpu_memcpy", "gpu_memset", "cuda_sync"};
      const char* name[] = {"gemm", "Memcpy HtoD (Pageable to Device)", "Memset (Device)",
                            "Stream Wait Event"};
      r.json += fmt::format(
          R"({{"ph":"X","cat":"{}","name":"{}","pid":{},"tid":{},"ts":{},"dur":{},"args":{{"device":{},"stream":{},"correlation":{}}}}})",
          cat[kind], name[kind], w.device, w.stream, w.ts, w.dur, w.device, w.stream, w.corr);
    }
  }
  r.json += "]}";
  auto by_ts = [](const auto& a, const auto& b) { return a.ts < b.ts; };
  std::sort(r.calls.begin(), r.calls.end(), by_ts);
  std::sort(r.work.begin(), r.work.end(), by_ts);
  return r;
}
}  // namespace

TEST_CASE("exact launches, idle time and queues against brute force, on random traces") {
  std::mt19937_64 rng(46);
  for (int round = 0; round < 300; ++round) {
    const random_trace r = make_random_trace(rng);
    std::string text = r.json;
    const event_table t = read_chrome_trace(text, text.size());
    CAPTURE(round);
    CAPTURE(r.json);
    // Launches: every (call, queued work) pair of one correlation id, calls then work in order.
    table_vector<launch_row> want;
    for (const random_call& c : r.calls)
      for (const random_work& w : r.work)
        if (w.queued && w.corr == c.corr)
          want.push_back({c.corr, c.dur * 1000, w.dur * 1000, (w.ts - c.ts - c.dur) * 1000});
    const auto rows = launch_stats(t);
    REQUIRE(rows.size() == want.size());
    for (std::size_t k = 0; k < rows.size(); ++k) {
      CHECK(rows[k].correlation == want[k].correlation);
      CHECK(rows[k].cpu_duration == want[k].cpu_duration);
      CHECK(rows[k].gpu_duration == want[k].gpu_duration);
      CHECK(rows[k].launch_delay == want[k].launch_delay);
    }
    // The launching call of a piece of work: the last call of its id.
    auto launched = [&](const random_work& w) -> std::optional<std::int64_t> {
      std::optional<std::int64_t> at;
      for (const random_call& c : r.calls)
        if (c.corr == w.corr) at = c.ts * 1000;
      return at;
    };
    // Idle time per (device, stream) and category: sums and counts.
    std::map<std::tuple<int, std::int64_t, int>, std::pair<std::int64_t, std::uint64_t>> idle;
    std::map<std::pair<int, std::int64_t>, std::vector<const random_work*>> streams;
    for (const random_work& w : r.work)
      if (w.queued) streams[{w.device, w.stream}].push_back(&w);
    for (const auto& [key, ws] : streams) {
      idle[{key.first, key.second, 2}];  // the first work of a stream: `other`, present
      for (std::size_t k = 1; k < ws.size(); ++k) {
        const std::int64_t prev_end = (ws[k - 1]->ts + ws[k - 1]->dur) * 1000;
        const std::int64_t gap = ws[k]->ts * 1000 - prev_end;
        const auto at = launched(*ws[k]);
        const int c = at && *at > prev_end ? 0 : gap < 30'000 ? 1 : 2;
        auto& [sum, count] = idle[{key.first, key.second, c}];
        sum += gap;
        ++count;
      }
    }
    std::map<std::tuple<int, std::int64_t, int>, std::pair<std::int64_t, std::uint64_t>> got;
    for (const idle_row& row : idle_time_breakdown(t))
      got[{row.device, row.stream, static_cast<int>(row.category)}] = {row.idle_time,
                                                                       row.stats.count};
    CHECK(got == idle);
    // Queue length per stream after each instant: calls made so far minus work started.
    std::set<std::pair<int, std::int64_t>> queued;
    for (const random_work& w : r.work)
      if (w.queued && launched(w)) queued.insert({w.device, w.stream});
    const auto queues = queue_length(t);
    CHECK(queues.size() == queued.size());
    for (const stream_queue& q : queues) {
      std::vector<std::int64_t> launches, work_starts;
      for (const random_work& w : r.work)
        if (w.queued && w.device == q.device && w.stream == q.stream)
          if (const auto at = launched(w)) {
            launches.push_back(*at);
            work_starts.push_back(w.ts * 1000);
          }
      CHECK(q.steps.size() == 2 * launches.size());
      for (std::size_t k = 0; k < q.steps.size(); ++k) {
        if (k + 1 < q.steps.size() && q.steps[k + 1].ts == q.steps[k].ts) continue;
        const std::int64_t ts = q.steps[k].ts;
        const auto before = [ts](std::int64_t x) { return x <= ts; };
        CHECK(q.steps[k].length ==
              std::count_if(launches.begin(), launches.end(), before) -
                  std::count_if(work_starts.begin(), work_starts.end(), before));
      }
    }
  }
}

TEST_CASE("describe: the quantiles found by selection equal a sorted copy's, on random series") {
  std::mt19937_64 rng(2026);
  for (int round = 0; round < 2000; ++round) {
    const auto n = std::uniform_int_distribution<std::size_t>(1, 40)(rng);
    const auto range = std::uniform_int_distribution<std::int64_t>(1, 1000)(rng);  // ties
    std::vector<std::int64_t> v(n);
    for (auto& x : v) x = std::uniform_int_distribution<std::int64_t>(-range, range)(rng);
    std::vector<std::int64_t> sorted = v;
    std::sort(sorted.begin(), sorted.end());
    auto q = [&](double p) {  // pandas' linear rule, on the sorted copy
      const double h = p * static_cast<double>(n - 1);
      const auto lo = static_cast<std::size_t>(h);
      const std::size_t hi = std::min(lo + 1, n - 1);
      return static_cast<double>(sorted[lo]) +
             (h - static_cast<double>(lo)) * static_cast<double>(sorted[hi] - sorted[lo]);
    };
    const interval_stats s = describe(v);
    CAPTURE(round);
    CHECK(s.count == n);
    CHECK(s.min == static_cast<double>(sorted.front()));
    CHECK(s.max == static_cast<double>(sorted.back()));
    CHECK(s.q25 == q(0.25));
    CHECK(s.q50 == q(0.5));
    CHECK(s.q75 == q(0.75));
    double sum = 0;
    for (const auto x : v) sum += static_cast<double>(x);
    CHECK(s.mean == doctest::Approx(sum / static_cast<double>(n)));
    CHECK(std::isnan(s.std) == (n == 1));
  }
}

TEST_CASE(
    "make_gpu_report: each rank's results equal the analyses called alone, and without series") {
  const std::string d = tmtest::data_path("kineto/");
  const std::vector<std::string> files = {d + "trace_filter_sampled_rank-0.json.gz",
                                          d + "trace_filter_sampled_rank-1.json.gz"};
  std::mutex m;
  std::map<std::int64_t, gpu_rank> alone;
  gpu_report_options o;
  o.each_rank = [&](std::int64_t rank, event_table& t) {
    gpu_rank g;
    g.temporal = temporal_breakdown(device_intervals(t));
    g.idle = idle_time_breakdown(t);
    g.kernels = kernel_breakdown(t);
    g.launches = launch_stats(t);
    g.queues = queue_length(t);
    g.bandwidth = memory_bandwidth(t);
    g.gpu_annotations = annotation_breakdown(t);
    g.timeline = rank_timeline_of(t);
    const std::lock_guard lock(m);
    alone[rank] = std::move(g);
  };
  const gpu_report r = make_gpu_report(files, o);
  o.each_rank = {};
  o.series = false;
  const gpu_report lean = make_gpu_report(files, o);
  REQUIRE(r.ranks.size() == 2);
  REQUIRE(lean.ranks.size() == 2);
  std::size_t launches = 0, steps = 0;
  for (std::size_t k = 0; k < 2; ++k) {
    const gpu_rank& got = r.ranks[k];
    const gpu_rank& want = alone.at(got.rank);
    CHECK(got.temporal.kernel_time == want.temporal.kernel_time);
    CHECK(got.temporal.idle == want.temporal.idle);
    REQUIRE(got.idle.size() == want.idle.size());
    for (std::size_t i = 0; i < got.idle.size(); ++i) {
      CHECK(got.idle[i].stream == want.idle[i].stream);
      CHECK(got.idle[i].idle_time == want.idle[i].idle_time);
      CHECK(got.idle[i].stats.count == want.idle[i].stats.count);
      CHECK(lean.ranks[k].idle[i].idle_time == want.idle[i].idle_time);
    }
    REQUIRE(got.kernels.size() == want.kernels.size());
    for (std::size_t i = 0; i < got.kernels.size(); ++i) {
      CHECK(got.kernels[i].name == want.kernels[i].name);
      CHECK(got.kernels[i].sum == want.kernels[i].sum);
    }
    REQUIRE(got.launches.size() == want.launches.size());
    for (std::size_t i = 0; i < got.launches.size(); ++i) {
      CHECK(got.launches[i].correlation == want.launches[i].correlation);
      CHECK(got.launches[i].launch_delay == want.launches[i].launch_delay);
    }
    launches += got.launches.size();
    CHECK(lean.ranks[k].launches.capacity() == 0);  // given back, not only emptied
    REQUIRE(got.queues.size() == want.queues.size());
    REQUIRE(lean.ranks[k].queues.size() == want.queues.size());
    for (std::size_t i = 0; i < got.queues.size(); ++i) {
      CHECK(got.queues[i].steps.size() == want.queues[i].steps.size());
      CHECK(got.queues[i].summary.mean == want.queues[i].summary.mean);
      CHECK(lean.ranks[k].queues[i].steps.capacity() == 0);
      CHECK(lean.ranks[k].queues[i].summary.mean == want.queues[i].summary.mean);
      CHECK(lean.ranks[k].queues[i].time_full == want.queues[i].time_full);
      steps += got.queues[i].steps.size();
    }
    CHECK(got.bandwidth.size() == want.bandwidth.size());
    for (const memory_bandwidth_series& series : lean.ranks[k].bandwidth)
      CHECK(series.steps.capacity() == 0);
    CHECK(got.gpu_annotations.size() == want.gpu_annotations.size());
    CHECK(got.timeline.collectives.size() == want.timeline.collectives.size());
  }
  CHECK(launches > 1000);
  CHECK(steps > 1000);
}
