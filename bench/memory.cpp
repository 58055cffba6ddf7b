// Where the memory goes, at scale: the memory timeline (storages, the data-flow graph, the
// categories, the records, the samples, the peak and its live blocks) of 10 million allocation
// events, and its memory beside the table's.
//
// The table: 2.5 million ops of a training loop's shape on one thread, each with two tensor
// inputs (the last op's output and a parameter), an output allocated in it and a workspace
// allocated and freed in it; the output of two ops back is freed after each op. Forward ops,
// then as many backward ops (an accumulation into each parameter's gradient every 64 ops), then
// an in-place update of each parameter.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <vector>

#include <tracemodel/algo/memory_timeline.hpp>
#include <tracemodel/algo/tree.hpp>
#include <tracemodel/model/table.hpp>

#include "recording.hpp"

namespace {

namespace tmod = tracemodel;

constexpr std::size_t ops = 2'500'000;
constexpr std::uint64_t parameters = 64;

struct built {
  tmod::event_table table;
  double table_bytes = 0;
  std::size_t allocations = 0;
};

built make_table() {
  built b;
  const long rss0 = bench::status_kb("VmRSS:");
  tmod::event_table& t = b.table;
  t.events.reserve(ops * 5 + parameters * 2);
  const tmod::name_id fwd = t.strings.intern("aten::mm"), bwd = t.strings.intern("MmBackward0"),
                      add = t.strings.intern("aten::add_"), dtype = t.strings.intern("float");
  std::int64_t now = 0;
  auto allocation = [&](std::uint64_t ptr, std::int64_t bytes) {
    auto& e = t.events.emplace_back();
    e.start_ns = now++;
    e.tid = 1;
    e.pid = 1;
    auto& f = e.fields.emplace<tmod::default_schema::index_of<tmod::event_kind::allocation>>();
    f.ptr = ptr;
    f.alloc_size = bytes;
    f.total_allocated = 1;
    ++b.allocations;
  };
  auto tensor = [&](std::uint64_t impl, std::uint64_t storage) {
    tmod::input_value v;
    v.kind = tmod::input_kind::tensor;
    v.impl = impl;
    v.storage = storage;
    v.rank = 1;
    v.dims = static_cast<std::uint32_t>(t.ints.size());
    v.dtype = dtype;
    t.ints.push_back(256);
    t.inputs.push_back(v);
  };
  auto op = [&](tmod::name_id name, tmod::op_scope scope, std::uint64_t in_impl,
                std::uint64_t in_storage, std::uint64_t param, bool allocates) {
    const std::size_t at = t.events.size();
    auto& e = t.events.emplace_back();
    e.start_ns = now++;
    e.tid = 1;
    e.pid = 1;
    auto& f = e.fields.emplace<tmod::default_schema::index_of<tmod::event_kind::op>>();
    f.name = name;
    f.scope = scope;
    f.inputs.first = static_cast<std::uint32_t>(t.inputs.size());
    f.inputs.size = 2;
    tensor(in_impl, in_storage);
    tensor(0x9000'0000 + param, 0xA000'0000 + param * 4096);
    if (allocates) {
      allocation(0x1000'0000 + now, 1024);                  // the output
      allocation(0x5000'0000 + (now & 1023), 4096);         // a workspace ...
      allocation(0x5000'0000 + ((now - 1) & 1023), -4096);  // ... freed in the op
    }
    t.events[at].get<tmod::event_kind::op>().end_ns = now++;
  };
  std::uint64_t last = 0, before = 0;
  for (std::size_t k = 0; k < ops; ++k) {
    const bool backward = k >= ops / 2;
    const std::uint64_t param = k % parameters;
    op(backward ? bwd : fwd,
       backward ? tmod::op_scope::backward_function : tmod::op_scope::function,
       0x2000'0000 + (last & 0xffff), last, param, true);
    const std::uint64_t out = 0x1000'0000 + static_cast<std::uint64_t>(now - 4);
    if (before != 0) allocation(before, -1024);  // the output of two ops back
    before = last;
    last = out;
  }
  for (std::uint64_t p = 0; p < parameters; ++p)
    op(add, tmod::op_scope::function, 0x9000'0000 + p, 0xA000'0000 + p * 4096, p, false);
  b.table_bytes = static_cast<double>(bench::status_kb("VmRSS:") - rss0) * 1024.0;
  tmod::build_tree(t);
  return b;
}

void memory_timeline(benchmark::State& state) {
  static built b = make_table();
  std::size_t points = 0;
  double peak = 0;
  for (auto _ : state) {
    bench::reset_peak();
    const long rss0 = bench::status_kb("VmRSS:");
    // (the series kept as the page's envelope, as `tracemodel memory` keeps it)
    const tmod::memory_timeline_result m = tmod::memory_timeline(b.table, {.sample_limit = 2000});
    peak = static_cast<double>(bench::status_kb("VmHWM:") - rss0) * 1024.0;
    points = m.samples.size();
    benchmark::DoNotOptimize(m.peak.bytes);
  }
  state.counters["allocations"] = static_cast<double>(b.allocations);
  state.counters["table_MB"] = b.table_bytes / 1e6;
  state.counters["peak_MB"] = peak / 1e6;
  state.counters["memory_vs_table"] = peak / b.table_bytes;
  state.counters["page_points"] = static_cast<double>(points);
  state.counters["ns_per_allocation"] = benchmark::Counter(
      static_cast<double>(b.allocations) * static_cast<double>(state.iterations()),
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

}  // namespace

BENCHMARK(memory_timeline)
    ->Name("memory_timeline/10M_allocations")
    ->Iterations(1)
    ->Repetitions(3)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_MAIN();
