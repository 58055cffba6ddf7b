// Device-time analyses across ranks, on generated Kineto traces shaped like a data-parallel
// training step: per launch a `cpu_op`, its `cudaLaunchKernel` (or `cudaMemcpyAsync`) and the
// kernel or copy it launched (correlation ids, `ac2g`-less), on four streams, NCCL kernels on a
// fifth, `ProfilerStep#N` annotations, times with three decimals (as Kineto writes them).
//   gpu/read/53MB          reading the 53 MB trace alone (the baseline)
//   gpu/report_hta/53MB    make_gpu_report with HTA's rules on it: reading and every analysis
//   gpu/report/53MB        the same with the exact rules
//   gpu/read_ranks/16      reading 16 rank files (TRACEMODEL_BENCH_RANK_EVENTS events each,
//                          default 250,000) in parallel, as `tracemodel stats` would read them
//   gpu/report_ranks/16    every analysis of the 16 ranks (exact)
//   gpu/report_ranks_hta/16  the same with HTA's rules
//   gpu/report_ranks_summaries/16  every analysis (exact) without the series (per-launch rows,
//                          steps over time): what `tracemodel gpu`'s text tables take, and
//                          the working memory without results that grow with the ranks
//   diff/read/1M           reading two traces of a million events each (the baseline)
//   diff/1M                reading them and comparing every step's and every event's totals
//   diff_hta/1M            the same with HTA's rules (file order kept, its frame)
//   critical_path/53MB     the critical path of the whole 53 MB trace (read once, outside)
//   critical_path_hta/53MB the same with HTA's rules (its frame made in the loop)
//   critical_path/53MB_step, critical_path_hta/53MB_step   one step's (ProfilerStep #1), as
//                          HTA's issue figure (about 3 s) is for one step of a trace that size
// The first run of each reports the peak resident memory (MB) beyond what the process held
// before it, the array cache emptied first.
// bench/gpu.sh times `tracemodel gpu --hta --json` as a whole process on the 53 MB trace.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <type_traits>
#include <vector>

#include <tracemodel/algo/critical_path.hpp>
#include <tracemodel/algo/trace_diff.hpp>
#include <tracemodel/formats/chrome_trace_reader.hpp>
#include <tracemodel/formats/gpu_report.hpp>
#include <tracemodel/formats/ranks.hpp>
#include <tracemodel/hta/critical_path.hpp>
#include <tracemodel/hta/read.hpp>
#include <tracemodel/hta/report.hpp>
#include <tracemodel/hta/trace_diff.hpp>
#include <tracemodel/memory.hpp>

#include "recording.hpp"

namespace tmod = tracemodel;

