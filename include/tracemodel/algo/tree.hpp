// tracemodel/algo — the tree builder.
//
//   tracemodel::build_tree(table);                       // PyTorch's rules
//   tracemodel::build_tree(table, tracemodel::hta_tree{}); // Holistic Trace Analysis' ties
//
// Stack replay over the events sorted by start time, one stack per thread:
//  * an event's parent is the top of its thread's stack once every open event that ended
//    before it started has been closed;
//  * an op whose thread has nothing open falls back to the stack of its forward thread
//    (backward ops on an autograd thread hang under the forward thread's open op);
//  * instant events (end not after start) are never parents;
//  * an op that never ended stays open until something below it closes, and then borrows its
//    parent's end (PyTorch: only when it was closed that way);
//  * events whose parent a linker already set (flows, correlation) are left alone (unless that
//    parent is not an event of the table: such an event is placed like the others).
//
// PyTorch keeps a min-heap of end times and unwinds stacks as ends pass. Closing an event closes
// everything above it on its thread, so the state of a thread's stack at time t is its longest
// prefix with no end before t. Each stack therefore keeps a prefix minimum of its ends and is
// truncated lazily, only when the thread (or the forward thread of an event that falls back to
// it) is used: up to 8 frames deep by counting, without a branch per frame, the frames whose
// prefix minimum is not before t; deeper, by walking down from the top (each frame closes once:
// linear in all). This gives exactly PyTorch's parents, fallback included, without the heap.
// Nothing is recursive: a chain 1,000,000 deep is fine.
//
// Policies (each a type; see the concepts below):
//   ThreadKey   which events share a stack: `pid_tid_key` (default) or `tid_key` (PyTorch keys
//               on the thread alone, which is the same when there is one process)
//   Fallback    `forward_thread_fallback` (default) or `no_fallback`
//   MissingEnd  `borrow_parent_end` (default, PyTorch) or `keep_missing_end`
//   Ties        `ties_child` (default, PyTorch: an event that starts exactly when another ends
//               becomes its child) or `ties_sibling` (HTA: ends at t close before starts at t;
//               an instant event at t stays inside; equal starts open the longer event first)
#pragma once

#include <algorithm>
#include <concepts>
#include <cstdint>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

#include "tracemodel/config.hpp"
#include "tracemodel/detail/big_allocator.hpp"
#include "tracemodel/detail/flat_map.hpp"
#include "tracemodel/detail/radix_sort.hpp"
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

template <class P>
concept thread_key_policy = requires(process_key pid, thread_key tid) {
  { P::key(pid, tid) } -> std::same_as<std::pair<std::uint64_t, std::uint64_t>>;
};
template <class P>
concept fallback_policy = requires(const basic_event<default_schema>& e) {
  { P::thread(e) } -> std::same_as<std::optional<thread_key>>;
};
template <class P>
concept missing_end_policy = requires {
  { P::borrow } -> std::convertible_to<bool>;
};
template <class P>
concept tie_policy = requires {
  { P::close_first } -> std::convertible_to<bool>;
};

template <class ThreadKey = pid_tid_key, class Fallback = forward_thread_fallback,
          class MissingEnd = borrow_parent_end, class Ties = ties_child>
struct tree_policy {
  static_assert(thread_key_policy<ThreadKey>,
                "tracemodel::tree_policy: ThreadKey must model thread_key_policy");
  static_assert(fallback_policy<Fallback>,
                "tracemodel::tree_policy: Fallback must model fallback_policy");
  static_assert(missing_end_policy<MissingEnd>,
                "tracemodel::tree_policy: MissingEnd must model missing_end_policy");
  static_assert(tie_policy<Ties>, "tracemodel::tree_policy: Ties must model tie_policy");
  using thread_key_type = ThreadKey;
  using fallback_type = Fallback;
  using missing_end_type = MissingEnd;
  using ties_type = Ties;
};

using pytorch_tree = tree_policy<>;
using hta_tree = tree_policy<pid_tid_key, forward_thread_fallback, borrow_parent_end, ties_sibling>;

