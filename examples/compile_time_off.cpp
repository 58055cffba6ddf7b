// The instrumentation of a hot loop, with every feature switched off at compile time:
// TRACEMODEL_ENABLE_COLLECTION=0 (set for this target), a schema of ops only, no optional
// per-op streams. The macro's arguments are type-checked but never evaluated, and the loop
// costs what the loop costs. For scale, the same binary measures the floor of recording an op
// (two clock reads and a 32-byte store, as bench/record.cpp's record/floor does).
//
// Timings printed here are for reading, not asserted; bench/ measures speed.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include <tracemodel/collect.hpp>

static_assert(!tracemodel::collection_enabled,
              "this example is built with TRACEMODEL_ENABLE_COLLECTION=0");

using ops_only = tracemodel::schema<tracemodel::event_kind::op>;
using queue_type = tracemodel::record_queue<ops_only, tracemodel::record_features{}>;

namespace {
constexpr int n = 20'000'000;

/// The runtime's hot loop, instrumented as it would be with recording on.
[[gnu::noinline]] std::uint64_t hot_loop(queue_type& q, std::uint64_t seed) {
  std::uint64_t x = seed;
  for (int i = 0; i < n; ++i) {
    TRACEMODEL_SCOPED_OP(q, .name = "aten::add", .sequence_number = i);
    x = x * 6364136223846793005ull + 1442695040888963407ull;
  }
  return x;
}
/// The same loop without instrumentation.
[[gnu::noinline]] std::uint64_t bare_loop(std::uint64_t seed) {
  std::uint64_t x = seed;
  for (int i = 0; i < n; ++i) x = x * 6364136223846793005ull + 1442695040888963407ull;
  return x;
}
/// The floor of recording: two clock reads and a 32-byte store into a touched buffer.
struct floor_record {
  std::uint64_t t0, t1;
  const char* name;
  std::uint64_t corr;
};
[[gnu::noinline]] std::uint64_t floor_loop() {
  static floor_record buf[2048];
  std::memset(static_cast<void*>(buf), 0, sizeof buf);
  for (int i = 0; i < n; ++i) {
    const std::uint64_t t0 = tracemodel::default_clock::now();
    const std::uint64_t t1 = tracemodel::default_clock::now();
    buf[i & 2047] = {t0, t1, "aten::add", static_cast<std::uint64_t>(i)};
    asm volatile("" ::: "memory");
  }
  return buf[7].corr;
}
template <class F>
double ns_per_op(F&& f) {
  const auto a = std::chrono::steady_clock::now();
  volatile std::uint64_t sink = f();
  (void)sink;
  return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - a).count() / n;
}
}  // namespace

int main() {
  queue_type q;
  q.start();
  std::printf(
      "per-event size: %zu bytes recorded per op when collection is on (no optional streams)\n",
      sizeof(tracemodel::op_record));
  std::printf(
      "per-event size now: 0 bytes (TRACEMODEL_ENABLE_COLLECTION=0; queue object %zu bytes)\n",
      sizeof(q));
  const double off = ns_per_op([&] { return hot_loop(q, 1); });
  const double bare = ns_per_op([] { return bare_loop(1); });
  const double floor = ns_per_op([] { return floor_loop(); });
  std::printf("instrumented loop, collection off: %.2f ns/op\n", off);
  std::printf("the same loop, no instrumentation: %.2f ns/op\n", bare);
  std::printf("floor of recording an op:          %.2f ns/op\n", floor);
  std::printf("events recorded: %zu\n", tracemodel::materialize(q).size());
}
