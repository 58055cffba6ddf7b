// tracemodel/algo — the host/device flow linker.
//
//   device_link_stats s = tracemodel::link_device_activities(table);
//   build_tree(table);  // then place everything else by nesting
//
// Device activities (kernels, memcpy, memset, synchronization, CUDA events, GPU annotations)
// and the runtime or driver calls that launched them share a correlation id; a device profiler
// may also draw an `ac2g` flow from the call to the activity. As PyTorch:
//  1. the flow starts of the host-to-device kind (a duplicate start is counted as an anomaly and
//     the first one kept), and the runtime calls by correlation id;
//  2. a device activity's parent is its flow's start if it ends a flow, else the runtime call
//     with its correlation id, else the op with its external id (PyTorch's linked activity);
//     a runtime call's parent is the op with its external id.
// Both happen in one pass where they can: what a launch started usually comes after it in the
// table, and an answer found before the row is final (the smallest index of an id wins). The
// rest waits for a second pass.
// PyTorch then lets device subtrees inherit the thread of their parent: its Kineto events have no
// thread of their own. Ours keep their track (pid = device, tid = stream), which writers and
// viewers need, so that step is the opt-in policy `pytorch_thread_inheritance`.
//
// Which calls start flows is the device profiler's business (the CUPTI adapter decides it by a
// registry of callback ids, not by names); this linker follows the flags the events carry.
//
// Policies (members of a policy struct; see `pytorch_device_links`):
//   use_flows          a flow end takes its flow start as parent
//   use_correlation    else the runtime call with the same correlation id
//   use_external_id    else the op whose correlation id is the activity's external id
//   link_runtime_calls runtime calls hang under the op of their external id
//   inherit_thread     linked device activities take their parent's pid and tid (off)
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <limits>
#include <vector>

#include "tracemodel/config.hpp"
#include "tracemodel/detail/id_map.hpp"
#include "tracemodel/model/table.hpp"

TRACEMODEL_BEGIN_NAMESPACE

struct pytorch_device_links {
  static constexpr bool use_flows = true;
  static constexpr bool use_correlation = true;
  static constexpr bool use_external_id = true;
  static constexpr bool link_runtime_calls = true;
  static constexpr bool inherit_thread = false;
};
/// PyTorch's last step as well: device subtrees take the thread of their parent.
struct pytorch_thread_inheritance : pytorch_device_links {
  static constexpr bool inherit_thread = true;
};
/// Correlation ids only: what the links are without the flow records of a file.
struct correlation_device_links : pytorch_device_links {
  static constexpr bool use_flows = false;
};

template <class P>
concept device_link_policy = requires {
  { P::use_flows } -> std::convertible_to<bool>;
  { P::use_correlation } -> std::convertible_to<bool>;
  { P::use_external_id } -> std::convertible_to<bool>;
  { P::link_runtime_calls } -> std::convertible_to<bool>;
  { P::inherit_thread } -> std::convertible_to<bool>;
};

struct device_link_stats {
  std::size_t by_flow = 0;         ///< device activities placed under their flow's start
  std::size_t by_correlation = 0;  ///< ... under the runtime call with their correlation id
  std::size_t by_external_id = 0;  ///< ... under the op of their external id
  std::size_t runtime_calls = 0;   ///< runtime calls placed under their op
  std::size_t unlinked = 0;        ///< device activities with no parent found
  std::size_t duplicate_flow_starts = 0;
  std::size_t flow_ends_without_start = 0;
  std::size_t dangling_correlations = 0;  ///< a correlation id no runtime call has
  detail::scratch_vector<flow_link> links;  ///< host -> device links (from the call, or the op)
};

namespace detail {

/// The device linker's state, fed one table row at a time (`link_device_activities` feeds it
/// every row in table order; `analyze` feeds it from inside the tree builder's replay, so that
/// both read each event once). `step` says whether the row's link is final or waits for the
/// second pass; `finish` runs that pass.
template <class Schema, class Policy>
class device_linker {
 public:
  enum class placed : std::uint8_t { final, waiting };

  explicit device_linker(basic_event_table<Schema>& t)
      : t_(t), n_(t.size()), ops_(enabled ? n_ : 0), calls_(enabled ? n_ : 0),
        flow_starts_(enabled ? n_ : 0) {
    if constexpr (enabled) s_.links.reserve(n_);  // an upper bound: untouched pages cost nothing
  }

