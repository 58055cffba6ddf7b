// tracemodel/algo/detail — the tree builder's replay as `analyze` runs it.
//
// The same rules as `build_tree` (algo/tree.hpp), with what makes them fast on large tables:
//  * Each stack keeps a prefix minimum of its ends and is truncated lazily, only when its thread
//    (or the forward thread of an event that falls back to it) is used: the top 6 frames by
//    counting, without a branch per frame, those whose prefix minimum is before t (sentinel
//    frames below the bottom never count); when all 6 close, by walking on down.
//  * A hook into the replay in table order, through which `analyze` feeds the device linker
//    (one read of each event for both) and waits for the forward/backward pass on its other
//    thread (see `replay_tree` below and algo/detail/engine.hpp).
//  * Chunks: the table in chunks of rows, each thread's rows of a chunk in turn, so that the
//    branches follow one thread's pattern instead of the interleaving of threads.
// Tests hold it equal to `build_tree` (tests/fuzz/analyze_check.hpp, on random tables, on every
// real trace of tests/data and on the fuzz inputs).
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <concepts>
#include <cstdint>
#include <limits>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include "tracemodel/algo/tree.hpp"
#include "tracemodel/config.hpp"
#include "tracemodel/detail/big_allocator.hpp"
#include "tracemodel/detail/flat_map.hpp"
#include "tracemodel/detail/radix_sort.hpp"
#include "tracemodel/model/table.hpp"

TRACEMODEL_BEGIN_NAMESPACE
namespace detail {

struct replay_stack {
  struct frame {
    event_index index;
    std::uint16_t depth;   ///< the nearest recorded op's at or below it (unknown_depth: none)
    std::int64_t min_end;  ///< prefix minimum of the ends of this frame and those below it
  };
  /// Closing looks at this many frames from the top without a branch per frame (see
  /// `close_before`).
  static constexpr std::size_t window = 6;
  static constexpr std::int64_t never = std::numeric_limits<std::int64_t>::max();
  /// `window` sentinel frames, then the open frames [0, size) (`at(k)`). The sentinels never
  /// close (their end is `never`), and the one just below the frames holds the anchor: the
  /// top once the frames are gone (a fall-back's parent on the forward thread).
  std::vector<frame> slots = std::vector<frame>(window, frame{no_event, unknown_depth, never});
  std::size_t size = 0;
  std::size_t room = 0;  ///< frames the slots hold without growing (slots.size() - window)

