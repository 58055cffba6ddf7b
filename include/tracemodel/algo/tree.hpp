// tracemodel/algo — the tree builder.
//
//   tracemodel::build_tree(table);                                   // PyTorch's rules
//   tracemodel::build_tree(table, tracemodel::sibling_ties_tree{});  // ties close first
//
// Every event of the table is visited in order of start time (equal starts in table order; with
// ties that close first, the longer event first), with one stack of open events per thread:
//  1. an event whose parent a linker already set (flows, correlation ids) keeps it and opens
//     nothing (unless that parent is not an event of the table: then it is placed as the others);
//  2. an event ends what ended before it started: closing an event closes everything above it
//     on its thread's stack;
//  3. its parent is then the top of its thread's stack; an op whose thread has nothing open
//     falls back to the stack of its forward thread (backward ops on an autograd thread hang
//     under the forward thread's open op), and from then on that parent stands at the bottom of
//     its own thread's stack, as in PyTorch;
//  4. it opens on its thread's stack unless it is an instant event (end not after start);
//  5. an op that never ended stays open until something below it closes, and then borrows its
//     parent's end (PyTorch: only when it was closed that way);
//  6. an op whose depth was recorded (`extra_fields<op>::depth`: how many ops of its thread
//     were open when it began) nests as its begin and end calls did whatever the clock read:
//     on its own thread's stack, an end equal to its start closes nothing by itself, the
//     recorded ops as deep as it or deeper close (with everything above them), and it opens
//     even when its end is not after its start (an op of a table read from a file has no
//     recorded depth: the times decide, with the tie rule).
// What it writes: each event's `parent` and `link` (`parent_link::tree`, or none for a root),
// except those a linker placed; the table's children lists (`children_of(i)`, in the order
// above); the end of each op that borrowed one (`end_ns`, with `op_flag::end_borrowed`). It
// returns `tree_stats`. Nothing is recursive: a chain 1,000,000 deep is fine.
//
// Rule 2 in linear time: a stack's state at time t is its longest prefix of frames that did
// not end before t, so each frame keeps the smallest end of itself and the frames below it,
// and a thread's stack is cut when the thread is next used (each frame is cut once).
//
// Policies (a `tree_policy<ThreadKey, Fallback, MissingEnd, Ties>`; concepts in
// algo/concepts.hpp):
//   ThreadKey   which events share a stack: `pid_tid_key` (default) or `tid_key` (PyTorch keys
//               on the thread alone, which is the same when there is one process)
//   Fallback    `forward_thread_fallback` (default) or `no_fallback`
//   MissingEnd  `borrow_parent_end` (default, PyTorch) or `keep_missing_end`
//   Ties        `ties_child` (default, PyTorch: an event that starts exactly when another ends
//               becomes its child) or `ties_sibling` (ends at t close before starts at t; an
//               instant event at t stays inside; equal starts open the longer event first)
//
// `analyze` (algo/analyze.hpp) builds the same tree faster, fused with the linkers.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "tracemodel/algo/concepts.hpp"
#include "tracemodel/config.hpp"
#include "tracemodel/detail/big_allocator.hpp"
#include "tracemodel/model/table.hpp"

TRACEMODEL_BEGIN_NAMESPACE

// ---- policies -------------------------------------------------------------------------------

/// Events of one (pid, tid) share a stack.
struct pid_tid_key {
  static std::pair<std::uint64_t, std::uint64_t> key(process_key pid, thread_key tid) noexcept {
    return {static_cast<std::uint64_t>(pid), tid};
  }
};
/// Events of one tid share a stack, whatever their process (PyTorch's literal rule).
struct tid_key {
  static std::pair<std::uint64_t, std::uint64_t> key(process_key, thread_key tid) noexcept {
    return {0, tid};
  }
};

/// An op with nothing open on its thread hangs under its forward thread's open event.
struct forward_thread_fallback {
  template <class Event>
  static std::optional<thread_key> thread(const Event& e) noexcept {
    if (const auto* op = e.template get_if<event_kind::op>())
      if (op->fwd_thread_id > 0) return op->fwd_thread_id;
    return std::nullopt;
  }
};
struct no_fallback {
  template <class Event>
  static std::optional<thread_key> thread(const Event&) noexcept {
    return std::nullopt;
  }
};

struct borrow_parent_end {
  static constexpr bool borrow = true;
};
struct keep_missing_end {
  static constexpr bool borrow = false;
};

