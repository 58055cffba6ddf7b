// Reading and writing Chrome traces, on a generated trace of about 200 MB (the synthetic
// training workload of bench/workload.hpp with op inputs, written by tracemodel):
//   io/read        the file into an event table with the default options (load, parse on two
//                  threads where the machine has them, sort, bind)
//   io/read_serial the same on one thread (read_options::parallel off)
//   io/read_floor  simdjson alone, iterating every field of every event of the same file
//   io/write       the table back into a file
//   io/stream_write  parts of the same workload (20 tables of 32,500 ops each, as a drain would
//                  hand them over) streamed into one file that stays loadable after each
// Throughput counters are MB/s of the file. The first run in a process also reports the peak
// resident memory per event of the read, beyond the file's own size (bench/io.sh runs it fresh).
#include <benchmark/benchmark.h>
#include <simdjson.h>

#include <cstdio>
#include <string>
#include <vector>

#include <tracemodel/algo/analyze.hpp>
#include <tracemodel/collect.hpp>
#include <tracemodel/formats/chrome_trace_reader.hpp>
#include <tracemodel/formats/chrome_trace_stream.hpp>
#include <tracemodel/formats/chrome_trace_writer.hpp>

#include "recording.hpp"

namespace tmod = tracemodel;

namespace {

using bench::status_kb;

/// The generated trace, made once per build directory and reused.
const std::string& trace_path() {
  static const std::string path = [] {
    const std::string p = std::string(TRACEMODEL_BENCH_DIR) + "/io_trace.json";
    if (std::FILE* f = std::fopen(p.c_str(), "rb")) {
      std::fclose(f);
      return p;
    }
    bench::queue<true> q;
    bench::record_workload(q, 650'000, 4,
                           "void at::native::vectorized_elementwise_kernel<4, "
                           "at::native::AddFunctor<float>>");
    tmod::event_table t = tmod::materialize(q);
    tmod::analyze(t);
    tmod::write_chrome_trace_file(t, p);
    return p;
  }();
  return path;
}

std::size_t file_size(const std::string& p) {
  std::FILE* f = std::fopen(p.c_str(), "rb");
  std::fseek(f, 0, SEEK_END);
  const long n = std::ftell(f);
  std::fclose(f);
  return static_cast<std::size_t>(n);
}

void io_read(benchmark::State& state, bool parallel) {
  const std::string& p = trace_path();
  tmod::read_options opt;
  opt.threads = parallel ? 2 : 1;
  const std::size_t bytes = file_size(p);
  static bool first = true;
  // The first read's peak, reported by every run of this benchmark in the process: the
  // library runs the function again when one iteration took too short a time, and only the
  // last run's counters are reported.
  static double peak_per_event = -1;
  std::size_t events = 0;
  for (auto _ : state) {
    const bool measure = first;
    long rss0 = 0;
    if (measure) {  // the peak of the first read in this process, from here
      bench::reset_peak();
      rss0 = status_kb("VmRSS:");
    }
    tmod::event_table t = tmod::read_chrome_trace_file(p, opt);
    events = t.size();
    if (measure) {
      first = false;
      const double peak = static_cast<double>(status_kb("VmHWM:") - rss0) * 1024.0;
      peak_per_event = (peak - static_cast<double>(bytes)) / static_cast<double>(events);
    }
    state.PauseTiming();
    t = {};
    state.ResumeTiming();
  }
  if (peak_per_event >= 0) state.counters["peak_bytes_per_event_beyond_file"] = peak_per_event;
  state.counters["events"] = static_cast<double>(events);
  state.counters["file_MB"] = static_cast<double>(bytes) / 1e6;
  state.SetBytesProcessed(static_cast<std::int64_t>(bytes) * state.iterations());
}

/// simdjson alone: iterate every field of every event, touching every value.
void io_read_floor(benchmark::State& state) {
  // Loaded and allocated once per process: the floor is the parse alone, with a warm parser.
  static const simdjson::padded_string json = simdjson::padded_string::load(trace_path());
  static simdjson::ondemand::parser parser;
  std::size_t fields = 0;
  for (auto _ : state) {
    fields = 0;
    simdjson::ondemand::document doc = parser.iterate(json);
    for (auto e : doc["traceEvents"].get_array()) {
      for (auto f : e.get_object()) {
        ++fields;
        simdjson::ondemand::value v = f.value();
        switch (v.type()) {
          case simdjson::ondemand::json_type::object:
            for (auto a : v.get_object()) {
              ++fields;
              benchmark::DoNotOptimize(a.value().raw_json_token());
            }
            break;
          case simdjson::ondemand::json_type::number:
            benchmark::DoNotOptimize(v.get_double().value());
            break;
          case simdjson::ondemand::json_type::string:
            benchmark::DoNotOptimize(v.get_string().value());
            break;
          default:
            benchmark::DoNotOptimize(v.raw_json_token());
            break;
        }
      }
    }
  }
  state.counters["fields"] = static_cast<double>(fields);
  state.SetBytesProcessed(static_cast<std::int64_t>(json.size()) * state.iterations());
}

void io_write(benchmark::State& state) {
  const tmod::event_table t = tmod::read_chrome_trace_file(trace_path());
  const std::string out = std::string(TRACEMODEL_BENCH_DIR) + "/io_trace_out.json";
  for (auto _ : state) tmod::write_chrome_trace_file(t, out);
  state.SetBytesProcessed(static_cast<std::int64_t>(file_size(out)) * state.iterations());
  std::remove(out.c_str());
}

void io_stream_write(benchmark::State& state) {
  std::vector<tmod::event_table> parts;
  for (int k = 0; k < 20; ++k) {
    bench::queue<true> q;
    bench::record_workload(q, 32'500, 4,
                           "void at::native::vectorized_elementwise_kernel<4, "
                           "at::native::AddFunctor<float>>");
    parts.push_back(tmod::materialize(q));
  }
  const std::string out = std::string(TRACEMODEL_BENCH_DIR) + "/io_stream_out.json";
  std::uint64_t bytes = 0;
  for (auto _ : state) {
    tmod::chrome_trace_stream stream(out);
    for (const tmod::event_table& p : parts) stream.write(p);
    bytes = stream.bytes();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(bytes) * state.iterations());
  std::remove(out.c_str());
}

}  // namespace

BENCHMARK_CAPTURE(io_read, defaults, true)
    ->Name("io/read")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(io_read, serial, false)
    ->Name("io/read_serial")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(io_read_floor)->Name("io/read_floor")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(io_write)->Name("io/write")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(io_stream_write)->Name("io/stream_write")->Unit(benchmark::kMillisecond)->UseRealTime();

BENCHMARK_MAIN();
