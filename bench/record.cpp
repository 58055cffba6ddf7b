// Recording cost, measured against the cheapest possible recording in the same run.
// record/op_draining: a live queue (collect/live_queue.hpp) with a thread draining it meanwhile;
// drain/event: the live queue's consumer turning sealed blocks into a table, per event.
// record/op_crashfile(_inputs): a live queue keeping its blocks in a crash file, as a flight
// recorder; recover/event: reading such a file back, per event.
//
// One iteration = one begin+end pair (or one materialized event). Fixed iteration counts so
// that every repetition writes the same amount of memory; run with --benchmark_repetitions
// and compare medians (bench/ratios.py prints the ratios the issues ask for).
#include <benchmark/benchmark.h>

#include <sys/mman.h>
#include <sys/resource.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include <tracemodel/collect.hpp>
#include <tracemodel/collect/crash_recover.hpp>
#include <tracemodel/collect/live_queue.hpp>
#include <tracemodel/memory.hpp>

namespace tmod = tracemodel;

namespace {

// As a program that analyses trace after trace (memory.hpp), set before any benchmark runs.
[[maybe_unused]] const bool program_memory = (tracemodel::program_memory_cache(), true);

long minor_faults() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_minflt;
}

constexpr std::int64_t pairs = 1 << 20;  // begin+end pairs per repetition (64 MiB of records)

// ---- the floor: two TSC reads + one 32-byte store into a touched thread-local chunk ---------
struct floor_record {
  std::uint64_t t0, t1;
  const char* name;
  std::uint64_t corr;
};
struct floor_chunk {
  alignas(64) floor_record data[2048];  // 64 KiB
  floor_record* next = data;
  std::uint64_t corr = 1;
};
thread_local floor_chunk floor_tls;

void record_floor(benchmark::State& state) {
  floor_chunk& c = floor_tls;
  std::memset(static_cast<void*>(c.data), 0, sizeof(c.data));  // touched before timing
  for (auto _ : state) {
    const std::uint64_t t0 = tmod::tsc_clock::now();
    const std::uint64_t t1 = tmod::tsc_clock::now();
    floor_record* r = c.next++;
    *r = {t0, t1, "op", c.corr++};
    if (c.next == c.data + 2048) [[unlikely]]
      c.next = c.data;
    benchmark::ClobberMemory();
  }
}

// ---- the floor's store pattern, 64 bytes per op, into never-touched memory -------------------
void record_floor_fresh(benchmark::State& state) {
  const std::size_t bytes = static_cast<std::size_t>(pairs) * 64;
  void* mem = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) {
    state.SkipWithError("mmap failed");
    return;
  }
  struct rec64 {
    std::uint64_t t0, t1;
    const char* name;
    std::uint64_t corr, a, b, c, d;
  };
  auto* next = static_cast<rec64*>(mem);
  std::uint64_t corr = 1;
  const long f0 = minor_faults();
  for (auto _ : state) {
    const std::uint64_t t0 = tmod::tsc_clock::now();
    const std::uint64_t t1 = tmod::tsc_clock::now();
    *next++ = {t0, t1, "op", corr++, 0, 0, 0, 0};
    benchmark::ClobberMemory();
  }
  state.counters["page_faults"] = static_cast<double>(minor_faults() - f0);
  munmap(mem, bytes);
}

// ---- tracemodel --------------------------------------------------------------------------------
using queue_t = tmod::record_queue<>;

/// Records `n` ops into a throw-away session and materializes it, so that the pool holds
/// recycled, touched blocks for the next session (the steady state of a profiler).
void warm_pool(std::int64_t n) {
  queue_t q;
  for (std::int64_t i = 0; i < n; ++i) q.end_op(q.begin_op({.name = "warm"}));
  benchmark::DoNotOptimize(tmod::materialize(q).size());
}

void record_op(benchmark::State& state) {
  warm_pool(pairs);
  queue_t q;
  for (auto _ : state) {
    tmod::op_handle h = q.begin_op({.name = "aten::add", .sequence_number = 1});
    q.end_op(h);
    benchmark::ClobberMemory();
  }
}

