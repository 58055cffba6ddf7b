// The tree of a recording follows the order of its begin and end calls, whatever the clock
// read: equal readings (a clock that never moves), readings that tie at a boundary, readings
// out of order. Both tree builders (`build_tree` and `analyze`) against the structure of the
// calls themselves.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include <tracemodel/algo/analyze.hpp>
#include <tracemodel/algo/tree.hpp>
#include <tracemodel/collect.hpp>
#include <tracemodel/model.hpp>

#include "../support/sanitized.hpp"

using namespace tracemodel;

namespace {

/// A clock the test moves by hand (nanosecond ticks: no calibration to wait for).
std::atomic<approx_time> hand_time{1'000'000};
struct hand_clock {
  static constexpr bool ticks_are_ns = true;
  static approx_time now() noexcept { return hand_time.load(std::memory_order_relaxed); }
};
struct hand_policies : default_record_policies {
  using clock = hand_clock;
};
using hand_queue = record_queue<default_schema, record_features{}, hand_policies>;

/// One thread's calls: ops begun and ended in stack order, op `k` named `prefix` + k (its place
/// in the thread's begin order), with the parent the calls give it (-1 for none).
struct calls {
  std::string prefix;
  std::vector<std::int64_t> parents;
};

/// Records `ops` ops on the calling thread, nesting at most `max_depth` deep, moving the clock
/// by `step(rng)` ticks (0 often: ties) before each call.
template <class Step>
calls record_calls(hand_queue& q, const std::string& prefix, std::size_t ops, std::size_t max_depth,
                   std::uint64_t seed, Step step) {
  std::mt19937_64 rng(seed);
  calls c{prefix, {}};
  std::vector<op_handle> open;
  std::vector<std::int64_t> open_index;
  c.parents.reserve(ops);
  std::size_t begun = 0;
  while (begun < ops || !open.empty()) {
    hand_time.fetch_add(step(rng), std::memory_order_relaxed);
    const bool can_begin = begun < ops && open.size() < max_depth;
    if (can_begin && (open.empty() || rng() % 2 == 0)) {
      c.parents.push_back(open.empty() ? -1 : open_index.back());
      const std::string name = prefix + std::to_string(begun);
      open.push_back(q.begin_op({.name = name, .copy_name = true}));
      open_index.push_back(static_cast<std::int64_t>(begun));
      ++begun;
    } else {
      q.end_op(open.back());
      open.pop_back();
      open_index.pop_back();
    }
  }
  return c;
}

/// Every op's parent as the table says, and the children of each in table order, against the
/// calls' (ops named by thread prefix and place; integers, not strings, so that a million ops
/// check quickly under a sanitizer too).
template <class Table>
void check_tree(const Table& t, const std::vector<calls>& threads) {
  std::size_t expected = 0;
  for (const calls& c : threads) expected += c.parents.size();
  REQUIRE(t.size() == expected);
  auto op_of = [&](event_index i) -> std::pair<std::size_t, std::int64_t> {  // (thread, place)
    const std::string_view name = t.name(i);
    std::size_t thread = threads.size();
    for (std::size_t k = 0; k < threads.size(); ++k)
      if (name.starts_with(threads[k].prefix)) thread = k;
    std::int64_t place = -1;
    if (thread < threads.size()) {
      const std::string_view digits = name.substr(threads[thread].prefix.size());
      std::from_chars(digits.data(), digits.data() + digits.size(), place);
    }
    return {thread, place};
  };
  std::size_t wrong = 0;
  std::vector<std::vector<event_index>> event_of(threads.size());
  for (std::size_t k = 0; k < threads.size(); ++k)
    event_of[k].assign(threads[k].parents.size(), no_event);
  for (event_index i = 0; i < t.size(); ++i) {
    const auto [thread, place] = op_of(i);
    if (thread == threads.size() || place < 0 ||
        static_cast<std::size_t>(place) >= threads[thread].parents.size()) {
      ++wrong;
      continue;
    }
    event_of[thread][static_cast<std::size_t>(place)] = i;
  }
  REQUIRE(wrong == 0);
  for (std::size_t k = 0; k < threads.size(); ++k) {
    const std::vector<std::int64_t>& parents = threads[k].parents;
    // The children each op should have, in begin order (places ascending): offsets, then ids.
    std::vector<std::size_t> first(parents.size() + 1, 0);
    for (const std::int64_t p : parents)
      if (p >= 0) ++first[static_cast<std::size_t>(p) + 1];
    for (std::size_t p = 0; p < parents.size(); ++p) first[p + 1] += first[p];
    std::vector<std::size_t> fill(first.begin(), first.end() - 1);
    std::vector<std::int64_t> kids(first.back());
    for (std::size_t c = 0; c < parents.size(); ++c)
      if (parents[c] >= 0)
        kids[fill[static_cast<std::size_t>(parents[c])]++] = static_cast<std::int64_t>(c);
    for (std::size_t place = 0; place < parents.size(); ++place) {
      const event_index i = event_of[k][place];
      const std::int64_t parent =
          t.events[i].parent == no_event ? -1 : op_of(t.events[i].parent).second;
      wrong += parent != parents[place];
      const auto got = t.children_of(i);
      bool same = got.size() == first[place + 1] - first[place];
      for (std::size_t c = 0; same && c < got.size(); ++c)
        same = op_of(got[c]) == std::pair{k, kids[first[place] + c]};
      wrong += !same;
    }
  }
  CHECK(wrong == 0);
}

}  // namespace