  [[nodiscard]] const frame& at(std::ptrdiff_t k) const noexcept {
    return slots[static_cast<std::size_t>(static_cast<std::ptrdiff_t>(window) + k)];
  }
  [[nodiscard]] event_index top() const noexcept {
    return at(static_cast<std::ptrdiff_t>(size) - 1).index;
  }
  void set_anchor(event_index i) noexcept { slots[window - 1].index = i; }
  /// The smallest end among the frames (no frames: `never`).
  [[nodiscard]] std::int64_t min_end() const noexcept {
    return at(static_cast<std::ptrdiff_t>(size) - 1).min_end;
  }
  /// Closes every frame from the lowest one whose end is before `t` (or at `t`).
  TRACEMODEL_ALWAYS_INLINE void close_before(std::int64_t t, bool inclusive) {
    // min_end is non-increasing from the bottom: the frames that close are a suffix, those
    // whose min_end is before t (or at t). How many close follows no pattern that a branch
    // predictor could learn (threads interleave), so the top `window` frames are counted with
    // no branch per frame (the sentinels below the frames never count); only when all of them
    // close does the walk go on down, one frame at a time.
    const auto closes = [t, at_t = static_cast<std::size_t>(inclusive)](std::int64_t e) {
      return static_cast<std::size_t>(e < t) | (static_cast<std::size_t>(e == t) & at_t);
    };
    const frame* const top =
        slots.data() + static_cast<std::ptrdiff_t>(size) + static_cast<std::ptrdiff_t>(window) - 1;
    std::size_t c = 0;
    for (std::size_t d = 0; d < window; ++d)
      c += closes(top[-static_cast<std::ptrdiff_t>(d)].min_end);
    size -= c;
    if (c == window) [[unlikely]]
      while (size > 0 && closes(at(static_cast<std::ptrdiff_t>(size) - 1).min_end)) --size;
  }
  /// Closes the recorded ops at depth `d` or deeper and everything above them (recorded depths
  /// grow up the stack; the sentinels have none).
  void close_depth(std::uint16_t d) noexcept {
    while (size > 0) {
      const std::uint16_t top_depth = at(static_cast<std::ptrdiff_t>(size) - 1).depth;
      if (top_depth == unknown_depth || top_depth < d) break;
      --size;
    }
  }
  /// Opens event `i`, ending at `end`, an op of recorded depth `depth` or not (unknown_depth).
  void push(event_index i, std::int64_t end, std::uint16_t depth) {
    const frame& under = at(static_cast<std::ptrdiff_t>(size) - 1);
    const std::int64_t below = under.min_end;
    const frame f{i, depth != unknown_depth ? depth : under.depth, end < below ? end : below};
    if (size == room) {
      slots.push_back(f);
      ++room;
    } else {
      slots[size + window] = f;
    }
    ++size;
  }
};

/// What the replay calls besides its own work (see `replay_tree`): nothing.
struct no_replay_hook {
  static constexpr bool active = false;
  static int pre(std::size_t) noexcept { return 0; }
  static bool before_fallback(std::size_t) noexcept { return true; }
  static void begin_chunk(std::size_t, std::size_t) noexcept {}
  template <class F>
  static void end_chunk(F&&) noexcept {}
  static void stopped_at(std::size_t) noexcept {}
  static bool rest() noexcept { return true; }
  template <class F>
  static bool finish(F&&) noexcept {
    return true;
  }
};

/// A hook into the replay (see `replay_tree`): the callbacks every hook has.
template <class H>
concept replay_hook = requires(H& h, std::size_t r, void (*each)(event_index),
                               void (*moved)(event_index, event_index, event_index)) {
  { H::active } -> std::convertible_to<bool>;
  { h.pre(r) } -> std::convertible_to<int>;
  { h.before_fallback(r) } -> std::convertible_to<bool>;
  { h.finish(each) } -> std::convertible_to<bool>;
  { h.rest() } -> std::convertible_to<bool>;
  h.begin_chunk(r, r);
  h.end_chunk(moved);
  h.stopped_at(r);
};
static_assert(replay_hook<no_replay_hook>);

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
/// and, when `chunk` is not 0 (the rows of the table in chunks of this many, each thread's
/// rows of a chunk in turn: see the replay):
///   begin_chunk(i, k)   rows [i, i + k) come next, in any order
///   end_chunk(f)        they all came; f(i, from, to) moves row i's linked parent
///   stopped_at(i)       the replay stopped: every row before i was given to `pre`, and
///                       none after (`rest` goes on from there)
/// and, optionally, with `pid_tid_key`:
///   row_threads(end)    null, or one byte per row, valid below `end`: the row's (pid, tid)
///                       numbered in order of first appearance (the stacks' numbering),
///                       0xff for one not known (the replay looks those up)
/// Policies whose ties close first never replay in table order and take no active hook.
template <class Schema, class Policy, class Hook>
class tree_replay {
  using key_policy = typename Policy::thread_key_type;
  using fallback = typename Policy::fallback_type;
  static constexpr bool close_first = Policy::ties_type::close_first;
  static constexpr std::int64_t open = std::numeric_limits<std::int64_t>::max();
  /// What placing a row answers: go on, stop (the hook said so), or a chunked replay's `ready`
  /// answers (see `ready`).
  static constexpr int go_on = 0, stop = 1, conflict = 2, behind = 3;
  /// The chunked replay's lists: each stack's rows of a chunk (stacks beyond the lists put
  /// their chunk in table order).
  static constexpr std::uint32_t lists = 16;
  static constexpr std::uint32_t no_list = lists;

 public:
  tree_replay(basic_event_table<Schema>& t, Hook& hook, std::size_t chunk)
      : t_(t),
        hook_(hook),
        chunk_(chunk),
        n_(t.events.size()),
        parent_(n_, no_event),
        offsets_(n_ + 1, 0) {
    static_assert(replay_hook<Hook>);
    static_assert(!(Hook::active && close_first),
                  "build_tree: a replay hook needs the replay in table order");
  }