  static constexpr bool enabled = Schema::template contains<event_kind::device_activity>;

  /// Row `i`. `waiting`: a device activity or runtime call without a parent whose rule cannot
  /// be answered yet (its parent, if any, is set by `finish`). The maps keep the smallest index
  /// of an id, and only an answer before the row is taken at once: in table order, the first
  /// index of the id. Rows may also come chunk by chunk, in any order inside a chunk (see
  /// `begin_chunk`).
  TRACEMODEL_ALWAYS_INLINE placed step(std::size_t i) {
    if constexpr (enabled) {
      const auto& e = t_.events[i];
      const auto idx = static_cast<event_index>(i);
      if (const auto* d = e.template get_if<device>()) {
        if (d->flow_start && d->flow_type == flow_kind::async_cpu_gpu && d->flow_id != 0)
          s_.duplicate_flow_starts += flow_starts_.insert_min(d->flow_id, idx) ? 0 : 1;
        const bool call = is_runtime_call(d->activity);
        if (call && d->correlation_id != 0) calls_.insert_min(d->correlation_id, idx);
        if (e.parent == no_event && (call || is_device_side(d->activity))) {
          if constexpr (Policy::inherit_thread) unplaced_.push_back(idx);
          if (!place(idx, no_entry, false)) {
            std::uint32_t entry = no_entry;
            if (!call) {
              entry = static_cast<std::uint32_t>(s_.links.size());
              s_.links.push_back({flow_kind::async_cpu_gpu, 0, no_event, idx});
            }
            later_.push_back({idx, entry});
            return placed::waiting;
          }
        }
      } else if constexpr (Schema::template contains<event_kind::op>) {
        if (const auto* op = e.template get_if<event_kind::op>())
          if (op->correlation_id != 0) ops_.insert_min(op->correlation_id, idx);
      }
    }
    return placed::final;
  }

  /// The rows of [first, first + rows) come next, in any order (the tree's replay steps them
  /// thread by thread); `end_chunk` once every one of them was stepped. Before the chunk's
  /// other rows are stepped, an answer inside the chunk may not be the smallest index of its
  /// id before the row: only when an id is mapped twice in the chunk, the later row first,
  /// which the maps count (`insert_min`). `end_chunk` then looks again at the rows that took
  /// an answer from inside the chunk, and the answers it changes are reported.
  void begin_chunk(std::size_t first, std::size_t rows) {
    if constexpr (enabled) {
      chunk_first_ = first;
      chunk_links_ = s_.links.size();
      chunk_later_ = later_.size();
      chunk_replaced_ = replaced();
      const std::size_t words = (rows + 63) / 64;
      if (marks_.size() < words) marks_.resize(words, 0);
      marks_used_ = words;
    }
  }
  /// The chunk's rows were all stepped: its links, made thread by thread, are put in table
  /// order. `moved(i, from, to)`: row `i`'s parent changed (its rule's id was mapped twice in
  /// the chunk).
  template <class F>
  void end_chunk([[maybe_unused]] F&& moved) {
    if constexpr (enabled) {
      auto by_target = [](const flow_link& a, const flow_link& b) { return a.to < b.to; };
      const auto first = s_.links.begin() + static_cast<std::ptrdiff_t>(chunk_links_);
      if (!std::is_sorted(first, s_.links.end(), by_target)) [[unlikely]] {
        std::sort(first, s_.links.end(), by_target);  // one link per target
        for (std::size_t k = chunk_later_; k < later_.size(); ++k)
          if (later_[k].entry != no_entry) later_[k].entry = link_entry(later_[k].index);
      }
      if (replaced() != chunk_replaced_) [[unlikely]]
        recheck_chunk(moved);
      std::fill_n(marks_.begin(), marks_used_, std::uint64_t{0});
      chunk_first_ = no_chunk;
    }
  }

  /// The second pass (the rows that waited, against the complete maps), then the thread
  /// inheritance if the policy asks for it. Call once, after every row was stepped.
  device_link_stats finish() {
    if constexpr (enabled) {
      t_.anomalies.add(anomaly::duplicate_flow_start, s_.duplicate_flow_starts);
      for (const waiting& w : later_) place(w.index, w.entry, true);
      if (unused_entries_)
        s_.links.erase(std::remove_if(s_.links.begin(), s_.links.end(),
                                      [](const flow_link& l) { return l.from == no_event; }),
                       s_.links.end());
      if constexpr (Policy::inherit_thread) inherit_threads(unplaced_);
    }
    return std::move(s_);
  }

