// Not a timed benchmark: a flight recorder left on (bench/soak.sh runs it for 10 minutes).
// Two threads record nested ops with copied names into a live queue capped at 64 blocks that
// overwrites the oldest; a third dumps it every second. Printed every 10 s and at the end: the
// blocks held (at most the cap plus one a thread), the resident size and its growth since the
// first minute, and the ops recorded, kept and overwritten (which must add up).
//
//   bench_soak [SECONDS]   (default 600)
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include <tracemodel/collect/live_queue.hpp>

#include "recording.hpp"

namespace tmod = tracemodel;

int main(int argc, char** argv) {
  const int seconds = argc > 1 ? std::atoi(argv[1]) : 600;
  constexpr std::size_t cap = 64;
  tmod::live_queue_options o;
  o.max_blocks = cap;
  o.policy = tmod::when_full::overwrite_oldest;
  static tmod::live_queue<> q(o);
  std::atomic<bool> done{false};
  std::vector<std::thread> workers;
  for (int w = 0; w < 2; ++w)
    workers.emplace_back([&, w] {
      for (std::uint64_t k = 0; !done.load(std::memory_order_relaxed); ++k) {
        const tmod::live_handle step = q.begin_op({.name = "step", .sequence_number = 0});
        for (int j = 0; j < 100; ++j) {
          const std::string name = "op#" + std::to_string((k + j + w) % 50);
          q.end_op(q.begin_op({.name = name, .copy_name = true}));
        }
        q.end_op(step);
      }
    });
  std::size_t most = 0;
  std::uint64_t dumped = 0;
  long rss_minute = 0, rss_most = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (int s = 1; s <= seconds; ++s) {
    std::this_thread::sleep_until(t0 + std::chrono::seconds(s));
    dumped += q.dump(std::chrono::milliseconds(20)).size();
    most = std::max(most, q.blocks_held());
    const long rss = bench::status_kb("VmRSS:");
    if (s == std::min(60, seconds)) rss_minute = rss;
    rss_most = std::max(rss_most, rss);
    if (s % 10 == 0 || s == seconds)
      std::printf("%4d s: blocks held %zu (most %zu, cap %zu + 2 threads), resident %ld KB\n", s,
                  q.blocks_held(), most, cap, rss);
    std::fflush(stdout);
  }
  done = true;
  for (std::thread& t : workers) t.join();
  const tmod::live_counts c = q.counts();
  std::printf(
      "ops %llu: kept %llu (in %llu dumped events), overwritten %llu, not yet dumped %llu; "
      "most blocks %zu; resident growth after the first minute %ld KB\n",
      static_cast<unsigned long long>(c.begun),
      static_cast<unsigned long long>(c.ended + c.unfinished),
      static_cast<unsigned long long>(dumped), static_cast<unsigned long long>(c.evicted_ops),
      static_cast<unsigned long long>(c.begun - c.ended - c.unfinished - c.evicted_ops), most,
      rss_most - rss_minute);
  return most <= cap + 2 ? 0 : 1;
}