struct ties_child {
  static constexpr bool close_first = false;
};
struct ties_sibling {
  static constexpr bool close_first = true;
};

template <class ThreadKey = pid_tid_key, class Fallback = forward_thread_fallback,
          class MissingEnd = borrow_parent_end, class Ties = ties_child>
struct tree_policy {
  using policy_kind = tree_policy_kind;
  using thread_key_type = ThreadKey;
  using fallback_type = Fallback;
  using missing_end_type = MissingEnd;
  using ties_type = Ties;
};

using pytorch_tree = tree_policy<>;
/// PyTorch's rules but for ties, which close first (`ties_sibling`).
using sibling_ties_tree =
    tree_policy<pid_tid_key, forward_thread_fallback, borrow_parent_end, ties_sibling>;

/// What the tree builder did.
struct tree_stats {
  std::size_t events = 0;
  std::size_t roots = 0;
  std::size_t linked_before = 0;     ///< parents set by linkers, left alone
  std::size_t fallback_parents = 0;  ///< parents found on the forward thread
  std::size_t borrowed_ends = 0;     ///< unfinished ops that borrowed their parent's end
  std::size_t missing_ends = 0;      ///< unfinished ops left without an end
};

namespace detail {
/// An op's recorded depth (rule 6 of the tree builder), or `unknown_depth`.
template <class Event>
[[nodiscard]] constexpr std::uint16_t recorded_depth(const Event& e) noexcept {
  if (const auto* op = e.template get_if<event_kind::op>()) return op->depth;
  return unknown_depth;
}

/// Among events with equal starts when ties close first: ops whose depth was recorded first, in
/// table order (the order they began), then the others, the longer first. Ops that never ended
/// count as the longest.
template <class Schema>
struct equal_start_order {
  const basic_event_table<Schema>& t;
  [[nodiscard]] std::int64_t key(event_index i) const noexcept {
    const auto& e = t.events[i];
    if (recorded_depth(e) != unknown_depth) return std::numeric_limits<std::int64_t>::min();
    const std::int64_t end = e.end_ns();
    return end == no_end_ns ? std::numeric_limits<std::int64_t>::min() + 1 : -end;
  }
  bool operator()(event_index a, event_index b) const noexcept { return key(a) < key(b); }
};

/// The order in which the tree builder visits events: by start time, equal starts in table
/// order, or (`close_first`) as `equal_start_order` says.
template <bool CloseFirst, class Schema>
scratch_vector<event_index> tree_order(const basic_event_table<Schema>& t) {
  scratch_vector<event_index> order(t.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<event_index>(i);
  const equal_start_order<Schema> equal{t};
  auto before = [&](event_index a, event_index b) {
    const std::int64_t sa = t.events[a].start_ns, sb = t.events[b].start_ns;
    if (sa != sb) return sa < sb;
    return CloseFirst && equal(a, b);
  };
  if (!std::is_sorted(order.begin(), order.end(), before))  // (tables usually are)
    std::stable_sort(order.begin(), order.end(), before);
  return order;
}
}  // namespace detail

struct build_tree_fn {
  template <class Schema, class Policy = pytorch_tree>
  tree_stats operator()(basic_event_table<Schema>& t, Policy = {}) const {
    if constexpr (detail::check_tree_policy<Policy>())
      return build<Policy>(t);
    else
      return {};
  }

