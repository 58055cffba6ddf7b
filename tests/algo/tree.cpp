#include <doctest/doctest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include <tracemodel/algo/analyze.hpp>
#include <tracemodel/algo/tree.hpp>
#include <tracemodel/algo/walk.hpp>
#include <tracemodel/testing/builder.hpp>
#include <tracemodel/testing/dump.hpp>
#include <tracemodel/testing/reference_tree.hpp>

#include "../support/analysis_ways.hpp"
#include "../support/oracle.hpp"
#include "../support/sanitized.hpp"

using namespace tracemodel;
using tracemodel::testing::table_builder;
using tracemodel::testing::tree_text;

namespace {

std::vector<event_index> parents(const event_table& t) {
  std::vector<event_index> p;
  for (const auto& e : t.events) p.push_back(e.parent);
  return p;
}

/// Checks the structural invariants of a built tree: children lists are exactly the inverse of
/// the parent links, in start order.
void check_children_consistent(const event_table& t) {
  // One offset per event and one more, non-decreasing, from 0 to the size of the lists.
  REQUIRE(t.child_offsets.size() == t.size() + 1);
  CHECK(t.child_offsets.front() == 0);
  CHECK(t.child_offsets.back() == t.children.size());
  CHECK(std::is_sorted(t.child_offsets.begin(), t.child_offsets.end()));
  std::size_t total = 0;
  for (std::size_t i = 0; i < t.size(); ++i) {
    const auto kids = t.children_of(t.events[i]);
    total += kids.size();
    for (std::size_t k = 0; k < kids.size(); ++k) {
      REQUIRE(t.events[kids[k]].parent == i);
      if (k > 0) CHECK(t.events[kids[k - 1]].start_ns <= t.events[kids[k]].start_ns);
    }
  }
  std::size_t with_parent = 0;
  for (const auto& e : t.events) with_parent += e.parent != no_event ? 1 : 0;
  CHECK(total == with_parent);
}

/// A tree policy that also carries every member of a device link policy and of a forward/backward
/// one: its tag alone says what it is.
struct odd_tree : sibling_ties_tree {
  static constexpr bool use_flows = false;
  static constexpr bool use_correlation = false;
  static constexpr bool use_external_id = false;
  static constexpr bool link_runtime_calls = false;
  static constexpr bool inherit_thread = false;
  static constexpr std::string_view wrapper_prefix = "";
};
static_assert(tree_builder_policy<odd_tree> && !device_link_policy<odd_tree> &&
              !fwd_bwd_policy<odd_tree>);

}  // namespace