TEST_SUITE("collect" * doctest::skip(!collection_enabled)) {
  TEST_CASE(
      "recorded nesting: a clock that never moves, a million ops (a quarter under a sanitizer), "
      "the calls' tree") {
    constexpr auto ops = static_cast<std::size_t>(tmtest::scaled(1'000'000));
    hand_queue q;
    std::vector<calls> threads;
    threads.push_back(record_calls(q, "a", ops, 40, 1, [](auto&) { return 0; }));
    event_table t = materialize(q);
    event_table same = t;
    REQUIRE(t.size() == ops);
    const tree_stats s = build_tree(t);
    CHECK(s.roots == static_cast<std::size_t>(
                         std::count(threads[0].parents.begin(), threads[0].parents.end(), -1)));
    check_tree(t, threads);
    analyze(same);
    CHECK(same.children == t.children);
    CHECK(same.child_offsets == t.child_offsets);
  }

  TEST_CASE("recorded nesting: ties and equal readings on two threads, every tie rule") {
    for (std::uint64_t seed = 1; seed <= 40; ++seed) {
      hand_queue q;
      std::vector<calls> threads(2);
      // Mostly equal readings, some steps: ends tie with the next begin, begins with begins.
      auto step = [](std::mt19937_64& rng) -> approx_time { return rng() % 4 == 0 ? 1 : 0; };
      std::thread other([&] { threads[1] = record_calls(q, "b", 300, 6, seed * 7, step); });
      other.join();
      threads[0] = record_calls(q, "a", 300, 6, seed, step);
      const event_table recorded = materialize(q);
      CAPTURE(seed);
      {
        event_table t = recorded;
        build_tree(t);
        check_tree(t, threads);
      }
      {
        event_table t = recorded;
        build_tree(t, sibling_ties_tree{});
        check_tree(t, threads);
      }
      {
        event_table t = recorded;
        analyze(t);
        check_tree(t, threads);
      }
    }
  }

  TEST_CASE("recorded nesting: a table read from a file keeps the tie rule") {
    // Without recorded depths (a file's ops), an op that starts when another ends is its child
    // (PyTorch's rule), and a zero-length op opens nothing.
    event_table t;
    const name_id a = t.strings.intern("a"), b = t.strings.intern("b");
    auto add = [&](name_id n, std::int64_t s, std::int64_t e) {
      auto& ev = t.events.emplace_back();
      ev.start_ns = s;
      ev.tid = 1;
      auto& f = ev.fields.emplace<extra_fields<event_kind::op>>();
      f.name = n;
      f.end_ns = e;
    };
    add(a, 100, 150);
    add(b, 150, 170);
    build_tree(t);
    CHECK(t.events[1].parent == 0);
    // The same ops recorded as siblings (both at depth 0): the recording decides.
    t.events[0].get<event_kind::op>().depth = 0;
    t.events[1].get<event_kind::op>().depth = 0;
    build_tree(t);
    CHECK(t.events[1].parent == no_event);
  }
}
