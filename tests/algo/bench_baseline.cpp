// The post-processing benchmark compares `analyze` with a port of PyTorch's build_tree
// (bench/baseline_tree.hpp) on one synthetic workload: here both run on a small instance of it
// and must build the same tree, so that the benchmark times the same answer twice.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <stdexcept>
#include <tuple>
#include <utility>
#include <variant>
#include <vector>

#include <tracemodel/algo/analyze.hpp>
#include <tracemodel/collect.hpp>

#include "baseline_results.hpp"
#include "baseline_tree.hpp"
#include "recording.hpp"

namespace tmod = tracemodel;

namespace {

/// An event of either side: an op by (thread index, start after the thread's first), a runtime
/// launch or a kernel by correlation id.
enum class what : int { op, launch, kernel };
using key = std::tuple<what, std::uint64_t, std::int64_t>;
constexpr key no_parent{what::op, ~std::uint64_t{0}, -1};

/// Thread k's first event starts at this time (workload.hpp), in the baseline's Results.
constexpr std::int64_t first_start(std::uint64_t k) {
  return 1'000'000'000 + 12'345 * static_cast<std::int64_t>(k);
}

std::map<key, key> tracemodel_tree(std::int64_t events, int threads) {
  auto q = std::make_unique<bench::queue<false>>();
  bench::record_workload(*q, events, threads);
  tmod::event_table t = tmod::materialize(*q);
  q.reset();
  // The benchmark's path at 10M events: the forward/backward linker on a second thread.
  tmod::analysis a;
  tmod::thread_options two_threads;
  two_threads.threads = 2;
  tmod::detail::engine_options knobs;
  knobs.parallel_threshold = 0;
  tmod::detail::run_analysis<tmod::pytorch_tree, tmod::pytorch_links, tmod::pytorch_device_links>(
      t, a, two_threads, knobs);
  // Each recording thread's index and first start: the threads start 12,345 ns apart in order
  // of their index (workload.hpp; the recording's clock adds an offset).
  std::map<tmod::thread_key, std::int64_t> first;
  for (const auto& e : t.events)
    if (e.is<tmod::event_kind::op>()) {
      auto [it, fresh] = first.try_emplace(e.tid, e.start_ns);
      if (!fresh && e.start_ns < it->second) it->second = e.start_ns;
    }
  REQUIRE(first.size() == static_cast<std::size_t>(threads));
  std::vector<std::pair<std::int64_t, tmod::thread_key>> by_start;
  for (const auto& [tid, start] : first) by_start.emplace_back(start, tid);
  std::sort(by_start.begin(), by_start.end());
  std::map<tmod::thread_key, std::uint64_t> index;
  for (std::size_t k = 0; k < by_start.size(); ++k) {
    CHECK(by_start[k].first - by_start[0].first == first_start(k) - first_start(0));
    index[by_start[k].second] = k;
  }
  auto key_of = [&](const auto& e) -> key {
    if (e.template is<tmod::event_kind::op>())
      return {what::op, index.at(e.tid), e.start_ns - first.at(e.tid)};
    const auto& d = e.template get<tmod::event_kind::device_activity>();
    return {d.activity == tmod::activity_type::kernel ? what::kernel : what::launch,
            d.correlation_id, 0};
  };
  std::map<key, key> parents;
  for (const auto& e : t.events) {
    const key parent = e.parent == tmod::no_event ? no_parent : key_of(t.events[e.parent]);
    CHECK(parents.emplace(key_of(e), parent).second);
  }
  return parents;
}

std::map<key, key> baseline_tree(std::int64_t events, int threads) {
  std::vector<baseline::result_ptr> all = baseline::workload_results(events, threads);
  baseline::build_tree(all);
  auto key_of = [](const baseline::result& r) -> key {
    if (const auto* k = std::get_if<baseline::kineto_fields>(&r.extra_fields))
      return {k->name == "cudaLaunchKernel" ? what::launch : what::kernel, k->correlation_id, 0};
    return {what::op, r.start_tid - 1, r.start_time_ns - first_start(r.start_tid - 1)};
  };
  std::map<key, key> parents;
  for (const auto& r : all) {
    CHECK(r->finished);
    const auto p = r->parent.lock();
    CHECK(parents.emplace(key_of(*r), p == nullptr ? no_parent : key_of(*p)).second);
  }
  for (const auto& r : all) r->children.clear();  // the cycles' strong half
  return parents;
}

}  // namespace

TEST_CASE("the post-processing benchmark's baseline builds the tree analyze builds") {
  constexpr int threads = 4;
  constexpr std::int64_t iterations = 100;  // per thread
  constexpr std::int64_t events = workload::events_per_iteration * iterations * threads;
  const std::map<key, key> ours = tracemodel_tree(events, threads);
  const std::map<key, key> theirs = baseline_tree(events, threads);
  REQUIRE(ours.size() == theirs.size());
  CHECK(ours.size() == static_cast<std::size_t>(events));
  std::size_t roots = 0, differ = 0;
  for (const auto& [k, parent] : ours) {
    const auto it = theirs.find(k);
    REQUIRE(it != theirs.end());
    if (it->second != parent) ++differ;
    roots += parent == no_parent ? 1 : 0;
  }
  CHECK(differ == 0);
  CHECK(roots == iterations * threads);  // one ProfilerStep per iteration and thread
}

TEST_CASE("the baseline's flat hash map against std::map") {
  // Few slots and keys that share them: runs form, and erasing from their middle moves later
  // entries back.
  std::mt19937_64 rng(7);
  for (int round = 0; round < 50; ++round) {
    baseline::flat_map<int> m;
    std::map<std::uint64_t, int> ref;
    const std::uint64_t range = 2 + rng() % 40;
    for (int step = 0; step < 400; ++step) {
      const std::uint64_t k = rng() % range;
      switch (rng() % 3) {
        case 0: {
          const int v = static_cast<int>(rng() % 1000);
          m[k] = v;
          ref[k] = v;
          break;
        }
        case 1:
          m.erase(k);
          ref.erase(k);
          break;
        default:
          break;
      }
      for (std::uint64_t q = 0; q < range; ++q) {
        const auto it = ref.find(q);
        auto* s = m.find(q);
        REQUIRE((s != nullptr) == (it != ref.end()));
        if (s != nullptr) {
          CHECK(s->value == it->second);
          CHECK(m.at(q) == it->second);
        } else {
          CHECK_THROWS_AS(m.at(q), std::out_of_range);
        }
      }
    }
  }
}