void record_op_fresh(benchmark::State& state) {
  tmod::block_pool::instance().trim();  // no recycled blocks: a first session
  queue_t q;
  const long f0 = minor_faults();
  for (auto _ : state) {
    tmod::op_handle h = q.begin_op({.name = "aten::add", .sequence_number = 1});
    q.end_op(h);
    benchmark::ClobberMemory();
  }
  state.counters["page_faults"] = static_cast<double>(minor_faults() - f0);
}

void record_op_prefaulted(benchmark::State& state) {
  tmod::block_pool::instance().trim();
  const auto t0 = std::chrono::steady_clock::now();
  tmod::block_pool::instance().prefault(static_cast<std::size_t>(pairs) * sizeof(tmod::op_record) +
                                        4 * tmod::block_pool::block_size);
  const auto t1 = std::chrono::steady_clock::now();
  queue_t q;
  for (auto _ : state) {
    tmod::op_handle h = q.begin_op({.name = "aten::add", .sequence_number = 1});
    q.end_op(h);
    benchmark::ClobberMemory();
  }
  // The pre-fault happens when the session starts, outside the timed loop: its cost per op.
  state.counters["prefault_ns_per_op"] =
      std::chrono::duration<double, std::nano>(t1 - t0).count() / static_cast<double>(pairs);
}

// A rank-2 tensor for the 3-input benchmark.
struct tensor {
  std::array<std::int64_t, 2> sizes{64, 32};
  std::array<std::int64_t, 2> strides{32, 1};
  std::uint64_t impl = 0x1000;
};
struct tensor_traits {
  static tmod::input_kind kind(const tensor&) { return tmod::input_kind::tensor; }
  static tmod::tensor_info tensor(const struct tensor& t) {
    return {t.impl, t.impl + 64, 0, -1, 6, tmod::strided_layout, t.sizes, t.strides};
  }
  static tmod::scalar_value scalar(const struct tensor&) { return {}; }
  template <class F>
  static void for_each_element(const struct tensor&, F&&) {}
  static std::string_view dtype_name(std::uint8_t) { return "float"; }
};
struct input_policies : tmod::default_record_policies {
  using value_traits = tensor_traits;
};

void record_op_3_inputs(benchmark::State& state) {
  using q3_t = tmod::record_queue<tmod::default_schema, tmod::record_features{.inputs = true},
                                  input_policies>;
  {
    q3_t warm;
    const tensor in[3]{};
    for (std::int64_t i = 0; i < pairs; ++i)
      warm.end_op(warm.begin_op({.name = "warm"}, std::span<const tensor>(in)));
    benchmark::DoNotOptimize(tmod::materialize(warm).size());
  }
  q3_t q;
  const tensor in[3]{
      {{64, 32}, {32, 1}, 0x1000}, {{32, 16}, {16, 1}, 0x2000}, {{64, 16}, {16, 1}, 0x3000}};
  for (auto _ : state) {
    tmod::op_handle h =
        q.begin_op({.name = "aten::addmm", .sequence_number = 1}, std::span<const tensor>(in));
    q.end_op(h);
    benchmark::ClobberMemory();
  }
}

/// `n` ops with one nested in each (the workload of materialize/event and drain/event).
template <class Queue>
void record_nested_pairs(Queue& q, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) {
    const auto outer = q.begin_op({.name = "aten::linear", .sequence_number = i});
    const auto inner = q.begin_op({.name = "aten::addmm", .sequence_number = i});
    q.end_op(inner);
    q.end_op(outer);
  }
}