namespace {

/// Writes a generated trace of about `launches` launches (4 events each) for `rank`.
void write_trace(const std::string& path, std::size_t launches, int rank) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  std::fprintf(f,
               "{\"schemaVersion\":1,\"distributedInfo\":{\"backend\":\"nccl\",\"rank\":%d,"
               "\"world_size\":16},\"traceEvents\":[\n",
               rank);
  std::uint64_t ts = 1'700'000'000'000'000;  // ns
  const std::size_t per_step = 2000;
  std::uint64_t corr = 1;
  static const char* kernels[] = {
      "void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>>",
      "ampere_sgemm_128x64_nn", "void cudnn::bn_fw_tr_1C11_kernel_NCHW<float, float, int>",
      "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float>>"};
  bool first = true;
  auto sep = [&] {
    if (!first) std::fputs(",\n", f);
    first = false;
  };
  for (std::size_t k = 0; k < launches; ++k) {
    if (k % per_step == 0) {
      sep();
      std::fprintf(f,
                   "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#%zu\","
                   "\"pid\":1,\"tid\":1,\"ts\":%llu.%03llu,\"dur\":%llu.000}",
                   k / per_step, static_cast<unsigned long long>(ts / 1000),
                   static_cast<unsigned long long>(ts % 1000),
                   static_cast<unsigned long long>(per_step * 12));
    }
    const bool nccl = k % 50 == 49, copy = k % 20 == 7;
    const int stream = nccl ? 24 : 7 + static_cast<int>(k % 4);
    const char* name = nccl   ? "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned "
                                "long, ncclWork*)"
                       : copy ? "Memcpy HtoD (Pinned -> Device)"
                              : kernels[k % 4];
    sep();
    std::fprintf(f,
                 "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::add\",\"pid\":1,\"tid\":1,"
                 "\"ts\":%llu.%03llu,\"dur\":9.500,\"args\":{\"External id\":%llu}}",
                 static_cast<unsigned long long>(ts / 1000),
                 static_cast<unsigned long long>(ts % 1000), static_cast<unsigned long long>(corr));
    sep();
    std::fprintf(f,
                 "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"%s\",\"pid\":1,\"tid\":1,"
                 "\"ts\":%llu.%03llu,\"dur\":4.250,\"args\":{\"External id\":%llu,"
                 "\"correlation\":%llu}}",
                 copy ? "cudaMemcpyAsync" : "cudaLaunchKernel",
                 static_cast<unsigned long long>((ts + 2000) / 1000),
                 static_cast<unsigned long long>((ts + 2000) % 1000),
                 static_cast<unsigned long long>(corr), static_cast<unsigned long long>(corr));
    const std::uint64_t start = ts + 8000 + (k % 7) * 900;
    sep();
    std::fprintf(
        f,
        "{\"ph\":\"X\",\"cat\":\"%s\",\"name\":\"%s\",\"pid\":0,\"tid\":%d,"
        "\"ts\":%llu.%03llu,\"dur\":%llu.%03llu,\"args\":{\"External id\":%llu,"
        "\"device\":0,\"stream\":%d,\"correlation\":%llu%s}}",
        copy ? "gpu_memcpy" : "kernel", name, stream, static_cast<unsigned long long>(start / 1000),
        static_cast<unsigned long long>(start % 1000), static_cast<unsigned long long>(3 + k % 11),
        static_cast<unsigned long long>((k * 37) % 1000), static_cast<unsigned long long>(corr),
        stream, static_cast<unsigned long long>(corr),
        copy ? ",\"bytes\":1048576,\"memory bandwidth (GB/s)\":120.5" : "");
    ts += 12000;
    ++corr;
  }
  std::fputs("\n]}\n", f);
  std::fclose(f);
}

std::string generated(const std::string& name, std::size_t launches, int rank) {
  const std::string p = std::string(TRACEMODEL_BENCH_DIR) + "/" + name;
  if (std::FILE* f = std::fopen(p.c_str(), "rb")) {
    std::fclose(f);
    return p;
  }
  write_trace(p, launches, rank);
  return p;
}