 private:
  template <class Policy, class Schema>
  static tree_stats build(basic_event_table<Schema>& t) {
    using key_policy = typename Policy::thread_key_type;
    using fallback = typename Policy::fallback_type;
    constexpr bool close_first = Policy::ties_type::close_first;
    constexpr std::int64_t open = std::numeric_limits<std::int64_t>::max();  // never ended
    const std::size_t n = t.size();
    tree_stats stats;
    stats.events = n;

    struct frame {
      event_index event;
      std::uint16_t depth;   // the nearest recorded op's at or below it (unknown_depth: none)
      std::int64_t min_end;  // the smallest end of this frame and of those below it
    };
    struct thread_stack {
      std::vector<frame> frames;
      event_index bottom = no_event;  // the parent an empty stack gives (rule 3)
      [[nodiscard]] event_index top() const {
        return frames.empty() ? bottom : frames.back().event;
      }
      [[nodiscard]] std::int64_t min_end() const {
        return frames.empty() ? open : frames.back().min_end;
      }
      [[nodiscard]] std::uint16_t depth() const {
        return frames.empty() ? unknown_depth : frames.back().depth;
      }
      // Rule 6: the recorded ops at depth `d` or deeper close (recorded depths grow up the
      // stack), and everything above them.
      void close_depth(std::uint16_t d) {
        while (!frames.empty() && frames.back().depth != unknown_depth && frames.back().depth >= d)
          frames.pop_back();
      }
      // Rule 2: the frames that ended before t (or at t) close, and everything above them.
      void close_before(std::int64_t t, bool at_t_too) {
        while (!frames.empty() &&
               (frames.back().min_end < t || (at_t_too && frames.back().min_end == t)))
          frames.pop_back();
      }
    };
    std::map<std::pair<std::uint64_t, std::uint64_t>, thread_stack> stacks;
    struct unfinished {
      event_index event;
      bool closes_later;  // a frame with an end was below it: PyTorch closes it with that one
    };
    std::vector<unfinished> never_ended;
    detail::scratch_vector<event_index> parent(n, no_event);  // (large arrays: memory.hpp)

    const detail::scratch_vector<event_index> order = detail::tree_order<close_first>(t);
    for (const event_index i : order) {
      auto& e = t.events[i];
      // Rule 1.
      if (e.link != parent_link::none && e.link != parent_link::tree && e.parent < n) {
        parent[i] = e.parent;
        ++stats.linked_before;
        continue;
      }
      const std::int64_t end = e.end_ns() == no_end_ns ? open : e.end_ns();
      const std::uint16_t depth = detail::recorded_depth(e);
      const bool instant = end != open && end <= e.start_ns && depth == unknown_depth;
      // Rule 2 (with ties that close first, what ends at the start closes too, unless the event
      // is an instant at that time or an op whose depth was recorded: rule 6).
      const bool at_t_too = close_first && !instant;
      thread_stack& own = stacks[key_policy::key(e.pid, e.tid)];
      own.close_before(e.start_ns, at_t_too && depth == unknown_depth);
      if (depth != unknown_depth) own.close_depth(depth);
      // Rule 3.
      event_index p = own.top();
      bool fell_back = false;
      if (p == no_event) {
        if (const std::optional<thread_key> fwd = fallback::thread(e)) {
          if (auto it = stacks.find(key_policy::key(e.pid, *fwd)); it != stacks.end()) {
            it->second.close_before(e.start_ns, at_t_too);
            p = it->second.top();
            fell_back = p != no_event;
          }
        }
      }
      parent[i] = p;
      e.parent = p;
      e.link = p == no_event ? parent_link::none : parent_link::tree;
      if (fell_back) ++stats.fallback_parents;
      // Rule 4.
      if (instant) continue;
      if (end == open) never_ended.push_back({i, own.min_end() != open});
      if (own.frames.empty() && fell_back) own.bottom = p;
      own.frames.push_back(
          {i, depth != unknown_depth ? depth : own.depth(), std::min(end, own.min_end())});
    }

    // The children lists, in the order of the visit.
    t.child_offsets.assign(n + 1, 0);
    for (const event_index i : order) {
      if (parent[i] == no_event)
        ++stats.roots;
      else
        ++t.child_offsets[parent[i] + std::size_t{1}];
    }
    for (std::size_t k = 0; k < n; ++k) t.child_offsets[k + 1] += t.child_offsets[k];
    t.children.assign(t.child_offsets[n], no_event);
    detail::scratch_vector<std::uint32_t> next(t.child_offsets.begin(), t.child_offsets.end() - 1);
    for (const event_index i : order)
      if (parent[i] != no_event) t.children[next[parent[i]]++] = i;

    // Rule 5, in the order of the visit (a parent's end is borrowed before its children's).
    for (const unfinished& u : never_ended) {
      auto* op = t.events[u.event].template get_if<event_kind::op>();
      if (op == nullptr) continue;
      const event_index p = t.events[u.event].parent;
      const bool borrow = Policy::missing_end_type::borrow && u.closes_later && p != no_event;
      const std::int64_t parent_end = borrow ? t.events[p].end_ns() : no_end_ns;
      if (parent_end == no_end_ns) {
        ++stats.missing_ends;
        continue;
      }
      op->end_ns = std::max(parent_end, t.events[u.event].start_ns);
      op->flags |= op_flag::end_borrowed;
      ++stats.borrowed_ends;
    }
    return stats;
  }
};

/// Builds the call tree of an event table (see the header comment).
inline constexpr build_tree_fn build_tree{};

TRACEMODEL_END_NAMESPACE
