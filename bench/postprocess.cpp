// Post-processing cost on the same synthetic workload (bench/workload.hpp), recorded by 4
// threads: tracemodel's device links + forward/backward links + tree (`analyze`) against a
// faithful port of PyTorch's pointer-based build_tree (tree only) on ready-made Result objects.
// `postprocess/plain/*` times the three plain algorithms that `analyze` fuses
// (link_forward_backward, link_device_activities, build_tree; one thread), for comparison.
// The pattern benchmarks (patterns/one_pass, patterns/per_pattern) run PyTorch's eight
// anti-patterns over the analysed 10M-event table, view construction included.
// Materialization, the analogue of building those Results, is measured on its own
// (postprocess/materialize/*). Peak memory is the high-water mark of resident memory from
// before the inputs were made to the end of the run (reset before each run), inputs included:
// tracemodel's event table, the baseline's Result objects; not the recording memory or the
// arrays materialization freed, which go back to the OS first. Allocators keep freed memory, so
// only the first repetition of a process gives a clean peak: bench/postprocess.sh runs each
// benchmark in its own process for it.
//
// Memory between runs. Both sides keep what their allocator keeps: the baseline's build_tree
// allocates its children vectors from heap memory that the Results' construction and the run
// before freed (glibc keeps it: no page faults in its timed part after the first run), and the
// analysis takes its arrays from the regions that materialization and the run before freed
// (tracemodel's region cache keeps them). Only the first run of `postprocess/tracemodel/*` in a
// process gives the cached arrays back to the OS first, for the clean peak above.
// `postprocess/tracemodel_cold/*` gives them back before every run, so that the analysis
// touches fresh pages in its timed part (about 430 MB at 10M events) while the baseline does
// not: the strictest comparison. On a virtual machine that hands freed pages back to its host
// (free page reporting), a fresh page can cost far more than the work done on it, and how much
// varies from run to run. (Trimming glibc's heap before the baseline's runs is no cold
// counterpart: its allocations then took several times longer in user time, not in faults.)
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include <tracemodel/algo/analyze.hpp>
#include <tracemodel/algo/patterns.hpp>
#include <tracemodel/algo/pytorch_patterns.hpp>
#include <tracemodel/collect.hpp>
#include <tracemodel/memory.hpp>

#include "baseline_results.hpp"
#include "baseline_tree.hpp"
#include "recording.hpp"
#include "workload.hpp"

namespace tmod = tracemodel;

namespace {

constexpr int threads = 4;

using bench::reset_peak;
using bench::status_kb;
using queue_t = bench::queue<false>;

/// Memory between runs of the analysis (see the header comment), and the plain algorithms
/// instead of `analyze` (memory kept); the others ignore it.
enum class memory { kept, cold, plain };

/// Page faults of the process so far (the timed part's: a difference; with huge pages, one
/// fault can stand for 2 MiB).
long page_faults() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_minflt + u.ru_majflt;
}