/// What the tree builder did.
struct tree_stats {
  std::size_t events = 0;
  std::size_t roots = 0;
  std::size_t linked_before = 0;   ///< parents set by linkers, left alone
  std::size_t fallback_parents = 0;  ///< parents found on the forward thread
  std::size_t borrowed_ends = 0;     ///< unfinished ops that borrowed their parent's end
  std::size_t missing_ends = 0;      ///< unfinished ops left without an end
};

namespace detail {

struct replay_stack {
  struct frame {
    event_index index;
    std::int64_t min_end;  ///< prefix minimum of the ends of this frame and those below it
  };
  /// Stacks up to this deep close without a branch per frame (see `close_before`).
  static constexpr std::size_t window = 8;
  /// Frames [0, size) are open; the storage only grows, so the `window` first are always
  /// initialised (what lies above `size` is stale and masked).
  std::vector<frame> frames =
      std::vector<frame>(window, frame{no_event, std::numeric_limits<std::int64_t>::max()});
  std::size_t size = 0;
  event_index anchor = no_event;  ///< the top once the frames are gone (forward thread)

  [[nodiscard]] event_index top() const noexcept {
    return size == 0 ? anchor : frames[size - 1].index;
  }
  /// The smallest end among the frames (open frames: the maximum).
  [[nodiscard]] std::int64_t min_end() const noexcept {
    return size == 0 ? std::numeric_limits<std::int64_t>::max() : frames[size - 1].min_end;
  }
  /// Closes every frame from the lowest one whose end is before `t` (or at `t`).
  TRACEMODEL_ALWAYS_INLINE void close_before(std::int64_t t, bool inclusive) {
    // min_end is non-increasing from the bottom: the frames that stay open are the prefix whose
    // min_end is after t (or at t), and counting them needs no early exit. How many close
    // follows no pattern that a branch predictor could learn (threads interleave), so shallow
    // stacks count over the whole window with masks instead of walking down from the top.
    const auto stays = [t, at = static_cast<std::size_t>(!inclusive)](std::int64_t e) {
      return static_cast<std::size_t>(e > t) | (static_cast<std::size_t>(e == t) & at);
    };
    if (size <= window) [[likely]] {
      std::size_t k = 0;
      for (std::size_t j = 0; j < window; ++j)
        k += static_cast<std::size_t>(j < size) & stays(frames[j].min_end);
      size = k;
      return;
    }
    while (size > 0 && !stays(frames[size - 1].min_end)) --size;
  }
  void push(event_index i, std::int64_t end) {
    const std::int64_t below = min_end();
    const frame f{i, end < below ? end : below};
    if (size == frames.size())
      frames.push_back(f);
    else
      frames[size] = f;
    ++size;
  }
};

/// What the replay calls besides its own work (see `build_tree_fn::build`): nothing.
struct no_replay_hook {
  static constexpr bool active = false;
  static int pre(std::size_t) noexcept { return 0; }
  static bool before_fallback(std::size_t) noexcept { return true; }
  static bool rest() noexcept { return true; }
  template <class F>
  static bool finish(F&&) noexcept {
    return true;
  }
};

}  // namespace detail

struct build_tree_fn {
  template <class Schema, class Policy = pytorch_tree>
  tree_stats operator()(basic_event_table<Schema>& t, Policy p = {}) const {
    detail::no_replay_hook hook;
    return build(t, p, hook);
  }