  /// The rows `step` answered `waiting` for, in table order (valid until destruction).
  template <class F>
  void for_each_waiting(F&& f) const {
    for (const waiting& w : later_) f(w.index);
  }

 private:
  static constexpr event_kind device = event_kind::device_activity;
  static constexpr auto no_entry = std::numeric_limits<std::uint32_t>::max();
  struct waiting {
    event_index index;
    std::uint32_t entry;  // its reserved entry in s_.links (device activities)
  };

  // Places `idx` by the rules in turn: a runtime call under the op of its external id; a
  // device activity under its flow's start, else the call with its correlation id, else the
  // op of its external id. Before the maps are complete (`final` false), a rule whose id is
  // not mapped yet returns false (wait) instead of counting an anomaly and going on.
  TRACEMODEL_ALWAYS_INLINE bool place(event_index idx, std::uint32_t entry, bool final) {
    const auto* d = t_.events[idx].template get_if<device>();
    if (is_runtime_call(d->activity)) {
      if constexpr (Policy::link_runtime_calls && Policy::use_external_id) {
        if (d->external_id == 0) return true;
        const event_index op = ops_.find(d->external_id);
        if (op == no_event || (!final && op > idx)) return final;
        set_parent(idx, op, parent_link::external_id);
        mark(idx, op);
        ++s_.runtime_calls;
      }
      return true;
    }
    if (Policy::use_flows && d->flow_type == flow_kind::async_cpu_gpu && !d->flow_start &&
        d->flow_id != 0) {
      if (const int r =
              rule(flow_starts_, d->flow_id, parent_link::flow, s_.by_flow, idx, entry, final);
          r != 0)
        return r > 0;
      ++s_.flow_ends_without_start;
      t_.anomalies.add(anomaly::flow_end_without_start);
    }
    if (Policy::use_correlation && d->correlation_id != 0) {
      if (const int r = rule(calls_, d->correlation_id, parent_link::correlation, s_.by_correlation,
                           idx, entry, final);
          r != 0)
        return r > 0;
      ++s_.dangling_correlations;
      t_.anomalies.add(anomaly::dangling_correlation);
    }
    if (Policy::use_external_id && d->external_id != 0) {
      if (const int r = rule(ops_, d->external_id, parent_link::external_id, s_.by_external_id, idx,
                           entry, final);
          r != 0)
        return r > 0;
    }
    ++s_.unlinked;
    unused_entries_ = unused_entries_ || entry != no_entry;
    return true;
  }

  // One rule: 1 when `m` maps `id` (the activity is placed under that event, and its link
  // written), 0 when it does not (the next rule), -1 when it does not yet (wait).
  TRACEMODEL_ALWAYS_INLINE int rule(const id_map& m, std::uint64_t id, parent_link how,
                                    std::size_t& placed_count, event_index idx,
                                    std::uint32_t entry, bool final) {
    // Before the maps are complete, an index after the row may yet give way to a smaller one.
    const event_index parent = m.find(id);
    if (parent == no_event || (!final && parent > idx)) return final ? 0 : -1;
    set_parent(idx, parent, how);
    mark(idx, parent);
    const flow_link l{flow_kind::async_cpu_gpu, id, parent, idx};
    if (entry == no_entry)
      s_.links.push_back(l);
    else
      s_.links[entry] = l;
    ++placed_count;
    return 1;
  }