TEST_SUITE("algo") {
  TEST_CASE("children_of: empty before a tree is built and after reset_tree") {
    table_builder b;
    b.op("A", 0, 100).op("B", 10, 50);
    event_table t = b.take();
    CHECK(t.child_offsets.empty());
    CHECK(t.children_of(0).empty());
    CHECK(t.children_of(t.events[1]).empty());
    build_tree(t);
    REQUIRE(t.children_of(0).size() == 1);
    CHECK(t.children_of(0)[0] == 1);
    CHECK(t.children_of(t.events[1]).empty());
    CHECK(t.child_offsets == decltype(t.child_offsets){0, 1, 1});
    t.reset_tree();
    CHECK(t.child_offsets.empty());
    CHECK(t.children.empty());
    CHECK(t.children_of(0).empty());
  }

  TEST_CASE("build_tree: nesting") {
    table_builder b;
    b.op("A", 0, 100).op("B", 10, 50).op("C", 20, 30).op("D", 60, 90).op("E", 200, 300);
    event_table t = b.take();
    const tree_stats s = build_tree(t);
    CHECK(tree_text(t) == "A\n  B\n    C\n  D\nE\n");
    CHECK(s.roots == 2);
    check_children_consistent(t);
  }

  TEST_CASE("analyze: a policy's kind is its tag, whatever members it happens to carry") {
    // A tree policy that also carries every member of a device link policy (odd_tree, above):
    // analyze takes it as what its `policy_kind` says, and the device links from the default.
    table_builder b;
    b.op("A", 0, 10).op("B", 10, 20);  // B starts when A ends: a sibling under these ties
    event_table t = b.take();
    const analysis a = analyze(t, odd_tree{});
    CHECK(a.tree.roots == 2);
    CHECK(tree_text(t) == "A\nB\n");
  }

  TEST_CASE("build_tree: equal start times follow table order (PyTorch) or length (ties first)") {
    table_builder b;
    b.op("A", 0, 100).op("B", 0, 50).op("C", 0, 100);
    event_table pt = b.table();
    event_table hta = b.take();
    build_tree(pt);
    // PyTorch: a stable sort by start, then each event nests in whatever is open.
    CHECK(tree_text(pt) == "A\n  B\n    C\n");
    build_tree(hta, sibling_ties_tree{});
    // HTA: equal starts open the longer event first; equal lengths keep table order.
    CHECK(tree_text(hta) == "A\n  C\n    B\n");
  }

  TEST_CASE("build_tree: an event that starts exactly when another ends (the tie rule)") {
    table_builder b;
    b.op("first", 0, 100).allocation(1, 8, 100).op("second", 100, 150);
    b.op("third", 200, 300).allocation(1, 8, 300).op("fourth", 310, 320);
    event_table pt = b.table();
    event_table hta = b.take();
    build_tree(pt);
    // PyTorch pops only ends strictly before a start: both become children of `first`.
    CHECK(tree_text(pt) == "first\n  [memory]\n  second\nthird\n  [memory]\nfourth\n");
    build_tree(hta, sibling_ties_tree{});
    // HTA closes first, but an instant at an end stays inside, unless an event opens at the
    // same time: then it goes inside that one (zero-length meets non-zero: inside).
    CHECK(tree_text(hta) == "first\nsecond\n  [memory]\nthird\n  [memory]\nfourth\n");
  }

  TEST_CASE("build_tree: several threads build independent trees") {
    table_builder b;
    b.op("t1.a", 0, 100, 1).op("t2.a", 5, 200, 2).op("t1.b", 10, 20, 1).op("t2.b", 15, 25, 2);
    b.op("t1.c", 150, 160, 1).op("t2.c", 170, 180, 2).op("other pid", 12, 13, 1, 99);
    event_table t = b.take();
    build_tree(t);
    // Roots are listed in table order.
    CHECK(tree_text(t) == "t1.a\n  t1.b\nt2.a\n  t2.b\n  t2.c\nt1.c\nother pid\n");
    check_children_consistent(t);
  }

  TEST_CASE("build_tree: a stack closes 5, 6 or 7 frames at once (the replay's counting window)") {
    // Chains 9 deep (the frame at depth d starts at d and ends at 100 - d), each followed by an
    // event that closes 5, 6 or 7 of its frames: the replay counts the top 6 frames that close
    // and walks on down only when all 6 do.
    table_builder b;
    auto chain = [&](std::int64_t at, const char* tag) {
      for (int d = 0; d < 9; ++d) b.op(std::string(tag) + std::to_string(d), at + d, at + 100 - d);
    };
    chain(0, "a");
    b.op("five", 97, 98);  // a4 .. a8 end before 97; a3 ends at 97 (PyTorch: still open)
    chain(200, "b");
    b.op("six", 298, 299);  // b3 .. b8 close; b2 ends at 298
    chain(400, "c");
    b.op("seven", 499, 500);  // c2 .. c8 close; c1 ends at 499
    b.op("root", 501, 502);   // everything has closed
    event_table t = b.take();
    // (The engine behind `analyze` counts the top 6 frames that close and walks on down only
    // when all 6 do: every way it runs must give the same.)
    CHECK(fuzz::same_every_way(t) == fuzz::analysis_outcome::same);
    const tree_stats s = build_tree(t);
    auto parent_name = [&](event_index i) -> std::string {
      const event_index p = t.events[i].parent;
      return p == no_event ? std::string("-") : std::string(t.name(t.events[p]));
    };
    CHECK(parent_name(9) == "a3");
    CHECK(parent_name(19) == "b2");
    CHECK(parent_name(29) == "c1");
    CHECK(parent_name(30) == "-");
    CHECK(parent_name(8) == "a7");
    CHECK(s.roots == 4);
    check_children_consistent(t);
  }

  TEST_CASE("build_tree: backward ops on another thread fall back to the forward thread") {
    table_builder b;
    b.annotation("backward()", 0, 1000, 1);
    b.op("AddBackward0", 100, 200, 2).seq(5, 1);
    b.op("aten::add", 110, 150, 2);  // own thread's stack first
    b.op("MulBackward0", 300, 400, 2).seq(4, 1);
    b.op("no fwd tid", 500, 600, 3);
    event_table t = b.take();
    const tree_stats s = build_tree(t);
    CHECK(tree_text(t) ==
          "backward()\n  AddBackward0\n    aten::add\n  MulBackward0\nno fwd tid\n");
    CHECK(s.fallback_parents == 1);  // after that, thread 2 keeps backward() as its base
    table_builder c;
    c.annotation("backward()", 0, 1000, 1);
    c.op("AddBackward0", 100, 200, 2).seq(5, 1);
    event_table nf = c.take();
    build_tree(nf, tree_policy<pid_tid_key, no_fallback>{});
    CHECK(tree_text(nf) == "backward()\nAddBackward0\n");
  }

  TEST_CASE("build_tree: ops that never ended stay open and borrow their parent's end") {
    table_builder b;
    b.annotation("First Annotation", 0, 200);
    b.annotation("Second Annotation", 50, no_end_ns);  // its exit never ran
    b.op("x", 60, 70).op("y", 150, 160);
    b.annotation("orphan", 300, no_end_ns);  // nothing below it ever closes it
    b.op("z", 310, 320);
    event_table t = b.take();
    const tree_stats s = build_tree(t);
    CHECK(tree_text(t) == "First Annotation\n  Second Annotation\n    x\n    y\norphan\n  z\n");
    const auto& second = t[1].get<event_kind::op>();
    CHECK(second.end_ns == 200);
    CHECK((second.flags & op_flag::end_borrowed) != 0);
    CHECK(second.unfinished());
    CHECK(t[4].end_ns() == no_end_ns);
    CHECK(s.borrowed_ends == 1);
    CHECK(s.missing_ends == 1);
    table_builder c;
    c.annotation("First", 0, 200).annotation("Second", 50, no_end_ns);
    event_table keep = c.take();
    build_tree(keep, tree_policy<pid_tid_key, forward_thread_fallback, keep_missing_end>{});
    CHECK(keep[1].end_ns() == no_end_ns);
  }

  TEST_CASE("build_tree: instant events are never parents") {
    table_builder b;
    b.op("A", 0, 100).allocation(1, 64, 5).op("instant op", 20, 20).op("J", 20, 30);
    b.allocation(1, -64, 100);
    event_table t = b.take();
    build_tree(t);
    CHECK(tree_text(t) == "A\n  [memory]\n  instant op\n  J\n  [memory]\n");
  }

  TEST_CASE("build_tree: parents set by a linker are left alone (device subtrees)") {
    table_builder b;
    b.op("aten::mm", 0, 100, 1);
    b.device("cudaLaunchKernel", activity_type::cuda_runtime, 10, 20, 1, 1);
    b.device("gemm", activity_type::kernel, 30, 200, 7, 0);
    b.device("unlinked kernel", activity_type::kernel, 250, 260, 7, 0);
    event_table t = b.take();
    t[1].parent = 0;
    t[1].link = parent_link::external_id;
    t[2].parent = 1;
    t[2].link = parent_link::flow;
    const tree_stats s = build_tree(t);
    CHECK(s.linked_before == 2);
    CHECK(tree_text(t) == "aten::mm\n  cudaLaunchKernel\n    gemm\nunlinked kernel\n");
    CHECK(t[2].link == parent_link::flow);
    build_tree(t);  // idempotent: linker parents survive a rebuild
    CHECK(tree_text(t) == "aten::mm\n  cudaLaunchKernel\n    gemm\nunlinked kernel\n");
  }

  TEST_CASE("build_tree: a linked parent outside the table is replaced by the replay's") {
    table_builder b;
    b.op("aten::mm", 0, 100, 1);
    b.op("aten::add", 10, 20, 1);
    b.op("aten::mul", 30, 40, 1);
    event_table t = b.take();
    t[1].parent = 999;  // a hand-made table: no such event
    t[1].link = parent_link::flow;
    t[2].parent = no_event - 1;
    t[2].link = parent_link::correlation;
    const tree_stats s = build_tree(t);
    CHECK(s.linked_before == 0);
    CHECK(t[1].parent == 0);
    CHECK(t[1].link == parent_link::tree);
    CHECK(t[2].parent == 0);
    CHECK(tree_text(t) == "aten::mm\n  aten::add\n  aten::mul\n");
  }

  TEST_CASE("build_tree: a chain 1,000,000 deep builds and is walked without recursion") {
    constexpr std::int64_t n = 1'000'000;
    event_table t;
    t.events.resize(n);
    const name_id name = t.strings.intern("level");
    for (std::int64_t i = 0; i < n; ++i) {
      auto& e = t.events[static_cast<std::size_t>(i)];
      e.start_ns = i;
      e.tid = 1;
      auto& f = e.fields.emplace<0>();
      f.name = name;
      f.end_ns = 2 * n - i;
    }
    build_tree(t);
    CHECK(t[n - 1].parent == n - 2);
    CHECK(roots(t).size() == 1);
    const auto d = depths(t);
    CHECK(d[n - 1] == n - 1);
    std::size_t visited = 0;
    walk_preorder(t, [&](event_index, std::uint32_t) { ++visited; });
    CHECK(visited == n);
    CHECK(root_of(t, n - 1) == 0);
  }

  TEST_CASE("build_tree: random well-nested forests equal the brute-force enclosing parent") {
    std::mt19937_64 rng(20261122);
    for (int round = 0; round < 400; ++round) {
      const bool hta = round % 2 == 1;
      // The last rounds nest deeply (stacks of up to about 40 frames: the replay counts the
      // top 6 frames that close and walks on down only when all 6 do).
      const unsigned close_odds = round < 300 ? 3 : 9;
      // Build a random forest per thread with known parents, then give it times.
      table_builder b;
      std::vector<event_index> truth;
      for (thread_key tid = 1; tid <= 3; ++tid) {
        struct open_node {
          event_index index;
          std::int64_t start;
        };
        std::vector<open_node> stack;
        std::int64_t clock = static_cast<std::int64_t>(rng() % 5);
        std::int64_t last_close = -1;
        const int steps = 2 + static_cast<int>(rng() % 40);
        for (int s = 0; s < steps || !stack.empty(); ++s) {
          const bool open = s < steps && (stack.empty() || rng() % close_odds != 0);
          if (open) {
            // PyTorch ties: a child may start with its parent (it comes later in the table);
            // siblings never touch. HTA ties: siblings may touch, but an instant exactly at a
            // sibling's end would sit inside that sibling, so it is kept apart.
            const bool instant = rng() % 6 == 0;
            if (instant && clock == last_close) ++clock;
            const auto idx = static_cast<event_index>(b.table().size());
            truth.push_back(stack.empty() ? no_event : stack.back().index);
            b.op("n" + std::to_string(idx), clock, 0, tid);
            if (instant) {
              b.last_op().end_ns = clock;
              // HTA puts an instant inside an event that starts at the same time: keep apart.
              clock += hta ? 1 : static_cast<std::int64_t>(rng() % 2);
            } else {
              stack.push_back({idx, clock});
              clock += static_cast<std::int64_t>(rng() % 3);  // may equal: same-start child
            }
          } else {
            const open_node top = stack.back();
            stack.pop_back();
            if (clock <= top.start) clock = top.start + 1;
            b.table().events[top.index].get<event_kind::op>().end_ns = clock;
            last_close = clock;
            // Next event strictly later (PyTorch) or possibly touching (HTA).
            clock += hta ? static_cast<std::int64_t>(rng() % 2)
                         : 1 + static_cast<std::int64_t>(rng() % 2);
          }
        }
      }
      event_table t = b.take();  // thread by thread: the builder sorts by start itself
      if (round % 8 < 2) CHECK(fuzz::same_every_way(t) == fuzz::analysis_outcome::same);
      if (hta)
        build_tree(t, sibling_ties_tree{});
      else
        build_tree(t);
      // Brute force: the innermost same-thread event that encloses e (latest start; for equal
      // starts the later one in table order for PyTorch, the shorter one for HTA).
      for (std::size_t i = 0; i < t.size(); ++i) {
        const auto& e = t.events[i];
        event_index best = no_event;
        for (std::size_t j = 0; j < t.size(); ++j) {
          const auto& p = t.events[j];
          if (j == i || p.tid != e.tid || p.is_instant()) continue;
          const bool before_in_order =
              hta ? (p.end_ns() > e.end_ns() || (p.end_ns() == e.end_ns() && j < i)) : j < i;
          const bool encloses = p.start_ns <= e.start_ns && e.end_ns() <= p.end_ns() &&
                                (p.start_ns < e.start_ns || before_in_order) &&
                                !(hta && !e.is_instant() && p.end_ns() == e.start_ns);
          if (!encloses) continue;
          if (best == no_event) {
            best = static_cast<event_index>(j);
            continue;
          }
          const auto& q = t.events[best];
          const bool inner =
              p.start_ns > q.start_ns ||
              (p.start_ns == q.start_ns &&
               (hta ? (p.end_ns() < q.end_ns() || (p.end_ns() == q.end_ns() && j > best))
                    : j > best));
          if (inner) best = static_cast<event_index>(j);
        }
        INFO("round " << round << " event " << i);
        REQUIRE(e.parent == best);
        REQUIRE(e.parent == truth[i]);
      }
      check_children_consistent(t);
    }
  }

  TEST_CASE("build_tree: random messy traces equal PyTorch's heap-based algorithm") {
    // Overlapping spans, instants, ops that never end, backward ops with forward-thread
    // fallback, several processes: the fast builder must give PyTorch's exact parents.
    std::mt19937_64 rng(7);
    for (int round = 0; round < tmtest::scaled(400); ++round) {
      table_builder b;
      const int n = 5 + static_cast<int>(rng() % 120);
      for (int i = 0; i < n; ++i) {
        const auto start = static_cast<std::int64_t>(rng() % 200);
        const auto len = static_cast<std::int64_t>(rng() % 60);
        const int kind = static_cast<int>(rng() % 10);
        const thread_key tid = 1 + rng() % 3;
        const process_key pid = rng() % 8 == 0 ? 2 : 1;
        const std::int64_t end = kind == 0 ? no_end_ns : kind == 1 ? start : start + len;
        b.op("e" + std::to_string(i), start, end, tid, pid);
        if (kind >= 7) b.seq(i, 1 + rng() % 3);  // a backward op
      }
      event_table t = b.take();
      // Half the tables out of start order: from the start, or only near the end (the builder
      // tries the table's order first and starts over when it meets an event out of order).
      if (round % 4 == 1) std::shuffle(t.events.begin(), t.events.end(), rng);
      if (round % 4 == 3 && t.size() > 2) std::swap(t.events[t.size() - 1], t.events[t.size() - 3]);
      const testing::reference_tree ref = testing::pytorch_build_tree(t);
      if (round % 4 < 2) CHECK(fuzz::same_every_way(t) == fuzz::analysis_outcome::same);
      build_tree(t);
      INFO("round " << round);
      REQUIRE(parents(t) == ref.parent);
      // Borrowed ends: exactly the unfinished ops PyTorch closes, with the parent's end.
      for (std::size_t i = 0; i < t.size(); ++i) {
        const auto& op = t[static_cast<event_index>(i)].get<event_kind::op>();
        if (!op.unfinished()) continue;
        const bool borrowed = (op.flags & op_flag::end_borrowed) != 0;
        const event_index p = t.events[i].parent;
        const bool expected = ref.finished[i] && p != no_event && t.events[p].end_ns() != no_end_ns;
        CHECK(borrowed == expected);
      }
      check_children_consistent(t);
    }
  }

  TEST_CASE("build_tree: reproduces PyTorch's parent of every event of the 1.13 oracles") {
    for (const char* w : tmtest::oracle_workloads) {
      tmtest::json_doc doc(tmtest::data_path(std::string("pytorch-1.13/") + w + ".oracle.json"));
      tmtest::oracle_tree o = tmtest::load_oracle_tree(doc);
      event_table& t = o.table;
      INFO(w);
      CHECK(fuzz::same_every_way(t) == fuzz::analysis_outcome::same);
      build_tree(t);
      std::size_t mismatches = 0;
      for (std::size_t i = 0; i < t.size(); ++i)
        mismatches += t.events[i].parent != o.parents[i] ? 1 : 0;
      CHECK(mismatches == 0);
      CHECK(t.size() > 0);
      check_children_consistent(t);
    }
  }
}
