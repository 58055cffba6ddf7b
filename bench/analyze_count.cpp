// A program to count the analysis's instructions with callgrind (not a timed benchmark): the
// post-processing benchmark's workload (4 recording threads) at about 200,000 events, recorded
// and materialized once, then analysed `repeats` times on copies of the table, on one thread.
//   valgrind --tool=callgrind build/release/bench/bench_analyze_count engine 3
//   valgrind --tool=callgrind build/release/bench/bench_analyze_count plain 3
// `engine`: `analyze` with one thread (the fused engine); `plain`: the three plain algorithms in
// order; `setup`: the recording and the copies alone (subtract it from both). Prints a checksum
// of what the analyses wrote, which is the same for all three modes but `setup`.
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string_view>

#include <tracemodel/algo/analyze.hpp>
#include <tracemodel/collect.hpp>

#include "recording.hpp"

namespace tmod = tracemodel;

int main(int argc, char** argv) {
  const std::string_view mode = argc > 1 ? argv[1] : "engine";
  const int repeats = argc > 2 ? std::atoi(argv[2]) : 3;
  const std::int64_t events = argc > 3 ? std::atoll(argv[3]) : 200'000;
  if (mode != "engine" && mode != "plain" && mode != "setup") {
    std::fprintf(stderr, "usage: %s engine|plain|setup [repeats] [events]\n", argv[0]);
    return 2;
  }
  auto q = std::make_unique<bench::queue<false>>();
  bench::record_workload(*q, events, 4);
  const tmod::event_table recorded = tmod::materialize(*q);
  q.reset();
  std::uint64_t sum = 0;
  for (int r = 0; r < repeats; ++r) {
    tmod::event_table t = recorded;
    if (mode == "engine") {
      tmod::analyze_options one_thread;
      one_thread.threads = 1;
      tmod::analyze(t, one_thread);
    } else if (mode == "plain") {
      tmod::link_forward_backward(t);
      tmod::link_device_activities(t);
      tmod::build_tree(t);
    }
    for (const auto& e : t.events) sum = sum * 31 + e.parent;
    sum += t.links.size() + t.children.size();
  }
  std::printf("%zu events, checksum %llu\n", recorded.size(), static_cast<unsigned long long>(sum));
  return 0;
}