  /// Notes a row placed under a row of the current chunk (see `begin_chunk`).
  TRACEMODEL_ALWAYS_INLINE void mark(event_index idx, event_index parent) {
    if (parent >= chunk_first_) {
      const std::size_t k = idx - chunk_first_;
      marks_[k >> 6] |= std::uint64_t{1} << (k & 63);
    }
  }
  /// The position of the link to `to` among the chunk's links (in table order).
  std::uint32_t link_entry(event_index to) const {
    const auto first = s_.links.begin() + static_cast<std::ptrdiff_t>(chunk_links_);
    const auto it = std::lower_bound(first, s_.links.end(), to,
                                     [](const flow_link& l, event_index x) { return l.to < x; });
    return static_cast<std::uint32_t>(it - s_.links.begin());
  }
  /// The chunk's rows placed under a row of the chunk, against the maps as the chunk left them
  /// (which hold the smallest index of each id up to its end: that index is before the row
  /// whenever the one it replaced was).
  template <class F>
  TRACEMODEL_NOINLINE void recheck_chunk(F& moved) {
    for (std::size_t w = 0; w < marks_used_; ++w)
      for (std::uint64_t bits = marks_[w]; bits != 0; bits &= bits - 1) {
        const auto idx = static_cast<event_index>(chunk_first_ + 64 * w +
                                                  static_cast<std::size_t>(std::countr_zero(bits)));
        const auto& e = t_.events[idx];
        const auto& d = e.template get<device>();
        const id_map& m = e.link == parent_link::flow          ? flow_starts_
                          : e.link == parent_link::correlation ? calls_
                                                               : ops_;
        const std::uint64_t id = e.link == parent_link::flow          ? d.flow_id
                                 : e.link == parent_link::correlation ? d.correlation_id
                                                                      : d.external_id;
        const event_index now = m.find(id);
        const event_index was = e.parent;
        if (now == was) continue;
        set_parent(idx, now, e.link);
        if (!is_runtime_call(d.activity)) s_.links[link_entry(idx)].from = now;
        moved(idx, was, now);
      }
  }
  [[nodiscard]] std::size_t replaced() const noexcept {
    return ops_.replaced() + calls_.replaced() + flow_starts_.replaced();
  }

  void set_parent(event_index child, event_index parent, parent_link how) {
    t_.events[child].parent = parent;
    t_.events[child].link = how;
  }

  /// Linked device activities take the pid and tid of their nearest ancestor that is not a
  /// linked device activity (their parents come first along every chain, so follow the chain).
  template <class Indices>
  void inherit_threads(const Indices& linked) {
    for (const event_index i : linked) {
      auto& e = t_.events[i];
      if (is_runtime_call(e.template get<device>().activity)) continue;
      if (e.link != parent_link::flow && e.link != parent_link::correlation &&
          e.link != parent_link::external_id)
        continue;
      event_index p = e.parent;
      while (p != no_event && t_.events[p].template is<device>() &&
             is_device_side(t_.events[p].template get<device>().activity) &&
             t_.events[p].parent != no_event)
        p = t_.events[p].parent;
      e.tid = t_.events[p].tid;
      e.pid = t_.events[p].pid;
    }
  }

  basic_event_table<Schema>& t_;
  std::size_t n_;
  device_link_stats s_;
  // (Destroyed in reverse order: the map that usually holds the most ids last, so that the
  // tree's arrays take its pages first.)
  id_map ops_, calls_, flow_starts_;
  scratch_vector<waiting> later_;
  scratch_vector<event_index> unplaced_;  // all of them, for thread inheritance
  bool unused_entries_ = false;
  // The current chunk (see `begin_chunk`): its first row, where its links and waiting rows
  // begin, the maps' replacements before it, and its rows placed under a row of the chunk.
  static constexpr std::size_t no_chunk = std::numeric_limits<std::size_t>::max();
  std::size_t chunk_first_ = no_chunk;
  std::size_t chunk_links_ = 0, chunk_later_ = 0, chunk_replaced_ = 0, marks_used_ = 0;
  std::vector<std::uint64_t> marks_;
};

}  // namespace detail

struct link_device_activities_fn {
  template <class Schema, class Policy = pytorch_device_links>
  device_link_stats operator()(basic_event_table<Schema>& t, Policy = {}) const {
    static_assert(device_link_policy<Policy>,
                  "tracemodel::link_device_activities(table, P): P must model device_link_policy "
                  "(algo/flows.hpp)");
    // One pass: the ids of flow starts, runtime calls and ops go into maps as they come, and
    // each device activity or runtime call without a parent is placed at once when the rule
    // that decides it can be answered already (in a table sorted by start, launches and ops
    // come before what they launched; the maps keep the first index of an id, so an answer
    // found early is final). The rest waits for a second pass over the complete maps. A
    // waiting device activity reserves its entry in the link list, so the links stay in
    // table order; entries left unused (no parent found) are removed at the end.
    detail::device_linker<Schema, Policy> linker(t);
    if constexpr (detail::device_linker<Schema, Policy>::enabled)
      for (std::size_t i = 0, n = t.size(); i < n; ++i) linker.step(i);
    return linker.finish();
  }
};

/// Places device activities and runtime calls under what launched them (see the header).
inline constexpr link_device_activities_fn link_device_activities{};

TRACEMODEL_END_NAMESPACE