  /// The replay in table order first (tables usually are sorted by start: materialized and
  /// read tables are), with the hook; the first event out of order switches to a computed
  /// order (the replay restarts; what it wrote is written again). Ties that close first always
  /// need the computed order (equal starts open the longer first). Then the children lists and
  /// the ends unfinished ops borrow.
  tree_stats run() {
    bool in_order = false;
    if constexpr (!close_first) {
      in_order = replay_table_order();
      if constexpr (Hook::active) {
        if (in_order ? !hook_finish() : !hook_.rest()) return stats_;  // the caller failed
      }
    }
    if (!in_order) replay_computed_order();
    stacks_ = {};
    children_lists();
    borrow_ends();
    return stats_;
  }

 private:
  struct unfinished {
    event_index index;
    bool closes_later;  // PyTorch closes it: a frame with an end is below it
  };
  /// One pass of the replay: the arrays it writes, as locals (the compiler cannot keep the
  /// arrays' addresses in registers across the stores into events when it reaches them
  /// through the members), and its counts.
  struct pass {
    typename basic_event_table<Schema>::event_type* events;
    event_index* parents;
    std::uint32_t* counts;
    std::size_t linked = 0, fallbacks = 0;
    std::size_t stepped;  // a row given to the hook already (a chunk's row placed again)
    std::int64_t last_start = std::numeric_limits<std::int64_t>::min();
  };
  pass begin_pass() {
    stats_ = {};
    stats_.events = n_;
    stacks_.clear();
    missing_.clear();
    return {t_.events.data(), parent_.data(), offsets_.data(), 0, 0, n_};
  }
  void end_pass(const pass& p) {
    stats_.linked_before = p.linked;
    stats_.fallback_parents = p.fallbacks;
  }

  /// Row `r` (event `i`) on its thread's stack (`thread_of()`). A fall-back asks
  /// `ready(id, r)` before it reads stack `id`. Returns `go_on`, `stop` (the hook said so), or
  /// what `ready` answered (not ready: nothing written for the row but the hook's step).
  template <bool Hooked, class ThreadOf, class Ready>
  TRACEMODEL_ALWAYS_INLINE int place(pass& ps, std::size_t r, event_index i, ThreadOf&& thread_of,
                                     Ready&& ready) {
    auto& e = ps.events[i];
    if constexpr (Hooked) {
      if (r != ps.stepped) {
        const int h = hook_.pre(r);
        if (h < 0) return stop;
        if (h > 0) return go_on;  // placed by its link after the replay
      }
    }
    // A linked parent that is not an event of the table (a hand-made table) is not kept: the
    // event is placed by the replay like any other.
    if (e.link != parent_link::none && e.link != parent_link::tree && e.parent < n_) {
      ps.parents[i] = e.parent;
      ++ps.counts[e.parent + std::size_t{1}];
      ++ps.linked;
      return go_on;
    }
    const std::int64_t end_ns = e.end_ns();
    const std::int64_t end = end_ns == no_end_ns ? open : end_ns;
    const std::uint16_t depth = recorded_depth(e);  // (rule 6 of build_tree)
    const bool instant = end != open && end <= e.start_ns && depth == unknown_depth;
    replay_stack& s = stacks_[thread_of()];
    s.close_before(e.start_ns, close_first && !instant && depth == unknown_depth);
    if (depth != unknown_depth) s.close_depth(depth);
    event_index p = s.top();
    bool fell_back = false;
    if (p == no_event) {
      if constexpr (Hooked)
        if (!hook_.before_fallback(r)) return stop;
      if (const std::optional<thread_key> fwd = fallback::thread(e)) {
        const auto [fa, fb] = key_policy::key(e.pid, *fwd);
        const std::uint32_t id = keys_.find(fa, fb);
        if (id != pair_ids::no_id && id < stacks_.size()) {
          if (const int w = ready(id, r); w != go_on) return w;
          replay_stack& f = stacks_[id];
          f.close_before(e.start_ns, close_first && !instant);
          p = f.top();
          fell_back = p != no_event;
        }
      }
    }
    ps.parents[i] = p;
    if (p != no_event) ++ps.counts[p + std::size_t{1}];
    e.parent = p;
    e.link = p == no_event ? parent_link::none : parent_link::tree;
    ps.fallbacks += fell_back ? 1 : 0;
    if (instant) return go_on;
    if (end == open) missing_.push_back({i, s.min_end() != open});
    if (s.size == 0 && fell_back) s.set_anchor(p);
    s.push(i, end, depth);
    return go_on;
  }

