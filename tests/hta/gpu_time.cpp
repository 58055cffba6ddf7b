// Device time by HTA's rules (hta/): its intervals, classes and microseconds, its idle time,
// kernel breakdown and launches by hand, NumPy's sort order, and HTA's own answers on every real
// trace that has them.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include <tracemodel/algo/comm_comp_overlap.hpp>
#include <tracemodel/algo/kernel_type_breakdown.hpp>
#include <tracemodel/algo/temporal_breakdown.hpp>
#include <tracemodel/formats/chrome_trace_reader.hpp>
#include <tracemodel/hta/device_time.hpp>
#include <tracemodel/hta/frame.hpp>
#include <tracemodel/hta/idle_time.hpp>
#include <tracemodel/hta/kernel_breakdown.hpp>
#include <tracemodel/hta/kernel_class.hpp>
#include <tracemodel/hta/launch_stats.hpp>
#include <tracemodel/hta/numpy.hpp>
#include <tracemodel/hta/report.hpp>

#include "../support/device_traces.hpp"
#include "../support/json.hpp"

using namespace tracemodel;

namespace {

event_table read_text(std::string text) { return read_chrome_trace(text, text.size()); }

using tmtest::launches_trace;
using tmtest::small_trace;
}  // namespace

TEST_CASE("HTA's device intervals: stream != -1, microseconds rounded as pandas does") {
  const event_table t = read_text(small_trace);
  const auto iv = hta::device_intervals(hta::frame(t));
  // The CPU op with `stream: 0` counts as a computation kernel; the 41.5 us end is floored
  // (one start is fractional: every time is rounded).
  REQUIRE(iv.size() == 6);
  const temporal_breakdown_row b = temporal_breakdown(iv);
  CHECK(b.kernel_time == 51);  // [10, 61)
  CHECK(b.idle == 23);
  CHECK(b.compute == 12);
  CHECK(b.non_compute == 16);
  CHECK(b.idle_pctg == 45.1);
  CHECK(b.compute_pctg == 23.53);
  CHECK(b.non_compute_pctg == 31.37);

  // ceil(1.2) = 2, floor(1.2 + 0.5) = 1: a short kernel ends before it starts.
  const event_table r = read_text(R"({"traceEvents":[
{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":1.2,"dur":0.5,"args":{"stream":7}}]})");
  const auto short_one = hta::device_intervals(hta::frame(r));
  REQUIRE(short_one.size() == 1);
  CHECK(short_one[0].start == 2);
  CHECK(short_one[0].end == 1);
  CHECK(temporal_breakdown(short_one).kernel_time == -1);
}

TEST_CASE("HTA's kernel classes, by name") {
  CHECK(hta::kernel_class_of("ncclDevKernel_AllGather") == kernel_class::communication);
  CHECK(hta::kernel_class_of("void x::ncclKernel_y") == kernel_class::communication);
  CHECK(hta::kernel_class_of("hipMemcpyAsync") == kernel_class::communication);  // any hip*
  CHECK(hta::kernel_class_of("Memcpy DtoH (Device -> Pinned)") == kernel_class::memory);
  CHECK(hta::kernel_class_of("Memset (Device)") == kernel_class::memory);
  CHECK(hta::kernel_class_of("dma_transfer") == kernel_class::memory);
  CHECK(hta::kernel_class_of("Stream Wait Event") == kernel_class::other);
  CHECK(hta::kernel_class_of("Context Sync") == kernel_class::other);
  CHECK(hta::kernel_class_of("my_Memcpy_kernel") == kernel_class::other);
  CHECK(hta::kernel_class_of("cudaLaunchKernel") == kernel_class::other);
  CHECK(hta::kernel_class_of("nccldevkernel") == kernel_class::communication);  // starts with nccl
  CHECK(hta::kernel_class_of("NCCLKernel") == kernel_class::computation);       // case-sensitive
  CHECK(hta::kernel_class_of("volta_sgemm_128x64_nn") == kernel_class::computation);
}

namespace {

struct hta_case {
  const char* answers;
  std::vector<const char*> traces;
};

bool failed(simdjson::dom::element doc, const char* analysis) {
  simdjson::dom::element errors;
  if (doc["errors"].get(errors) != simdjson::SUCCESS) return false;
  simdjson::dom::element e;
  return errors[analysis].get(e) == simdjson::SUCCESS;
}

}  // namespace

TEST_CASE("HTA's rules reproduce HTA's rows on real traces: every device-time analysis") {
  const std::vector<hta_case> cases{
      {"alexnet", {"critical_path_alexnet_benchmark_result_2869224_1695835535_trace.json.gz"}},
      {"amd", {"amd_trace_mi250_minitoy_train_ROCm6_2_kineto.json.gz"}},
      {"cpu_only", {"cpu_only_rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz"}},
      {"cuda_event_sync", {"critical_path_cuda_event_sync_event_sync_trace.json.gz"}},
      {"nccl_parser_config", {"nccl_parser_config_nccl_data.json.gz"}},
      {"negative_queue_length", {"negative_queue_length_values_check_rank0.json.gz"}},
      {"simple_add_et_trace", {"execution_trace_benchmark_simple_add_trace.json.gz"}},
      {"trace_compare_base", {"trace_compare_base_base.json.gz"}},
      {"trace_compare_test", {"trace_compare_test_test.json.gz"}},
      {"trace_diff_control", {"trace_diff_control_control.json.gz"}},
      {"trace_filter_2ranks",
       {"trace_filter_sampled_rank-0.json.gz", "trace_filter_sampled_rank-1.json.gz"}},
      {"triton", {"triton_example_triton_example.json.gz"}},
  };
  std::size_t rows = 0, idle_rows = 0, kernel_rows_seen = 0, launches_seen = 0, summaries_seen = 0;
  for (const hta_case& c : cases) {
    CAPTURE(c.answers);
    std::vector<std::string> files;
    for (const char* f : c.traces) files.push_back(tmtest::data_path(std::string("kineto/") + f));
    const hta::gpu_report r = hta::make_gpu_report(files);
    const tmtest::json_doc doc(
        tmtest::data_path(std::string("kineto/hta/") + c.answers + ".hta.json"));
    if (!failed(doc.root, "temporal_breakdown")) {
      simdjson::dom::array want = doc.root["temporal_breakdown"].get_array();
      REQUIRE(want.size() == r.ranks.size());
      std::size_t k = 0;
      for (simdjson::dom::element row : want) {
        CHECK(row["rank"].get_int64().value() == r.ranks[k].rank);
        const temporal_breakdown_row& b = r.ranks[k].temporal;
        CHECK(row["idle_time(us)"].get_double().value() == static_cast<double>(b.idle));
        CHECK(row["compute_time(us)"].get_double().value() == static_cast<double>(b.compute));
        CHECK(row["non_compute_time(us)"].get_double().value() ==
              static_cast<double>(b.non_compute));
        CHECK(row["kernel_time(us)"].get_double().value() == static_cast<double>(b.kernel_time));
        CHECK(row["idle_time_pctg"].get_double().value() == b.idle_pctg);
        CHECK(row["compute_time_pctg"].get_double().value() == b.compute_pctg);
        CHECK(row["non_compute_time_pctg"].get_double().value() == b.non_compute_pctg);
        ++k;
        ++rows;
      }
    }
    if (!failed(doc.root, "kernel_type_breakdown")) {
      std::vector<kernel_type_row> want;  // every row, the zero ones of transients too
      for (simdjson::dom::element row : doc.root["kernel_type_breakdown"].get_array())
        want.push_back({std::string(row["kernel_type"].get_string().value()),
                        row["sum"].get_int64().value(), row["percentage"].get_double().value()});
      REQUIRE(want.size() == r.kernel_types.size());
      for (std::size_t k = 0; k < want.size(); ++k) {
        CHECK(want[k].kernel_type == r.kernel_types[k].kernel_type);
        CHECK(want[k].sum == r.kernel_types[k].sum);
        CHECK(want[k].percentage == r.kernel_types[k].percentage);
        ++rows;
      }
    }
    if (!failed(doc.root, "idle_time_breakdown")) {
      // Rows and statistics by (rank, stream, category): HTA lists streams in file order, the
      // table is in time order.
      std::map<std::tuple<std::int64_t, std::int64_t, std::string>, const idle_row*> got;
      for (const gpu_rank& g : r.ranks)
        for (const idle_row& i : g.idle)
          got[{g.rank, i.stream, std::string(idle_category_names[static_cast<int>(i.category)])}] =
              &i;
      simdjson::dom::array want = doc.root["idle_time_breakdown"].get_array();
      simdjson::dom::array stats = doc.root["idle_interval_stats"].get_array();
      REQUIRE(want.size() == got.size());
      REQUIRE(stats.size() == got.size());
      for (std::size_t k = 0; k < got.size(); ++k) {
        const simdjson::dom::element w = want.at(k), st = stats.at(k);
        const auto it = got.find({w["rank"].get_int64().value(), w["stream"].get_int64().value(),
                                  std::string(w["idle_category"].get_string().value())});
        REQUIRE(it != got.end());
        const idle_row& i = *it->second;
        CAPTURE(k);
        CHECK(st["idle_category"].get_string().value() == w["idle_category"].get_string().value());
        CHECK(w["idle_time"].get_double().value() == static_cast<double>(i.idle_time));
        CHECK(w["idle_time_ratio"].is_null() == !i.ratio.has_value());
        if (i.ratio && !w["idle_time_ratio"].is_null())
          CHECK(w["idle_time_ratio"].get_double().value() == *i.ratio);
        CHECK(st["stream"].get_int64().value() == i.stream);
        CHECK(st["count"].get_double().value() == static_cast<double>(i.stats.count));
        const std::pair<const char*, double> fields[] = {
            {"mean", i.stats.mean}, {"std", i.stats.std}, {"min", i.stats.min},
            {"25%", i.stats.q25},   {"50%", i.stats.q50}, {"75%", i.stats.q75},
            {"max", i.stats.max}};
        for (const auto& field : fields) {
          const char* name = field.first;
          const double v = field.second;
          CAPTURE(name);
          CHECK(st[name].is_null() == std::isnan(v));
          if (!st[name].is_null() && !std::isnan(v)) CHECK(st[name].get_double().value() == v);
        }
        idle_rows += 2;
      }
    }
    if (!failed(doc.root, "kernel_breakdown")) {
      std::map<std::tuple<std::int64_t, std::string, std::string>, const kernel_row*> got;
      for (const gpu_rank& g : r.ranks)
        for (const kernel_row& kr : g.kernels)
          got[{g.rank, std::string(to_string(kr.cls)), kr.name}] = &kr;
      simdjson::dom::array want = doc.root["kernel_breakdown"].get_array();
      REQUIRE(want.size() == got.size());
      for (simdjson::dom::element w : want) {
        const auto it = got.find({w["rank"].get_int64().value(),
                                  std::string(w["kernel_type"].get_string().value()),
                                  std::string(w["name"].get_string().value())});
        REQUIRE(it != got.end());
        const kernel_row& kr = *it->second;
        CHECK(w["sum (us)"].get_double().value() == static_cast<double>(kr.sum));
        CHECK(w["max (us)"].get_double().value() == static_cast<double>(kr.max));
        CHECK(w["min (us)"].get_double().value() == static_cast<double>(kr.min));
        CHECK(w["mean (us)"].get_double().value() == doctest::Approx(kr.mean).epsilon(1e-9));
        CHECK(w["stddev"].get_double().value() == doctest::Approx(kr.std).epsilon(1e-9));
        ++kernel_rows_seen;
      }
    }
    if (!failed(doc.root, "launch_stats")) {
      simdjson::dom::object want = doc.root["launch_stats"].get_object();
      REQUIRE(want.size() == r.ranks.size());
      for (const gpu_rank& g : r.ranks) {
        using launch = std::array<std::int64_t, 4>;
        std::vector<launch> a, b;
        for (const launch_row& l : g.launches)
          a.push_back({static_cast<std::int64_t>(l.correlation), l.cpu_duration, l.gpu_duration,
                       l.launch_delay});
        for (simdjson::dom::element w : want[std::to_string(g.rank)].get_array())
          b.push_back({w["correlation"].get_int64().value(),
                       static_cast<std::int64_t>(w["cpu_duration"].get_double().value()),
                       static_cast<std::int64_t>(w["gpu_duration"].get_double().value()),
                       static_cast<std::int64_t>(w["launch_delay"].get_double().value())});
        std::sort(a.begin(), a.end());
        std::sort(b.begin(), b.end());
        CHECK(a == b);
        launches_seen += b.size();
      }
    }
    {  // queue length, memory bandwidth: summaries per (rank, stream) and (rank, kind), the
       // steps in the order NumPy's sort leaves them (docs/hta-rules.md)
      auto same = [&](simdjson::dom::element w, const char* prefix, const interval_stats& st) {
        const double eps = 1e-9;
        for (const auto& field : describe_fields(st)) {
          const double v = field.second;  // (clang 14 cannot capture a structured binding)
          const std::string key = std::string(prefix) + "/" + std::string(field.first);
          CAPTURE(key);
          const simdjson::dom::element x = w[key];
          CHECK(x.is_null() == std::isnan(v));
          if (!x.is_null() && !std::isnan(v))
            CHECK(x.get_double().value() == doctest::Approx(v).epsilon(eps));
        }
      };
      simdjson::dom::array q;
      if (doc.root["queue_length_summary"].get(q) == simdjson::SUCCESS) {
        std::map<std::pair<std::int64_t, std::int64_t>, const stream_queue*> got;
        for (const gpu_rank& g : r.ranks)
          for (const stream_queue& sq : g.queues) got[{g.rank, sq.stream}] = &sq;
        CHECK(q.size() == got.size());
        for (simdjson::dom::element w : q) {
          const auto it =
              got.find({w["rank"].get_int64().value(), w["stream"].get_int64().value()});
          REQUIRE(it != got.end());
          same(w, "queue_length", it->second->summary);
          ++summaries_seen;
        }
      }
      simdjson::dom::array bw;
      if (doc.root["memory_bw_summary"].get(bw) == simdjson::SUCCESS) {
        std::map<std::pair<std::int64_t, std::string>, const memory_bandwidth_series*> got;
        for (const gpu_rank& g : r.ranks)
          for (const memory_bandwidth_series& m : g.bandwidth) got[{g.rank, m.kind}] = &m;
        CHECK(bw.size() == got.size());
        for (simdjson::dom::element w : bw) {
          const auto it = got.find(
              {w["rank"].get_int64().value(), std::string(w["name"].get_string().value())});
          REQUIRE(it != got.end());
          same(w, "memory_bw_gbps", it->second->summary);
          ++summaries_seen;
        }
      }
      simdjson::dom::array ann;
      bool any = false;
      for (const gpu_rank& g : r.ranks) any = any || g.has_gpu_annotations;
      CHECK(any == (doc.root["gpu_user_annotation_breakdown"].get(ann) == simdjson::SUCCESS));
      if (any) {
        std::map<std::pair<std::int64_t, std::string>, const kernel_row*> got;
        for (const gpu_rank& g : r.ranks)
          for (const kernel_row& a : g.gpu_annotations) got[{g.rank, a.name}] = &a;
        CHECK(ann.size() == got.size());
        for (simdjson::dom::element w : ann) {
          const auto it = got.find(
              {w["rank"].get_int64().value(), std::string(w["name"].get_string().value())});
          REQUIRE(it != got.end());
          CHECK(w["sum (us)"].get_double().value() == static_cast<double>(it->second->sum));
          CHECK(w["max (us)"].get_double().value() == static_cast<double>(it->second->max));
          CHECK(w["min (us)"].get_double().value() == static_cast<double>(it->second->min));
          CHECK(w["mean (us)"].get_double().value() == doctest::Approx(it->second->mean));
          CHECK(w["stddev"].get_double().value() == doctest::Approx(it->second->std));
          ++summaries_seen;
        }
      }
    }
    if (!failed(doc.root, "comm_comp_overlap")) {
      simdjson::dom::array want = doc.root["comm_comp_overlap"].get_array();
      REQUIRE(want.size() == r.ranks.size());
      std::size_t k = 0;
      for (simdjson::dom::element row : want) {
        CHECK(row["rank"].get_int64().value() == r.ranks[k].rank);
        const simdjson::dom::element v = row["comp_comm_overlap_pctg"];
        CHECK(v.is_null() == !r.ranks[k].overlap.has_value());
        if (!v.is_null() && r.ranks[k].overlap)
          CHECK(v.get_double().value() == *r.ranks[k].overlap);
        ++k;
        ++rows;
      }
    }
  }
  CHECK(rows == 60);               // every row HTA answered of these three analyses
  CHECK(idle_rows == 140);         // and of the idle time breakdown and its statistics
  CHECK(kernel_rows_seen == 117);  // and of the per-kernel table
  CHECK(launches_seen == 16903);   // and every launch
}

TEST_CASE("HTA's microseconds: the fast conversion is the correctly rounded one") {
  std::mt19937_64 rng(461);
  for (int k = 0; k < 60000; ++k) {
    // Epoch-sized times and small ones, and values that end in .125, .375, ... (exact halves
    // between two doubles at 2^50 us and beyond).
    std::int64_t ns = static_cast<std::int64_t>(rng() % (std::uint64_t{1} << 61));
    if (k % 3 == 1) ns = static_cast<std::int64_t>(rng() % 10'000'000);
    if (k % 3 == 2) ns = ns / 1000 * 1000 + 125 * static_cast<std::int64_t>(1 + 2 * (rng() % 4));
    if (k % 2 == 1) ns = -ns;
    CAPTURE(ns);
    CHECK(hta::detail::micros_as_python(ns) == hta::detail::micros_from_text(ns));
  }
}

TEST_CASE("numpy_argsort: a permutation that sorts, on random keys with many ties") {
  std::mt19937 rng(4646);
  for (int round = 0; round < 200; ++round) {
    std::vector<std::int64_t> v(std::uniform_int_distribution<std::size_t>(0, 3000)(rng));
    const auto range = std::uniform_int_distribution<std::int64_t>(1, 50)(rng);
    for (auto& x : v) x = std::uniform_int_distribution<std::int64_t>(0, range)(rng);
    if (round % 4 == 0) std::sort(v.begin(), v.end());  // sorted and reversed inputs too
    if (round % 4 == 1) std::sort(v.rbegin(), v.rend());
    const std::vector<std::size_t> p = hta::numpy_argsort(v);
    REQUIRE(p.size() == v.size());
    std::vector<std::size_t> seen(p);
    std::sort(seen.begin(), seen.end());
    bool permutation = true, sorted = true;
    for (std::size_t k = 0; k < seen.size(); ++k) permutation = permutation && seen[k] == k;
    for (std::size_t k = 1; k < p.size(); ++k) sorted = sorted && v[p[k - 1]] <= v[p[k]];
    CHECK(permutation);
    CHECK(sorted);
  }
}

TEST_CASE("numpy_argsort's heapsort fallback: a permutation that sorts, on random keys") {
  std::mt19937_64 rng(7);
  for (int round = 0; round < 500; ++round) {
    const auto n = std::uniform_int_distribution<std::size_t>(1, 60)(rng);
    std::vector<int> keys(n);
    for (int& k : keys) k = std::uniform_int_distribution<int>(0, round % 2 == 0 ? 5 : 1000)(rng);
    std::vector<std::size_t> idx(n);
    for (std::size_t k = 0; k < n; ++k) idx[k] = n - 1 - k;
    hta::detail::numpy_heapsort(idx.data(), static_cast<std::ptrdiff_t>(n),
                                [&](std::size_t a, std::size_t b) { return keys[a] < keys[b]; });
    CAPTURE(round);
    std::vector<std::size_t> sorted = idx;
    std::sort(sorted.begin(), sorted.end());
    for (std::size_t k = 0; k < n; ++k) CHECK(sorted[k] == k);                    // a permutation
    for (std::size_t k = 1; k < n; ++k) CHECK(keys[idx[k - 1]] <= keys[idx[k]]);  // that sorts
  }
}

TEST_CASE("HTA's idle time: one stream across devices, microseconds, rounded") {
  std::string text = launches_trace;
  const event_table t = read_chrome_trace(text, text.size());
  // HTA: one stream 7 across both devices, so k1 waits for the host after k6 (105 us).
  const auto hta = hta::idle_time_breakdown(hta::frame(t));
  REQUIRE(hta.size() == 3);
  CHECK(hta[0].stream == 7);
  CHECK(hta[0].device == -1);
  CHECK(hta[0].category == idle_category::host_wait);
  CHECK(hta[0].idle_time == 185);
  CHECK(*hta[0].ratio == 0.69);  // 185 / 270, rounded as HTA prints it
  CHECK(hta[1].idle_time == 5);
  CHECK(hta[2].idle_time == 80);
  CHECK(hta[2].stats.count == 1);
  CHECK(std::isnan(hta[2].stats.std));
}

TEST_CASE("HTA's kernel breakdown: the names' totals, the Triton op as a kernel") {
  const event_table t = read_text(small_trace);
  // HTA's rule takes the names' totals instead: gemm's 11 us (10, and 1.5 floored to 1) and the
  // Triton CPU op's 1 us that HTA counts as a kernel.
  const auto h = hta::kernel_breakdown(hta::frame(t), {.top = 0});
  REQUIRE(h.size() == 3);
  CHECK(h[1].name == "others");
  CHECK(h[1].count == 2);
  CHECK(h[1].sum == 12);
  CHECK(h[1].min == 1);
  CHECK(h[1].max == 11);
  CHECK(h[1].std == doctest::Approx(7.0711));
}

TEST_CASE("HTA's launch statistics: microseconds") {
  std::string text = launches_trace;
  const event_table t = read_chrome_trace(text, text.size());
  // HTA: the same pairs in microseconds (its names include cudaLaunchKernel).
  const auto hta = hta::launch_stats(hta::frame(t));
  REQUIRE(hta.size() == 4);
  CHECK(hta[2].launch_delay == 148);
  CHECK(hta[2].cpu_duration == 2);
}
