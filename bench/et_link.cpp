// Execution-trace linking on a generated pair: 1M host ops on one thread (nested two deep,
// names cycling through a few dozen), each launching two device ops (a kernel and a memcpy)
// through a runtime call, and the execution trace of the same ops (one node per op, ids in
// start order). `et_link/1M_ops_2M_device` times the whole link in one run: the join by order
// (the trace has no record-function ids), the device-op attachment and writing the enhanced
// execution trace; the analysed host table and the parsed execution trace are inputs. Reported:
// ns per host op and the peak memory the link adds, per host op.
#include <benchmark/benchmark.h>

#include <string>

#include <tracemodel/algo/analyze.hpp>
#include <tracemodel/algo/et_link.hpp>
#include <tracemodel/formats/execution_trace_writer.hpp>

#include "recording.hpp"

namespace tmod = tracemodel;

namespace {

constexpr std::int64_t host_ops = 1'000'000;

struct pair {
  tmod::event_table host;
  tmod::execution_trace_file et;
};

pair make_pair_of_traces() {
  pair p;
  auto& t = p.host;
  t.events.reserve(static_cast<std::size_t>(host_ops) * 4);
  std::vector<tmod::name_id> names;
  for (int k = 0; k < 40; ++k) names.push_back(t.strings.intern("aten::op_" + std::to_string(k)));
  const tmod::name_id launch = t.strings.intern("cudaLaunchKernel");
  const tmod::name_id kernel = t.strings.intern("kernel");
  const tmod::name_id copy = t.strings.intern("Memcpy DtoD");
  std::int64_t ts = 1'000'000'000;
  std::uint64_t corr = 1;
  p.et.schema = "1.0.1";
  p.et.nodes.reserve(static_cast<std::size_t>(host_ops) + 2);
  for (std::int64_t i = 0; i < host_ops; ++i) {
    // Pairs: an outer op with an inner one, so the tree has depth.
    const bool outer = i % 2 == 0;
    const std::int64_t start = outer ? ts : ts + 10;
    const std::int64_t end = outer ? ts + 1000 : ts + 900;
    auto& e = t.events.emplace_back();
    e.start_ns = start;
    e.tid = 1;
    e.pid = 1;
    auto& op = e.fields.emplace<tmod::default_schema::index_of<tmod::event_kind::op>>();
    op.name = names[static_cast<std::size_t>(i % 40)];
    op.end_ns = end;
    op.correlation_id = static_cast<std::uint64_t>(i + 1);
    // Two launches, each with its device op (a kernel, a memcpy).
    for (int d = 0; d < 2; ++d) {
      auto& r = t.events.emplace_back();
      r.start_ns = start + 20 + 100 * d;
      r.tid = 1;
      r.pid = 1;
      auto& rf =
          r.fields.emplace<tmod::default_schema::index_of<tmod::event_kind::device_activity>>();
      rf.name = launch;
      rf.activity = tmod::activity_type::cuda_runtime;
      rf.end_ns = r.start_ns + 50;
      rf.correlation_id = corr;
      rf.external_id = static_cast<std::uint64_t>(i + 1);
      auto& g = t.events.emplace_back();
      g.start_ns = start + 2000;
      g.tid = 7;
      g.pid = 0;
      auto& gf =
          g.fields.emplace<tmod::default_schema::index_of<tmod::event_kind::device_activity>>();
      gf.name = d == 0 ? kernel : copy;
      gf.activity = d == 0 ? tmod::activity_type::kernel : tmod::activity_type::gpu_memcpy;
      gf.end_ns = g.start_ns + 300;
      gf.correlation_id = corr;
      gf.device = 0;
      gf.stream = 7;
      ++corr;
    }
    if (!outer) ts += 2000;
    tmod::et_node n;
    n.id = i + 10;
    n.name = std::string(t.strings.view(op.name));
    n.tid = 1;
    n.parent = outer ? 2 : i + 9;
    p.et.node_json.push_back("{\"name\":\"" + n.name + "\",\"id\":" + std::to_string(n.id) + "}");
    p.et.io_json.emplace_back("\"inputs\":[],\"outputs\":[]");
    p.et.nodes.push_back(std::move(n));
  }
  tmod::analyze(t);
  return p;
}

void et_link(benchmark::State& state) {
  static pair p = make_pair_of_traces();
  std::size_t devices = 0, matched = 0, bytes = 0;
  double peak = 0;
  for (auto _ : state) {
    bench::reset_peak();
    const long rss0 = bench::status_kb("VmRSS:");
    const tmod::et_link_result r = tmod::link_execution_trace(p.et, p.host);
    const std::string out = tmod::enhanced_execution_trace(p.et, p.host, r);
    peak = static_cast<double>(bench::status_kb("VmHWM:") - rss0) * 1024.0;
    devices = r.device_ops.size();
    matched = r.matched;
    bytes = out.size();
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["host_ops"] = static_cast<double>(host_ops);
  state.counters["device_ops_attached"] = static_cast<double>(devices);
  state.counters["matched"] = static_cast<double>(matched);
  state.counters["output_MB"] = static_cast<double>(bytes) / 1e6;
  state.counters["peak_bytes_per_op"] = peak / static_cast<double>(host_ops);
  state.counters["ns_per_op"] =
      benchmark::Counter(static_cast<double>(host_ops) * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

}  // namespace

BENCHMARK(et_link)->Name("et_link/1M_ops_2M_device")->Iterations(1)->Unit(benchmark::kMillisecond);
BENCHMARK_MAIN();