  /// The stack of a row, looked up (and made) by its (pid, tid).
  std::uint32_t stack_of(const typename basic_event_table<Schema>::event_type& e) {
    const auto [a, b] = key_policy::key(e.pid, e.tid);
    const std::uint32_t thread = keys_.id(a, b);
    if (thread >= stacks_.size()) stacks_.resize(thread + 1);
    return thread;
  }

  /// The replay row by row, in table order (`identity`: false at the first row out of order)
  /// or in the computed order.
  template <bool Hooked>
  bool replay_rows(bool identity) {
    pass ps = begin_pass();
    const event_index* const order = order_.data();
    const auto always_ready = [](std::uint32_t, std::size_t) { return go_on; };
    for (std::size_t r = 0; r < n_; ++r) {
      const event_index i = identity ? static_cast<event_index>(r) : order[r];
      const auto& e = ps.events[i];
      if (identity) {
        if (e.start_ns < ps.last_start) return false;
        ps.last_start = e.start_ns;
      }
      if (place<Hooked>(
              ps, r, i, [&] { return stack_of(e); }, always_ready) != go_on)
        return false;
    }
    end_pass(ps);
    return true;
  }

  bool replay_table_order() {
    if constexpr (Hook::active) {
      if (chunk_ > 0) {
        chunk_rows_.resize(lists * chunk_);
        return replay_chunks();
      }
      return replay_rows<true>(true);
    } else {
      return replay_rows<false>(true);
    }
  }

  /// After the replay in table order: the rows whose links were not final, counted as linked
  /// now, or, for one that found no parent (the replay skipped it, but it needs a place by
  /// nesting), the replay again in full with every link final. False: the caller failed.
  bool hook_finish() {
    bool again = false;
    const bool go = hook_.finish([&](event_index w) {
      const event_index p = t_.events[w].parent;
      if (p == no_event) {
        again = true;
      } else if (!again) {
        parent_[w] = p;
        ++offsets_[p + std::size_t{1}];
        ++stats_.linked_before;
      }
    });
    if (!go) return false;
    if (again) {
      std::fill(parent_.begin(), parent_.end(), no_event);
      std::fill(offsets_.begin(), offsets_.end(), 0);
      replay_rows<false>(true);
    }
    return true;
  }

  /// The replay in order of start time (and, when ties close first, equal starts by
  /// `equal_start_order`).
  void replay_computed_order() {
    order_ = start_order(t_.events);
    if constexpr (close_first) {
      const equal_start_order<Schema> equal{t_};
      for (std::size_t a = 0; a < n_;) {
        std::size_t b = a + 1;
        while (b < n_ && t_.events[order_[b]].start_ns == t_.events[order_[a]].start_ns) ++b;
        if (b - a > 1)
          std::stable_sort(order_.begin() + static_cast<std::ptrdiff_t>(a),
                           order_.begin() + static_cast<std::ptrdiff_t>(b), equal);
        a = b;
      }
    }
    std::fill(parent_.begin(), parent_.end(), no_event);
    std::fill(offsets_.begin(), offsets_.end(), 0);
    replay_rows<false>(false);
  }

  // ---- the chunked replay ---------------------------------------------------------------
  // Chunk by chunk. Pass 1 (`sort_chunk`), a tight loop over the chunk: the order check, each
  // row's stack, and the row into its thread's list. Pass 2 (`replay_lists`): each thread's rows
  // in turn, the threads with ops first (the later one first: a backward thread falls back to
  // the forward thread that appeared before it), then those without (device streams: what
  // launched their activities was stepped then). The branches then follow one thread's
  // regular pattern instead of the interleaving of threads. The result is the same:
  //  * the device linker takes rows in any order inside a chunk (see its `begin_chunk`);
  //  * a fall-back must read its stack as table order leaves it at its row: if that thread's
  //    list has rows before it not replayed yet, they are replayed first (one level: a
  //    fall-back among them that needs the same is a conflict); if rows after it were
  //    replayed already (a `conflict`), the replay stops, and the tree is replayed again in a
  //    computed order once every link is final;
  //  * a chunk whose rows use stacks beyond the lists goes in table order;
  //  * the children lists and the counts are order-free, and the unfinished ops are put back
  //    in table order at the end.
  // The next chunk's rows are asked for during pass 2 (else pass 1 waits on memory).

