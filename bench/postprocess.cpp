// Post-processing cost on the same synthetic workload (bench/workload.hpp), recorded by 4
// threads: tracemodel's device links + forward/backward links + tree (`analyze`) against a
// faithful port of PyTorch's pointer-based build_tree (tree only) on ready-made Result objects.
// Materialization, the analogue of building those Results, is measured on its own
// (postprocess/materialize/*). Peak memory is the high-water mark of resident memory from
// before the inputs were made to the end of the run (reset before each run), inputs included:
// tracemodel's event table, the baseline's Result objects. Allocators keep freed memory, so
// only the first repetition of a process gives a clean peak: bench/postprocess.sh runs each
// benchmark in its own process.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <tracemodel/algo/analyze.hpp>
#include <tracemodel/collect.hpp>

#include "baseline_tree.hpp"
#include "workload.hpp"

namespace tmod = tracemodel;

namespace {

constexpr int threads = 4;

// ---- memory ------------------------------------------------------------------------------------
long status_kb(const char* field) {
  std::ifstream f("/proc/self/status");
  std::string line;
  const std::size_t n = std::strlen(field);
  while (std::getline(f, line))
    if (line.compare(0, n, field) == 0) return std::stol(line.substr(n + 1));
  return 0;
}
void reset_peak() {
  std::ofstream f("/proc/self/clear_refs");
  f << "5";
}

/// Counters every benchmark here reports: events, seconds per event, peak bytes per event.
void report(benchmark::State& state, std::size_t events, double peak_bytes) {
  state.counters["events"] = static_cast<double>(events);
  state.counters["peak_bytes_per_event"] = peak_bytes / static_cast<double>(events);
  state.counters["ns_per_event"] = benchmark::Counter(
      static_cast<double>(events) * static_cast<double>(state.iterations()),
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

// ---- tracemodel: record through the public API with a synthetic clock ---------------------------
thread_local tmod::approx_time synthetic_now = 0;
struct synthetic_clock {
  static constexpr bool ticks_are_ns = true;
  static tmod::approx_time now() noexcept { return synthetic_now; }
};
struct bench_policies : tmod::default_record_policies {
  using clock = synthetic_clock;
};
using queue_t = tmod::record_queue<tmod::default_schema, tmod::record_features{}, bench_policies>;

struct queue_sink {
  queue_t& q;
  std::vector<tmod::op_handle> open;
  std::string step;
  std::uint64_t os_tid = tmod::detail::os_thread_id();
  void step_name(std::int64_t i) { step = "ProfilerStep#" + std::to_string(i); }
  void begin(const char* name, std::int64_t seq, std::uint64_t fwd, bool user, bool backward,
             std::int64_t t) {
    synthetic_now = static_cast<tmod::approx_time>(t);
    const bool dynamic = name == nullptr;
    open.push_back(q.begin_op({.name = dynamic ? std::string_view(step) : std::string_view(name),
                               .sequence_number = seq,
                               .fwd_thread_id = fwd,
                               .scope = user ? tmod::op_scope::user_scope
                                        : backward ? tmod::op_scope::backward_function
                                                   : tmod::op_scope::function,
                               .copy_name = dynamic}));
  }
  void end(std::int64_t t) {
    synthetic_now = static_cast<tmod::approx_time>(t);
    q.end_op(open.back());
    open.pop_back();
  }
  void launch(std::int64_t call, std::int64_t call_end, std::uint64_t corr, std::int64_t k0,
              std::int64_t k1) {
    tmod::device_record r{};
    r.start = static_cast<tmod::approx_time>(call);
    r.end = static_cast<tmod::approx_time>(call_end);
    r.name = "cudaLaunchKernel";
    r.name_len = 16;
    r.activity = tmod::activity_type::cuda_runtime;
    r.flow_type = tmod::flow_kind::async_cpu_gpu;
    r.flow_start = true;
    r.flow_id = corr;
    r.correlation_id = corr;
    r.external_id = queue_t::correlation_id(open.back());
    r.host_thread = true;
    r.tid = os_tid;
    r.cbid = 211;
    q.record_device(r);
    r.start = static_cast<tmod::approx_time>(k0);
    r.end = static_cast<tmod::approx_time>(k1);
    r.name = "void gemm_kernel<float>(...)";
    r.name_len = 28;
    r.activity = tmod::activity_type::kernel;
    r.flow_start = false;
    r.host_thread = false;
    r.pid = 0;
    r.tid = 7;
    r.device = 0;
    r.stream = 7;
    r.cbid = 0;
    q.record_device(r);
  }
};

void record_workload(queue_t& q, std::int64_t events) {
  std::vector<std::thread> ts;
  for (int k = 0; k < threads; ++k)
    ts.emplace_back([&q, events, k] {
      queue_sink sink{q, {}, {}};
      workload::generate(sink, events / threads, tmod::current_thread_id(), k, threads);
    });
  for (auto& t : ts) t.join();
}

void postprocess_tracemodel(benchmark::State& state, std::int64_t n) {
  std::size_t events = 0;
  double peak_bytes = 0;
  for (auto _ : state) {
    state.PauseTiming();
    tmod::block_pool::instance().trim();
    const long rss0 = status_kb("VmRSS:");
    auto q = std::make_unique<queue_t>();
    record_workload(*q, n);
    // Materialization is the analogue of PyTorch building its Result objects, which the
    // baseline gets for free: it is timed in postprocess/materialize/* instead. The recording
    // blocks go back to the OS: the baseline has no recording memory either.
    tmod::event_table t = tmod::materialize(*q);
    q.reset();
    tmod::block_pool::instance().trim();
    reset_peak();
    state.ResumeTiming();
    const tmod::analysis a = tmod::analyze(t);
    benchmark::DoNotOptimize(t.links.data());

    state.PauseTiming();
    peak_bytes = static_cast<double>(status_kb("VmHWM:") - rss0) * 1024.0;
    events = t.size();
    state.counters["fwd_bwd_links"] = static_cast<double>(a.fwd_bwd_links);
    state.counters["device_links"] = static_cast<double>(t.links.size() - a.fwd_bwd_links);
    state.counters["roots"] = static_cast<double>(a.tree.roots);
    t = {};
    state.ResumeTiming();
  }
  report(state, events, peak_bytes);
}

void postprocess_materialize(benchmark::State& state, std::int64_t n) {
  std::size_t events = 0;
  for (auto _ : state) {
    state.PauseTiming();
    auto q = std::make_unique<queue_t>();
    record_workload(*q, n);
    state.ResumeTiming();
    tmod::event_table t = tmod::materialize(*q);
    state.PauseTiming();
    events = t.size();
    t = {};
    q.reset();
    state.ResumeTiming();
  }
  report(state, events, 0);
}

// ---- baseline: Result objects built directly from the same workload ----------------------------
struct result_sink {
  std::vector<baseline::result_ptr> out;
  std::vector<baseline::result_ptr> open;
  std::uint64_t tid;
  std::uint64_t next_corr = 1;
  std::string step;
  void step_name(std::int64_t i) { step = "ProfilerStep#" + std::to_string(i); }
  void begin(const char* name, std::int64_t seq, std::uint64_t fwd, bool user, bool backward,
             std::int64_t t) {
    auto r = std::make_shared<baseline::result>();
    r->start_time_ns = t;
    r->start_tid = tid;
    auto& f = r->extra_fields.emplace<baseline::torch_op_fields>();
    f.name = name == nullptr ? step : name;
    f.sequence_number = seq;
    f.forward_tid = fwd;
    f.scope = user ? baseline::record_scope::user_scope
              : backward ? baseline::record_scope::backward_function
                         : baseline::record_scope::function;
    f.correlation_id = next_corr++;
    open.push_back(r);
    out.push_back(std::move(r));
  }
  void end(std::int64_t t) {
    std::get<baseline::torch_op_fields>(open.back()->extra_fields).end_time_ns = t;
    open.pop_back();
  }
  void launch(std::int64_t call, std::int64_t call_end, std::uint64_t corr, std::int64_t k0,
              std::int64_t k1) {
    // As TransferEvents leaves them: the call under its op, the kernel under the call, both
    // finished, so build_tree skips them.
    auto kineto = [this, corr](const char* name, std::int64_t start, std::int64_t end,
                               bool flow_start, const baseline::result_ptr& parent) {
      auto r = std::make_shared<baseline::result>();
      r->start_time_ns = start;
      r->start_tid = tid;
      auto& f = r->extra_fields.emplace<baseline::kineto_fields>();
      f.name = name;
      f.duration_us = (end - start) / 1000;
      f.correlation_id = corr;
      f.flow = {static_cast<std::uint32_t>(corr), 2, flow_start};
      f.linked_activity = parent;
      r->parent = parent;
      parent->children.push_back(r);
      r->finished = true;
      return r;
    };
    auto call_r = kineto("cudaLaunchKernel", call, call_end, true, open.back());
    auto k = kineto("void gemm_kernel<float>(...)", k0, k1, false, call_r);
    out.push_back(std::move(call_r));
    out.push_back(std::move(k));
  }
};

void postprocess_baseline(benchmark::State& state, std::int64_t n) {
  std::size_t events = 0;
  double peak_bytes = 0;
  for (auto _ : state) {
    state.PauseTiming();
    const long rss0 = status_kb("VmRSS:");
    std::vector<baseline::result_ptr> all;
    {
      std::vector<result_sink> sinks(threads);
      for (int k = 0; k < threads; ++k) {
        sinks[static_cast<std::size_t>(k)].tid = static_cast<std::uint64_t>(k + 1);
        workload::generate(sinks[static_cast<std::size_t>(k)], n / threads,
                           static_cast<std::uint64_t>(k + 1), k, threads);
      }
      for (auto& s : sinks)
        for (auto& r : s.out) all.push_back(std::move(r));
    }
    std::stable_sort(all.begin(), all.end(), [](const auto& a, const auto& b) {
      return a->start_time_ns < b->start_time_ns;
    });
    reset_peak();
    state.ResumeTiming();

    baseline::build_tree(all);
    benchmark::DoNotOptimize(all.data());

    state.PauseTiming();
    peak_bytes = static_cast<double>(status_kb("VmHWM:") - rss0) * 1024.0;
    events = all.size();
    // Break the parent/child cycles' strong half before freeing.
    for (auto& r : all) r->children.clear();
    all.clear();
    all.shrink_to_fit();
    state.ResumeTiming();
  }
  report(state, events, peak_bytes);
}

}  // namespace

int main(int argc, char** argv) {
  struct entry {
    const char* name;
    void (*fn)(benchmark::State&, std::int64_t);
    std::int64_t events;
  };
  for (const entry& e : {entry{"postprocess/tracemodel/1M", postprocess_tracemodel, 1'000'000},
                         entry{"postprocess/tracemodel/10M", postprocess_tracemodel, 10'000'000},
                         entry{"postprocess/materialize/1M", postprocess_materialize, 1'000'000},
                         entry{"postprocess/materialize/10M", postprocess_materialize, 10'000'000},
                         entry{"postprocess/baseline/1M", postprocess_baseline, 1'000'000},
                         entry{"postprocess/baseline/10M", postprocess_baseline, 10'000'000}})
    benchmark::RegisterBenchmark(e.name, e.fn, e.events)->Iterations(1)->Unit(benchmark::kMillisecond);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
}