void materialize_event(benchmark::State& state) {
  constexpr std::int64_t per_session = 200'000;
  queue_t q;
  std::int64_t events = 0;
  for (auto _ : state) {
    state.PauseTiming();
    record_nested_pairs(q, per_session / 2);
    state.ResumeTiming();
    tmod::event_table t = tmod::materialize(q);
    events += static_cast<std::int64_t>(t.size());
    benchmark::DoNotOptimize(t.events.data());
    state.PauseTiming();
    t = {};  // free outside the timing
    state.ResumeTiming();
  }
  // Seconds per event (shown with an SI prefix, e.g. "22n" = 22 ns).
  state.counters["s_per_event"] = benchmark::Counter(
      static_cast<double>(events), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

// ---- the live queue
// ------------------------------------------------------------------------------
/// `record(q)` (a begin and an end) per iteration into a live queue while another thread drains
/// it (and drops the parts), after a few blocks' worth of warm-up.
template <class Queue, class Record>
void record_draining(benchmark::State& state, Queue& q, Record record) {
  warm_pool(pairs);  // the live queue's blocks come from the pool too: touched, as for record/op
  std::atomic<bool> done{false};
  std::thread drain([&] {
    while (!done.load(std::memory_order_relaxed))
      if (q.wait_sealed(std::chrono::milliseconds(5))) q.drain([](tmod::event_table&&) {});
  });
  for (std::int64_t i = 0; i < 4 * 1024; ++i) record(q);
  for (auto _ : state) {
    record(q);
    benchmark::ClobberMemory();
  }
  done = true;
  drain.join();
}

/// begin+end pairs into a live queue while another thread drains it.
void record_op_draining(benchmark::State& state) {
  tmod::live_queue<> q;
  record_draining(state, q, [](auto& queue) {
    queue.end_op(queue.begin_op({.name = "aten::add", .sequence_number = 1}));
  });
}

const tensor three_inputs[3]{
    {{64, 32}, {32, 1}, 0x1000}, {{32, 16}, {16, 1}, 0x2000}, {{64, 16}, {16, 1}, 0x3000}};
using live_inputs_t = tmod::live_queue<tmod::record_features{.inputs = true}, input_policies>;

/// record/op_3_inputs into a live queue while another thread drains it: the inputs go to the
/// block's side area and are decoded by the drain.
void record_op_3_inputs_draining(benchmark::State& state) {
  live_inputs_t q;
  record_draining(state, q, [](auto& queue) {
    queue.end_op(queue.begin_op({.name = "aten::addmm", .sequence_number = 1},
                                std::span<const tensor>(three_inputs)));
  });
}

/// The consumer's side: `record(q)` fills the queue outside the timing; the drain that turns its
/// sealed blocks into a table is timed, per event.
template <class Queue, class Record>
void drain_per_event(benchmark::State& state, Queue& q, Record record) {
  std::int64_t events = 0;
  for (auto _ : state) {
    state.PauseTiming();
    record(q);
    q.flush(std::chrono::milliseconds(0));  // this thread's current block too
    state.ResumeTiming();
    q.drain([&](tmod::event_table&& t) {
      events += static_cast<std::int64_t>(t.size());
      benchmark::DoNotOptimize(t.events.data());
      state.PauseTiming();
      t = {};  // free outside the timing
      state.ResumeTiming();
    });
  }
  state.counters["s_per_event"] = benchmark::Counter(
      static_cast<double>(events), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
constexpr std::int64_t per_drain = 200'000;

/// An op and a nested one per pair, as materialize/event.
void drain_event(benchmark::State& state) {
  tmod::live_queue<> q;
  drain_per_event(state, q, [](auto& queue) { record_nested_pairs(queue, per_drain / 2); });
}

/// drain/event with three tensor inputs per op: the consumer decodes them into the part.
void drain_event_3_inputs(benchmark::State& state) {
  live_inputs_t q;
  drain_per_event(state, q, [](auto& queue) {
    for (std::int64_t i = 0; i < per_drain / 2; ++i) {
      const tmod::live_handle outer = queue.begin_op({.name = "aten::linear", .sequence_number = 1},
                                                     std::span<const tensor>(three_inputs));
      queue.end_op(queue.begin_op({.name = "aten::addmm"}, std::span<const tensor>(three_inputs)));
      queue.end_op(outer);
    }
  });
}

// ---- the crash file ---------------------------------------------------------------------------
/// Where the benchmarks' crash files go: shared memory where the system has it (as the docs
/// advise), the temporary folder otherwise.
std::string crash_path(const char* name) {
  const std::filesystem::path shm = "/dev/shm";
  const std::filesystem::path dir =
      std::filesystem::is_directory(shm) ? shm : std::filesystem::temp_directory_path();
  return (dir / (std::string("tracemodel_bench_") + name)).string();
}

/// `record(q)` per iteration into a live queue with a crash file, as a flight recorder (no
/// consumer: the recording thread overwrites the oldest block once the file is full, the
/// steady state of an always-on recorder).
template <class Queue, class Record>
void record_crashfile(benchmark::State& state, const char* name, Record record) {
  const std::string file = crash_path(name);
  {
    Queue q({.max_blocks = 64, .policy = tmod::when_full::overwrite_oldest, .crash_file = file});
    for (std::int64_t i = 0; i < 128 * 1024; ++i) record(q);  // the file full: overwriting
    for (auto _ : state) {
      record(q);
      benchmark::ClobberMemory();
    }
  }
  std::filesystem::remove(file);
}
void record_op_crashfile(benchmark::State& state) {
  record_crashfile<tmod::live_queue<>>(state, "op.crash", [](auto& queue) {
    queue.end_op(queue.begin_op({.name = "aten::add", .sequence_number = 1}));
  });
}
void record_op_crashfile_inputs(benchmark::State& state) {
  record_crashfile<live_inputs_t>(state, "inputs.crash", [](auto& queue) {
    queue.end_op(queue.begin_op({.name = "aten::addmm", .sequence_number = 1},
                                std::span<const tensor>(three_inputs)));
  });
}

/// Reading a crash file of 200,000 events (an op and a nested one per pair), per event; the
/// file's bytes per second beside it.
void recover_event(benchmark::State& state) {
  const std::string file = crash_path("recover.crash");
  tmod::live_queue<> q({.max_blocks = 256, .crash_file = file});
  record_nested_pairs(q, per_drain / 2);
  std::int64_t events = 0;
  for (auto _ : state) {
    const tmod::recovered_trace r = tmod::recover_crash_file(file);
    events += static_cast<std::int64_t>(r.table.size());
    benchmark::DoNotOptimize(r.table.events.data());
  }
  state.counters["s_per_event"] = benchmark::Counter(
      static_cast<double>(events), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["events_per_s"] =
      benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
  std::filesystem::remove(file);
}

}  // namespace

BENCHMARK(record_floor)->Name("record/floor")->Iterations(pairs);
BENCHMARK(record_op)->Name("record/op")->Iterations(pairs);
BENCHMARK(record_op_3_inputs)->Name("record/op_3_inputs")->Iterations(pairs);
BENCHMARK(record_floor_fresh)->Name("record/floor_fresh")->Iterations(pairs);
BENCHMARK(record_op_fresh)->Name("record/op_fresh")->Iterations(pairs);
BENCHMARK(record_op_prefaulted)->Name("record/op_prefaulted")->Iterations(pairs);
BENCHMARK(materialize_event)
    ->Name("materialize/event")
    ->Iterations(10)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(record_op_draining)->Name("record/op_draining")->Iterations(pairs);
BENCHMARK(record_op_3_inputs_draining)->Name("record/op_3_inputs_draining")->Iterations(pairs);
BENCHMARK(record_op_crashfile)->Name("record/op_crashfile")->Iterations(pairs);
BENCHMARK(record_op_crashfile_inputs)->Name("record/op_crashfile_inputs")->Iterations(pairs);
BENCHMARK(recover_event)->Name("recover/event")->Iterations(10)->Unit(benchmark::kMillisecond);
BENCHMARK(drain_event)->Name("drain/event")->Iterations(10)->Unit(benchmark::kMillisecond);
BENCHMARK(drain_event_3_inputs)
    ->Name("drain/event_3_inputs")
    ->Iterations(10)
    ->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