  /// One chunk's lists and where the replay is in them.
  struct chunk_state {
    std::size_t c0 = 0, c1 = 0, c_end = 0;  // its rows, and where the order check stopped
    bool unordered = false;
    std::array<std::uint32_t, lists> count{}, pos{};
    std::array<std::uint32_t, lists + 1> sequence{};  // the lists, in the order replayed
    std::uint32_t lists_n = 0;
    std::uint32_t advance = no_list;              // the list a `behind` answer names
    std::uint32_t ordered_list = no_list;         // the chunk goes in table order (its one list)
    std::uint32_t cur = no_list, back = no_list;  // the list replayed, the one an advance left
    // The list being replayed: its rows, where the replay is, where it stops.
    const event_index* rows = nullptr;
    std::uint32_t k = 0, k_end = 0;
  };

  bool replay_chunks() {
    pass ps = begin_pass();
    std::size_t stacks_n = stacks_.size();
    for (std::size_t c0 = 0; c0 < n_;) {
      chunk_state c;
      c.c0 = c0;
      c.c1 = std::min(n_, c0 + chunk_);
      sort_chunk(ps, c, stacks_n);
      hook_.begin_chunk(c0, c.c_end - c0);
      const int status = replay_lists(ps, c);
      if (status != go_on) [[unlikely]] {
        // The rows where it stopped were given to the hook; so must be the chunk's others
        // (the tree is replayed again in a computed order, with every link final).
        ++c.pos[c.cur];
        if (c.back != no_list) ++c.pos[c.back];
        for (std::uint32_t q = 0; q < c.lists_n; ++q) {
          const std::uint32_t l = c.sequence[q];
          for (std::uint32_t k = c.pos[l]; k < c.count[l]; ++k)
            hook_.pre(chunk_rows_[std::size_t{l} * chunk_ + k]);
        }
        c.unordered = true;
      }
      hook_.end_chunk([&](event_index i, event_index from, event_index to) {
        if (ps.parents[i] != from) return;  // not placed (a chunk that stopped)
        ps.parents[i] = to;
        --ps.counts[from + std::size_t{1}];
        ++ps.counts[to + std::size_t{1}];
      });
      if (c.unordered) {
        hook_.stopped_at(c.c_end);
        return false;
      }
      c0 = c.c_end;
    }
    // Unfinished ops in table order (a parent's end is borrowed before its children's).
    std::sort(missing_.begin(), missing_.end(),
              [](const unfinished& x, const unfinished& y) { return x.index < y.index; });
    end_pass(ps);
    return true;
  }