/// Counters every benchmark here reports: events, seconds per event, peak bytes per event.
void report(benchmark::State& state, std::size_t events, double peak_bytes) {
  state.counters["events"] = static_cast<double>(events);
  state.counters["peak_bytes_per_event"] = peak_bytes / static_cast<double>(events);
  state.counters["ns_per_event"] =
      benchmark::Counter(static_cast<double>(events) * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void record_workload(queue_t& q, std::int64_t events) {
  bench::record_workload(q, events, threads);
}

void postprocess_tracemodel(benchmark::State& state, std::int64_t n, memory m) {
  static bool first_run = true;  // of postprocess/tracemodel/* in this process
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
    // blocks go back to the OS (the baseline has no recording memory either); the arrays
    // materialization freed do for a cold run and for the first run (the peak is then the table
    // and what the analysis adds).
    tmod::event_table t = tmod::materialize(*q);
    q.reset();
    tmod::block_pool::instance().trim();
    if (m == memory::cold || std::exchange(first_run, false)) tmod::release_cached_memory();
    reset_peak();
    const long faults0 = page_faults();
    state.ResumeTiming();
    tmod::analysis a;
    if (m == memory::plain) {
      a.fwd_bwd = tmod::link_forward_backward(t);
      a.device = tmod::link_device_activities(t);
      a.tree = tmod::build_tree(t);
    } else {
      a = tmod::analyze(t);
    }
    benchmark::DoNotOptimize(t.links.data());

    state.PauseTiming();
    peak_bytes = static_cast<double>(status_kb("VmHWM:") - rss0) * 1024.0;
    state.counters["page_faults"] = static_cast<double>(page_faults() - faults0);
    events = t.size();
    state.counters["fwd_bwd_links"] = static_cast<double>(a.fwd_bwd.links);
    state.counters["device_links"] = static_cast<double>(a.device.links());
    state.counters["roots"] = static_cast<double>(a.tree.roots);
    t = {};
    state.ResumeTiming();
  }
  report(state, events, peak_bytes);
}

void postprocess_materialize(benchmark::State& state, std::int64_t n, memory) {
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

void postprocess_baseline(benchmark::State& state, std::int64_t n, memory) {
  std::size_t events = 0;
  double peak_bytes = 0;
  for (auto _ : state) {
    state.PauseTiming();
    const long rss0 = status_kb("VmRSS:");
    std::vector<baseline::result_ptr> all = baseline::workload_results(n, threads);
    reset_peak();
    const long faults0 = page_faults();
    state.ResumeTiming();

    baseline::build_tree(all);
    benchmark::DoNotOptimize(all.data());

    state.PauseTiming();
    peak_bytes = static_cast<double>(status_kb("VmHWM:") - rss0) * 1024.0;
    state.counters["page_faults"] = static_cast<double>(page_faults() - faults0);
    events = all.size();
    // Break the parent/child cycles' strong half before freeing.
    for (auto& r : all) r->children.clear();
    all.clear();
    all.shrink_to_fit();
    state.ResumeTiming();
  }
  report(state, events, peak_bytes);
}

// ---- patterns: PyTorch's eight anti-patterns over the analysed table -------------------------
/// The analysed table of `n` events, made once per process.
const tmod::event_table& analysed_table(std::int64_t n) {
  static std::unique_ptr<tmod::event_table> t;
  static std::int64_t made = 0;
  if (!t || made != n) {
    auto q = std::make_unique<queue_t>();
    record_workload(*q, n);
    t = std::make_unique<tmod::event_table>(tmod::materialize(*q));
    tmod::analyze(*t);
    made = n;
  }
  return *t;
}
/// Every pattern evaluated: shapes, frames and a TF32 device claimed present.
tmod::pattern_context everything() {
  tmod::pattern_context c;
  c.has_shapes = c.has_stack = true;
  c.devices.push_back({0, "bench", 8, 0, false});
  return c;
}

/// Times `find(view, context)` (returning the number of matches) with a fresh view each time.
template <class Find>
void time_patterns(benchmark::State& state, std::int64_t n, Find find) {
  const tmod::event_table& t = analysed_table(n);
  const tmod::pattern_context c = everything();
  std::size_t matches = 0;
  for (auto _ : state) {
    const tmod::tree_view v(t);
    matches = find(v, c);
    benchmark::DoNotOptimize(matches);
  }
  state.counters["matches"] = static_cast<double>(matches);
  report(state, t.size(), 0);
}

/// The tree view and all patterns in one traversal per order.
void patterns_one_pass(benchmark::State& state, std::int64_t n, memory) {
  time_patterns(state, n, [](const tmod::tree_view<>& v, const tmod::pattern_context& c) {
    auto ps = tmod::pytorch_patterns();
    std::size_t matches = 0;
    for (const auto& p : tmod::find_patterns(v, c, ps)) matches += p.matches.size();
    return matches;
  });
}

/// The tree view and one traversal per pattern.
void patterns_per_pattern(benchmark::State& state, std::int64_t n, memory) {
  time_patterns(state, n, [](const tmod::tree_view<>& v, const tmod::pattern_context& c) {
    auto ps = tmod::pytorch_patterns();
    std::size_t matches = 0;
    std::apply(
        [&](auto&... p) {
          ((matches += tmod::find_patterns(v, c, p).front().matches.size()), ...);
        },
        ps);
    return matches;
  });
}

}  // namespace

int main(int argc, char** argv) {
  // A process that has started a thread counts shared_ptr references with atomic instructions
  // from then on (libstdc++ counts them plainly while the process has one thread). PyTorch's
  // process always has threads; the baseline's first runs would otherwise count plainly when
  // they come before the first analysis (7% faster at 10M events), the others not.
  std::thread([] {}).join();
  struct entry {
    const char* name;
    void (*fn)(benchmark::State&, std::int64_t, memory);
    std::int64_t events;
    memory m = memory::kept;
  };
  for (const entry& e :
       {entry{"postprocess/tracemodel/1M", postprocess_tracemodel, 1'000'000},
        entry{"postprocess/tracemodel/10M", postprocess_tracemodel, 10'000'000},
        entry{"postprocess/materialize/200k", postprocess_materialize, 200'000},
        entry{"postprocess/materialize/1M", postprocess_materialize, 1'000'000},
        entry{"postprocess/materialize/10M", postprocess_materialize, 10'000'000},
        entry{"postprocess/baseline/1M", postprocess_baseline, 1'000'000},
        entry{"postprocess/baseline/10M", postprocess_baseline, 10'000'000},
        entry{"postprocess/tracemodel_cold/1M", postprocess_tracemodel, 1'000'000, memory::cold},
        entry{"postprocess/tracemodel_cold/10M", postprocess_tracemodel, 10'000'000, memory::cold},
        entry{"postprocess/plain/1M", postprocess_tracemodel, 1'000'000, memory::plain},
        entry{"postprocess/plain/10M", postprocess_tracemodel, 10'000'000, memory::plain},
        entry{"patterns/one_pass", patterns_one_pass, 10'000'000},
        entry{"patterns/per_pattern", patterns_per_pattern, 10'000'000}})
    benchmark::RegisterBenchmark(e.name, e.fn, e.events, e.m)
        ->Iterations(1)
        ->Unit(benchmark::kMillisecond);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
}
