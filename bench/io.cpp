// Reading and writing Chrome traces, on a generated trace of about 200 MB (the synthetic
// training workload of bench/workload.hpp with op inputs, written by tracemodel):
//   io/read        the file into an event table with the default options (load, parse on two
//                  threads where the machine has them, sort, bind)
//   io/read_serial the same on one thread (read_options::parallel off)
//   io/read_floor  simdjson alone, iterating every field of every event of the same file
//   io/write       the table back into a file
//   io/write_pftrace  the table into a Perfetto trace (formats/perfetto_writer.hpp)
//   io/read_pftrace   that Perfetto trace into an event table (formats/perfetto_reader.hpp)
//   io/read_pftrace_floor  the protobuf wire format of the same bytes walked (every packet, its
//                  TrackEvent, annotations and interned data, every value touched), nothing built
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
#include <tracemodel/formats/perfetto_reader.hpp>
#include <tracemodel/formats/perfetto_writer.hpp>

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

/// The same trace as a Perfetto trace, made once per build directory and reused.
const std::string& pftrace_path() {
  static const std::string path = [] {
    const std::string p = std::string(TRACEMODEL_BENCH_DIR) + "/io_trace.pftrace";
    if (std::FILE* f = std::fopen(p.c_str(), "rb")) {
      std::fclose(f);
      return p;
    }
    tmod::write_perfetto_trace_file(tmod::read_chrome_trace_file(trace_path()), p);
    return p;
  }();
  return path;
}

void io_write_pftrace(benchmark::State& state) {
  const tmod::event_table t = tmod::read_chrome_trace_file(trace_path());
  const std::string out = std::string(TRACEMODEL_BENCH_DIR) + "/io_trace_out.pftrace";
  for (auto _ : state) tmod::write_perfetto_trace_file(t, out);
  const std::size_t bytes = file_size(out);
  state.counters["events"] = static_cast<double>(t.size());
  state.counters["file_MB"] = static_cast<double>(bytes) / 1e6;
  state.counters["of_json_size"] =
      static_cast<double>(bytes) / static_cast<double>(file_size(trace_path()));
  state.SetBytesProcessed(static_cast<std::int64_t>(bytes) * state.iterations());
  std::remove(out.c_str());
}

void io_read_pftrace(benchmark::State& state) {
  const std::string& p = pftrace_path();
  const std::size_t bytes = file_size(p);
  std::size_t events = 0;
  for (auto _ : state) {
    tmod::event_table t = tmod::read_perfetto_trace_file(p);
    events = t.size();
    state.PauseTiming();
    t = {};
    state.ResumeTiming();
  }
  state.counters["events"] = static_cast<double>(events);
  state.counters["file_MB"] = static_cast<double>(bytes) / 1e6;
  state.SetBytesProcessed(static_cast<std::int64_t>(bytes) * state.iterations());
}

/// Walks a message's fields, and those of the nested messages `nested(field)` names.
template <class Nested>
std::uint64_t walk_message(std::string_view m, Nested&& nested, int depth) {
  namespace pb = tmod::detail::pb;
  pb::decoder d(m, 0);
  pb::field f;
  std::uint64_t sum = 0;
  while (d.next(f)) {
    sum += f.value + f.bytes.size();
    if (f.type == pb::wire::bytes && nested(depth, f.number))
      sum += walk_message(f.bytes, nested, depth + 1);
  }
  return sum;
}

void io_read_pftrace_floor(benchmark::State& state) {
  const tmod::trace_text text = tmod::load_trace_text(pftrace_path());  // loaded once
  const std::string_view bytes(text.data(), text.size());
  // Trace > packet > {track_event > annotations > array values..., interned_data > entries}.
  auto nested = [](int depth, std::uint32_t field) {
    if (depth == 0) return field == 1;                               // Trace.packet
    if (depth == 1) return field == 11 || field == 12;               // TrackEvent, InternedData
    if (depth == 2) return field == 4 || field <= 3 || field == 29;  // annotations, entries
    return field == 12;                                              // array values
  };
  for (auto _ : state) benchmark::DoNotOptimize(walk_message(bytes, nested, 0));
  state.SetBytesProcessed(static_cast<std::int64_t>(bytes.size()) * state.iterations());
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
BENCHMARK(io_write_pftrace)->Name("io/write_pftrace")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(io_read_pftrace)->Name("io/read_pftrace")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(io_read_pftrace_floor)
    ->Name("io/read_pftrace_floor")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(io_stream_write)->Name("io/stream_write")->Unit(benchmark::kMillisecond)->UseRealTime();

BENCHMARK_MAIN();