/// About 53 MB: the size of HTA's `df_index_resolver` test trace.
const std::string& trace_53mb() {
  static const std::string p = generated("gpu_trace_53mb.json", 105'000, 0);
  return p;
}

std::size_t rank_events() {
  const char* e = std::getenv("TRACEMODEL_BENCH_RANK_EVENTS");
  return e != nullptr ? std::strtoull(e, nullptr, 10) : 250'000;
}

const std::vector<std::string>& rank_files() {
  static const std::vector<std::string> files = [] {
    std::vector<std::string> v;
    const std::size_t events = rank_events();
    for (int r = 0; r < 16; ++r)
      v.push_back(generated("gpu_rank" + std::to_string(r) + "_" + std::to_string(events) + ".json",
                            events / 4, r));
    return v;
  }();
  return files;
}

/// Runs `work` in the benchmark's loop; the first run in the process reports the peak resident
/// memory it added (MB).
template <class F>
void measured(benchmark::State& state, F work, bool& measured_once) {
  for (auto _ : state) {
    long rss0 = 0;
    const bool measure = !measured_once;
    if (measure) {
      tmod::release_cached_memory();  // from an empty cache, whatever ran before
      bench::reset_peak();
      rss0 = bench::status_kb("VmRSS:");
    }
    work();
    if (measure) {
      measured_once = true;
      state.counters["peak_MB"] = static_cast<double>(bench::status_kb("VmHWM:") - rss0) / 1024.0;
    }
  }
}
/// The same, measuring the first run of each type of `work`.
template <class F>
void measured(benchmark::State& state, F work) {
  static bool measured_once = false;
  measured(state, work, measured_once);
}

void gpu_read(benchmark::State& state) {
  const std::string& p = trace_53mb();
  measured(state, [&] {
    tmod::event_table t = tmod::read_chrome_trace_file(p);
    benchmark::DoNotOptimize(t.size());
  });
}

void gpu_report(benchmark::State& state, bool hta) {
  const std::string& p = trace_53mb();
  measured(state, [&] {
    const std::size_t ranks = hta ? tmod::hta::make_gpu_report({p}).ranks.size()
                                  : tmod::make_gpu_report({p}).ranks.size();
    benchmark::DoNotOptimize(ranks);
  });
}

void gpu_read_ranks(benchmark::State& state) {
  const auto& files = rank_files();
  measured(state, [&] {
    const auto sizes =
        tmod::for_each_rank(files, {}, [](std::int64_t, tmod::event_table& t) { return t.size(); });
    benchmark::DoNotOptimize(sizes.size());
  });
}

void gpu_report_ranks(benchmark::State& state, bool hta, bool series = true) {
  static bool once[2][2] = {};  // each variant's first run is measured
  const auto& files = rank_files();
  measured(
      state,
      [&] {
        tmod::gpu_report_options o;
        o.series = series;
        const std::size_t ranks = hta ? tmod::hta::make_gpu_report(files, o).ranks.size()
                                      : tmod::make_gpu_report(files, o).ranks.size();
        benchmark::DoNotOptimize(ranks);
      },
      once[hta ? 1 : 0][series ? 1 : 0]);
}

/// Two runs of a million events each (ranks 0 and 1 of the generator: one job's two halves).
const std::vector<std::string>& diff_files() {
  static const std::vector<std::string> files = {generated("diff_control_1M.json", 250'000, 0),
                                                 generated("diff_test_1M.json", 250'000, 1)};
  return files;
}

void diff_read(benchmark::State& state) {
  const auto& files = diff_files();
  measured(state, [&] {
    const auto sizes =
        tmod::for_each_rank(files, {}, [](std::int64_t, tmod::event_table& t) { return t.size(); });
    benchmark::DoNotOptimize(sizes.size());
  });
}

/// A side's totals by the exact rules or by HTA's.
tmod::step_totals totals_of(const tmod::event_table& t, bool hta) {
  return hta ? tmod::hta::step_totals_of(tmod::hta::frame(t)) : tmod::step_totals_of(t);
}

void diff(benchmark::State& state, bool hta) {
  const auto& files = diff_files();
  const tmod::read_options o = hta ? tmod::hta::reading() : tmod::read_options{};
  measured(state, [&] {
    const auto sides = tmod::for_each_rank(
        files, o, [hta](std::int64_t, tmod::event_table& t) { return totals_of(t, hta); });
    std::size_t rows = 0;
    for (const auto& [n, x] : sides[0].second.steps) {
      tmod::diff_selection s;
      s.iteration = n;
      rows += tmod::compare_totals(sides[0].second.select(s), sides[1].second.select(s)).size();
    }
    rows += tmod::compare_totals(sides[0].second.select({}), sides[1].second.select({})).size();
    benchmark::DoNotOptimize(rows);
  });
}

void critical_path_53mb(benchmark::State& state, bool hta, bool step) {
  const tmod::event_table t =
      tmod::read_chrome_trace_file(trace_53mb(), hta ? tmod::hta::reading() : tmod::read_options{});
  const std::string annotation = step ? "ProfilerStep" : "";
  const std::size_t instance = step ? 1 : 0;
  for (auto _ : state) {
    const tmod::critical_path cp =
        hta ? tmod::hta::critical_path_of(t, {.annotation = annotation, .instance = instance})
            : tmod::critical_path_of(t, {.annotation = annotation, .instance = instance});
    benchmark::DoNotOptimize(cp.length);
    state.counters["nodes"] = static_cast<double>(cp.nodes.size());
  }
}

}  // namespace

BENCHMARK_CAPTURE(critical_path_53mb, whole, false, false)
    ->Name("critical_path/53MB")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(critical_path_53mb, whole_hta, true, false)
    ->Name("critical_path_hta/53MB")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(critical_path_53mb, step, false, true)
    ->Name("critical_path/53MB_step")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(critical_path_53mb, step_hta, true, true)
    ->Name("critical_path_hta/53MB_step")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(diff_read)->Name("diff/read/1M")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(diff, exact, false)
    ->Name("diff/1M")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(diff, hta, true)
    ->Name("diff_hta/1M")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(gpu_read)->Name("gpu/read/53MB")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(gpu_report, hta, true)
    ->Name("gpu/report_hta/53MB")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(gpu_report, exact, false)
    ->Name("gpu/report/53MB")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(gpu_read_ranks)->Name("gpu/read_ranks/16")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(gpu_report_ranks, exact, false)
    ->Name("gpu/report_ranks/16")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(gpu_report_ranks, summaries, false, false)
    ->Name("gpu/report_ranks_summaries/16")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(gpu_report_ranks, hta, true)
    ->Name("gpu/report_ranks_hta/16")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

BENCHMARK_MAIN();
