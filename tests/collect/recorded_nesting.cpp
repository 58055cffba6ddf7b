// The tree of a recording follows the order of its begin and end calls, whatever the clock
// read: equal readings (a clock that never moves), readings that tie at a boundary, readings
// out of order. Both tree builders (`build_tree` and `analyze`) against the structure of the
// calls themselves.
#include <doctest/doctest.h>

#include <atomic>
#include <cstdint>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <tracemodel/algo/analyze.hpp>
#include <tracemodel/algo/tree.hpp>
#include <tracemodel/collect.hpp>
#include <tracemodel/model.hpp>

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

/// One thread's calls: ops begun and ended in stack order, each named by its place in the
/// thread's begin order, with the parent the calls give it ("" for none).
struct calls {
  std::vector<std::string> names;
  std::vector<std::string> parents;
};

/// Records `ops` ops on the calling thread, nesting at most `max_depth` deep, moving the clock
/// by `step(rng)` ticks (0 often: ties) before each call.
template <class Step>
calls record_calls(hand_queue& q, const std::string& prefix, std::size_t ops, std::size_t max_depth,
                   std::uint64_t seed, Step step) {
  std::mt19937_64 rng(seed);
  calls c;
  std::vector<op_handle> open;
  std::vector<std::size_t> open_index;
  c.names.reserve(ops);
  c.parents.reserve(ops);
  std::size_t begun = 0;
  while (begun < ops || !open.empty()) {
    hand_time.fetch_add(step(rng), std::memory_order_relaxed);
    const bool can_begin = begun < ops && open.size() < max_depth;
    if (can_begin && (open.empty() || rng() % 2 == 0)) {
      c.names.push_back(prefix + std::to_string(begun));
      c.parents.push_back(open.empty() ? "" : c.names[open_index.back()]);
      open.push_back(q.begin_op({.name = c.names.back(), .copy_name = true}));
      open_index.push_back(begun);
      ++begun;
    } else {
      q.end_op(open.back());
      open.pop_back();
      open_index.pop_back();
    }
  }
  return c;
}

/// Every op's parent as the table says, by name, and the children of each in table order.
template <class Table>
void check_tree(const Table& t, const std::vector<calls>& threads) {
  std::size_t expected = 0;
  for (const calls& c : threads) expected += c.names.size();
  REQUIRE(t.size() == expected);
  std::unordered_map<std::string, std::string> parent_of;
  std::unordered_map<std::string, std::vector<std::string>> children_of;
  for (const auto& e : t.events) {
    const std::string name(t.name(e));
    parent_of[name] = e.parent == no_event ? "" : std::string(t.name(e.parent));
  }
  for (event_index i = 0; i < t.size(); ++i)
    for (const event_index k : t.children_of(i))
      children_of[std::string(t.name(i))].emplace_back(t.name(k));
  std::size_t wrong = 0;
  for (const calls& c : threads) {
    std::unordered_map<std::string, std::vector<std::string>> want_children;
    for (std::size_t k = 0; k < c.names.size(); ++k) {
      wrong += parent_of[c.names[k]] != c.parents[k];
      if (!c.parents[k].empty()) want_children[c.parents[k]].push_back(c.names[k]);
    }
    for (const auto& [p, kids] : want_children) wrong += children_of[p] != kids;
  }
  CHECK(wrong == 0);
}

}  // namespace

TEST_SUITE("collect" * doctest::skip(!collection_enabled)) {
  TEST_CASE("recorded nesting: a clock that never moves, a million ops, the calls' tree") {
    hand_queue q;
    std::vector<calls> threads;
    threads.push_back(record_calls(q, "a", 1'000'000, 40, 1, [](auto&) { return 0; }));
    event_table t = materialize(q);
    event_table same = t;
    REQUIRE(t.size() == 1'000'000);
    const tree_stats s = build_tree(t);
    CHECK(s.roots == static_cast<std::size_t>(
                         std::count(threads[0].parents.begin(), threads[0].parents.end(), "")));
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