  /// The tree, with a hook into the replay over the table's own order (`analyze` feeds the
  /// device linker from it, so that one read of each event serves both). A hook that is
  /// `active` has, for the replay in table order:
  ///   pre(i)              before row i is placed: 0 goes on, 1 skips it as an event whose
  ///                       linked parent comes later, -1 stops the replay (as for a table
  ///                       out of order)
  ///   before_fallback(i)  before row i's forward thread is read: false stops the replay
  ///   finish(f)           after the replay: calls f(i) for each row skipped by `pre` (its
  ///                       parent set by then, or not: then the replay runs again without
  ///                       the hook, every link being final); false abandons the tree
  ///                       (the caller has failed)
  ///   rest()              when the replay in table order stops: the hook's own work for the
  ///                       rows not reached; false abandons the tree (the caller has failed)
  /// Policies whose ties close first never replay in table order and take no active hook.
  template <class Schema, class Policy, class Hook>
  tree_stats build(basic_event_table<Schema>& t, Policy, Hook& hook) const {
    using key_policy = typename Policy::thread_key_type;
    using fallback = typename Policy::fallback_type;
    constexpr bool close_first = Policy::ties_type::close_first;
    constexpr std::int64_t open = std::numeric_limits<std::int64_t>::max();

    tree_stats stats;  // filled by the replay
    const std::size_t n = t.events.size();

    // The replay reads the table in processing order and writes each parent as it finds it
    // (the event's line is in cache then). Tables are usually sorted by start already
    // (materialized and read tables are): that is tried first, and the first event out of order
    // switches to a computed order (the replay restarts; what it wrote is written again).
    // HTA's ties always need the computed order (equal starts open the longer event first).
    detail::scratch_vector<event_index> parent(n, no_event);
    // Children counts, kept one place to the right of their event (see the children lists
    // below), counted as the replay finds parents.
    detail::scratch_vector<std::uint32_t> offsets(n + 1, 0);
    detail::scratch_vector<event_index> order_storage;
    detail::pair_ids keys;
    std::vector<detail::replay_stack> stacks;
    struct unfinished {
      event_index index;
      bool closes_later;  // PyTorch closes it: a frame with an end is below it
    };
    std::vector<unfinished> missing;
    // A linked parent that is not an event of the table (a hand-made table) is not kept: the
    // event is placed by the replay like any other.
    auto linked_before = [n](const auto& e) {
      return e.link != parent_link::none && e.link != parent_link::tree && e.parent < n;
    };
    auto replay = [&]<bool Hooked>(bool identity) -> bool {
      stats = {};
      stats.events = n;
      stacks.clear();
      missing.clear();
      std::int64_t last_start = std::numeric_limits<std::int64_t>::min();
      // Locals: the compiler cannot keep the arrays' addresses in registers across the stores
      // into events when it reaches them through the captured vectors.
      auto* const events = t.events.data();
      event_index* const parents = parent.data();
      std::uint32_t* const counts = offsets.data();
      const event_index* const order = order_storage.data();
      std::size_t linked = 0, fallbacks = 0;
      for (std::size_t r = 0; r < n; ++r) {
        const event_index i = identity ? static_cast<event_index>(r) : order[r];
        auto& e = events[i];
        if (identity) {
          if (e.start_ns < last_start) return false;
          last_start = e.start_ns;
          if constexpr (Hooked) {
            const int h = hook.pre(r);
            if (h < 0) return false;
            if (h > 0) continue;  // placed by its link after the replay
          }
        }
        if (linked_before(e)) {
          parents[i] = e.parent;
          ++counts[e.parent + std::size_t{1}];
          ++linked;
          continue;
        }
        const std::int64_t end_ns = e.end_ns();
        const std::int64_t end = end_ns == no_end_ns ? open : end_ns;
        const bool instant = end != open && end <= e.start_ns;
        const auto [a, b] = key_policy::key(e.pid, e.tid);
        const std::uint32_t thread = keys.id(a, b);
        if (thread >= stacks.size()) stacks.resize(thread + 1);
        detail::replay_stack& s = stacks[thread];
        s.close_before(e.start_ns, close_first && !instant);
        event_index p = s.top();
        bool fell_back = false;
        if (p == no_event) {
          if constexpr (Hooked)
            if (!hook.before_fallback(r)) return false;
          if (const std::optional<thread_key> fwd = fallback::thread(e)) {
            const auto [fa, fb] = key_policy::key(e.pid, *fwd);
            const std::uint32_t id = keys.find(fa, fb);
            if (id != detail::pair_ids::no_id && id < stacks.size()) {
              detail::replay_stack& f = stacks[id];
              f.close_before(e.start_ns, close_first && !instant);
              p = f.top();
              fell_back = p != no_event;
            }
          }
        }
        parents[i] = p;
        if (p != no_event) ++counts[p + std::size_t{1}];
        e.parent = p;
        e.link = p == no_event ? parent_link::none : parent_link::tree;
        fallbacks += fell_back ? 1 : 0;
        if (instant) continue;
        if (end == open) missing.push_back({i, s.min_end() != open});
        if (s.size == 0 && fell_back) s.anchor = p;
        s.push(i, end);
      }
      stats.linked_before = linked;
      stats.fallback_parents = fallbacks;
      return true;
    };
    static_assert(!(Hook::active && close_first),
                  "build_tree: a replay hook needs the replay in table order");
    bool in_order = false;
    if constexpr (!close_first) {
      in_order = replay.template operator()<Hook::active>(true);
      if constexpr (Hook::active) {
        if (in_order) {
          // The rows whose links were not final: counted as linked now, or, for one that
          // found no parent (the replay skipped it, but it needs a place by nesting), the
          // replay again in full with every link final.
          bool again = false;
          const bool go_on = hook.finish([&](event_index w) {
            const event_index p = t.events[w].parent;
            if (p == no_event) {
              again = true;
            } else if (!again) {
              parent[w] = p;
              ++offsets[p + std::size_t{1}];
              ++stats.linked_before;
            }
          });
          if (!go_on) return stats;
          if (again) {
            std::fill(parent.begin(), parent.end(), no_event);
            std::fill(offsets.begin(), offsets.end(), 0);
            replay.template operator()<false>(true);
          }
        } else if (!hook.rest()) {
          return stats;
        }
      }
    }
    if (!in_order) {
      order_storage = detail::start_order(t.events);
      if constexpr (close_first) {
        auto end_of = [&](event_index x) {
          const std::int64_t e = t.events[x].end_ns();
          return e == no_end_ns ? open : e;
        };
        for (std::size_t a = 0; a < n;) {
          std::size_t b = a + 1;
          while (b < n && t.events[order_storage[b]].start_ns == t.events[order_storage[a]].start_ns) ++b;
          if (b - a > 1)
            std::stable_sort(order_storage.begin() + static_cast<std::ptrdiff_t>(a),
                             order_storage.begin() + static_cast<std::ptrdiff_t>(b),
                             [&](event_index x, event_index y) { return end_of(x) > end_of(y); });
          a = b;
        }
      }
      std::fill(parent.begin(), parent.end(), no_event);
      std::fill(offsets.begin(), offsets.end(), 0);
      replay.template operator()<false>(false);
    }
    const bool identity = order_storage.empty();
    auto at = [&](std::size_t r) -> event_index {
      return identity ? static_cast<event_index>(r) : order_storage[r];
    };
    stacks = {};

    // Children lists, in processing order (start time, then table order), and their offsets
    // (the table's `child_offsets`; no pass over the events writes children ranges). The
    // counts are kept one place to the right, so that filling the lists leaves each entry at
    // the end of its event's children, which is where the next event's begin.
    std::uint32_t total = 0;
    for (std::size_t k = 0; k <= n; ++k) {
      const std::uint32_t c = offsets[k];
      offsets[k] = total;
      total += c;
    }
    t.children.assign(total, no_event);
    for (std::size_t r = 0; r < n; ++r) {
      const event_index i = at(r);
      if (parent[i] == no_event) {
        ++stats.roots;
        continue;
      }
      t.children[offsets[parent[i] + std::size_t{1}]++] = i;
    }
    t.child_offsets = std::move(offsets);

    // Ends of ops that never ended (parents come first in processing order).
    for (const unfinished& u : missing) {
      auto* op = t.events[u.index].template get_if<event_kind::op>();
      if (op == nullptr) continue;
      const event_index p = t.events[u.index].parent;
      bool borrow = false;
      if constexpr (Policy::missing_end_type::borrow) borrow = u.closes_later && p != no_event;
      const std::int64_t parent_end = borrow ? t.events[p].end_ns() : no_end_ns;
      if (parent_end != no_end_ns) {
        op->end_ns = parent_end < t.events[u.index].start_ns ? t.events[u.index].start_ns : parent_end;
        op->flags |= op_flag::end_borrowed;
        ++stats.borrowed_ends;
      } else {
        ++stats.missing_ends;
      }
    }
    return stats;
  }
};

/// Builds the call tree of an event table (see the header comment).
inline constexpr build_tree_fn build_tree{};

TRACEMODEL_END_NAMESPACE