  /// Pass 1: the chunk's rows into their threads' lists, and the order the lists go in.
  void sort_chunk(pass& ps, chunk_state& c, std::size_t& stacks_n) {
    c.c_end = c.c1;
    bool wide = false;
    std::uint32_t used = 0, with_ops = 0;
    event_index* const crows = chunk_rows_.data();
    std::array<event_index*, lists> tail;  // each list's end (its count once the pass is over)
    for (std::uint32_t l = 0; l < lists; ++l) tail[l] = crows + std::size_t{l} * chunk_;
    // The rows' threads, if the hook has them (the forward/backward pass on the other thread
    // numbers (pid, tid) pairs as `keys_` does: in order of first appearance).
    const std::uint8_t* known = nullptr;
    if constexpr (requires { hook_.row_threads(c.c1); })
      if constexpr (std::is_same_v<key_policy, pid_tid_key>) known = hook_.row_threads(c.c1);
    const auto* const events = ps.events;
    std::int64_t last_start = ps.last_start;
    for (std::size_t r = c.c0; r < c.c1; ++r) {
      const auto& e = events[r];
      if (e.start_ns < last_start) [[unlikely]] {
        c.c_end = r;
        c.unordered = true;
        break;
      }
      last_start = e.start_ns;
      // (A thread not known, or seen for the first time, is looked up: `keys_` gives the
      // latter the same number.)
      constexpr std::uint32_t not_known = 0xff;  // the hook's `row_threads`
      const std::uint32_t k = known != nullptr ? known[r] : not_known;
      std::uint32_t thread = k;
      if (k == not_known || k >= stacks_n) {
        const auto [a, b] = key_policy::key(e.pid, e.tid);
        thread = keys_.id(a, b);
        if (thread >= stacks_n) [[unlikely]] {
          stacks_.resize(thread + 1);
          stacks_n = stacks_.size();
        }
      }
      wide |= thread >= lists;
      const std::uint32_t l = thread < lists ? thread : lists - 1;
      *tail[l]++ = static_cast<event_index>(r);
      with_ops |= std::uint32_t{e.template is<event_kind::op>()} << l;
    }
    ps.last_start = last_start;
    for (std::uint32_t l = 0; l < lists; ++l) {
      c.count[l] = static_cast<std::uint32_t>(tail[l] - (crows + std::size_t{l} * chunk_));
      used |= std::uint32_t{c.count[l] != 0} << l;
    }
    if (wide) [[unlikely]] {  // one list, in table order
      c.ordered_list = 0;
      c.count[0] = static_cast<std::uint32_t>(c.c_end - c.c0);
      for (std::size_t r = c.c0; r < c.c_end; ++r) crows[r - c.c0] = static_cast<event_index>(r);
      c.sequence[c.lists_n++] = 0;
    } else {
      for (std::uint32_t m : {used & with_ops, used & ~with_ops})
        for (; m != 0; m &= ~(std::uint32_t{1} << (31 - std::countl_zero(m))))
          c.sequence[c.lists_n++] = static_cast<std::uint32_t>(31 - std::countl_zero(m));
    }
  }

  /// A fall-back of row `r` to stack `id`: `go_on` when the stack is as table order leaves it
  /// at the row, `behind` when rows of its list before `r` wait (`c.advance` names it),
  /// `conflict` when rows after `r` were replayed already.
  static int ready(const chunk_state& c, const event_index* crows, std::size_t c_rows,
                   std::uint32_t id, std::size_t r) {
    // (Its own list's position is kept in a register: it is always ready.)
    if (id == c.cur || id >= lists || c.ordered_list != no_list) return go_on;
    const event_index* rows = crows + std::size_t{id} * c_rows;
    if (c.pos[id] > 0 && rows[c.pos[id] - 1] > r) return conflict;
    if (c.pos[id] < c.count[id] && rows[c.pos[id]] < r) return behind;
    return go_on;
  }

  /// Enters a list at its position; its rows from `until` on wait (an advance stops at the row
  /// that asked for it: the list's rows are in table order).
  void enter(chunk_state& c, std::uint32_t list, std::uint32_t from, std::size_t until) const {
    c.cur = list;
    c.back = from;
    c.k = c.pos[list];
    c.rows = chunk_rows_.data() + std::size_t{list} * chunk_;
    c.k_end = c.count[list];
    if (until < n_)
      c.k_end = static_cast<std::uint32_t>(
          std::lower_bound(c.rows + c.k, c.rows + c.k_end, static_cast<event_index>(until)) -
          c.rows);
  }

  /// Pass 2: each list's rows in turn (see above); the status the replay stopped with.
  int replay_lists(pass& outer_pass, chunk_state& outer_chunk) {
    // (Copies, written back at the end: the compiler keeps locals in registers across the
    // stores into events, which it cannot prove do not reach the caller's.)
    pass ps = outer_pass;
    chunk_state c = outer_chunk;
    const event_index* const crows = chunk_rows_.data();
    const std::size_t c_rows = chunk_;
    const auto* ahead = ps.events + c.c1;  // the next chunk's row to ask for
    const auto* const ahead_end = ps.events + std::min(n_, c.c1 + chunk_);
    int status = go_on;
    for (std::uint32_t q = 0; q < c.lists_n && status == go_on; ++q) {
      enter(c, c.sequence[q], no_list, n_);
      for (;;) {
        if (c.k == c.k_end) {
          c.pos[c.cur] = c.k;
          if (c.back == no_list) break;
          enter(c, c.back, no_list, n_);  // the advanced list is at the row: place it again
          continue;
        }
        const std::size_t r = c.rows[c.k];
        // (A list is a stack's rows, unless the chunk goes in table order.)
        const std::uint32_t list = c.cur;
        status = place<true>(
            ps, r, static_cast<event_index>(r),
            [&, list, r] {
              if (c.ordered_list == no_list) [[likely]]
                return list;
              return stack_of(ps.events[r]);
            },
            [&](std::uint32_t id, std::size_t row) {
              const int w = ready(c, crows, c_rows, id, row);
              if (w == behind) c.advance = id;
              return w;
            });
        if (ahead < ahead_end) {
          prefetch_object(ahead);
          ++ahead;
        }
        if (status == go_on) [[likely]] {
          ++c.k;
          continue;
        }
        c.pos[c.cur] = c.k;
        if (status == behind && c.back == no_list) {
          ps.stepped = r;  // its hook step is done
          enter(c, c.advance, c.cur, r);
          status = go_on;
          continue;
        }
        break;  // stop, a conflict, or an advance inside an advance
      }
    }
    outer_pass = ps;
    outer_chunk = c;
    return status;
  }

  // ---- after the replay -----------------------------------------------------------------

  /// Children lists, in processing order (start time, then table order), and their offsets
  /// (the table's `child_offsets`; no pass over the events writes children ranges). The counts
  /// are kept one place to the right, so that filling the lists leaves each entry at the end of
  /// its event's children, which is where the next event's begin.
  void children_lists() {
    std::uint32_t total = 0;
    for (std::size_t k = 0; k <= n_; ++k) {
      const std::uint32_t c = offsets_[k];
      offsets_[k] = total;
      total += c;
    }
    t_.children.assign(total, no_event);
    // (Locals, and one loop per order: nothing to reload or test per row that does not change.)
    event_index* const children = t_.children.data();
    std::uint32_t* const next = offsets_.data() + 1;
    const event_index* const parents = parent_.data();
    std::size_t roots = 0;
    auto fill = [&](auto&& event_at) TRACEMODEL_ALWAYS_INLINE_LAMBDA {
      for (std::size_t r = 0; r < n_; ++r) {
        const event_index i = event_at(r);
        const event_index p = parents[i];
        if (p == no_event) {
          ++roots;
          continue;
        }
        children[next[p]++] = i;
      }
    };
    if (order_.empty())
      fill([](std::size_t r) { return static_cast<event_index>(r); });
    else
      fill([&](std::size_t r) { return order_[r]; });
    stats_.roots += roots;
    t_.child_offsets = std::move(offsets_);
  }

  /// Ends of ops that never ended (parents come first in processing order).
  void borrow_ends() {
    for (const unfinished& u : missing_) {
      auto* op = t_.events[u.index].template get_if<event_kind::op>();
      if (op == nullptr) continue;
      const event_index p = t_.events[u.index].parent;
      bool borrow = false;
      if constexpr (Policy::missing_end_type::borrow) borrow = u.closes_later && p != no_event;
      const std::int64_t parent_end = borrow ? t_.events[p].end_ns() : no_end_ns;
      if (parent_end != no_end_ns) {
        op->end_ns =
            parent_end < t_.events[u.index].start_ns ? t_.events[u.index].start_ns : parent_end;
        op->flags |= op_flag::end_borrowed;
        ++stats_.borrowed_ends;
      } else {
        ++stats_.missing_ends;
      }
    }
  }

  basic_event_table<Schema>& t_;
  Hook& hook_;
  const std::size_t chunk_;
  const std::size_t n_;
  tree_stats stats_;
  scratch_vector<event_index> parent_;
  // Children counts, kept one place to the right of their event (see `children_lists`),
  // counted as the replay finds parents.
  scratch_vector<std::uint32_t> offsets_;
  scratch_vector<event_index> order_;  // the computed order (empty: table order)
  pair_ids keys_;
  std::vector<replay_stack> stacks_;
  std::vector<unfinished> missing_;
  std::vector<event_index> chunk_rows_;
};

/// The tree by the replay (see `tree_replay`), with `hook` into the replay in table order.
template <class Schema, class Policy, class Hook>
tree_stats replay_tree(basic_event_table<Schema>& t, Policy, Hook& hook, std::size_t chunk = 0) {
  return tree_replay<Schema, Policy, Hook>(t, hook, chunk).run();
}

}  // namespace detail
TRACEMODEL_END_NAMESPACE
