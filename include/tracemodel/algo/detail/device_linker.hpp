// tracemodel/algo/detail — the host/device linker as `analyze` runs it.
//
// The rules of `link_device_activities` (algo/flows.hpp), fed one row at a time: the maps of
// flow starts, runtime calls and ops fill as rows come, and a row whose rule can be answered
// already is placed at once (in a table sorted by start, launches and ops come before what they
// launched; the maps keep the smallest index of an id, so an answer found before the row is
// final). The rest waits for a second pass. `analyze` feeds it from inside the tree's replay,
// chunk by chunk (see `begin_chunk`), so that one read of each event serves both.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <limits>
#include <vector>

#include "tracemodel/algo/device_link_policies.hpp"
#include "tracemodel/config.hpp"
#include "tracemodel/detail/big_allocator.hpp"
#include "tracemodel/detail/id_map.hpp"
#include "tracemodel/model/table.hpp"

TRACEMODEL_BEGIN_NAMESPACE
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
      : t_(t),
        n_(t.size()),
        ops_(enabled ? n_ : 0),
        calls_(enabled ? n_ : 0),
        flow_starts_(enabled ? n_ : 0) {
    if constexpr (enabled) links_.reserve(n_);  // an upper bound: untouched pages cost nothing
  }

  /// The links made (one per device activity placed), in table order of their targets once
  /// `finish` ran; the array has room for one link per event.
  [[nodiscard]] scratch_vector<flow_link>& links() noexcept { return links_; }

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
              entry = static_cast<std::uint32_t>(links_.size());
              links_.push_back({flow_kind::async_cpu_gpu, 0, no_event, idx});
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
      chunk_links_ = links_.size();
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
      const auto first = links_.begin() + static_cast<std::ptrdiff_t>(chunk_links_);
      if (!std::is_sorted(first, links_.end(), by_target)) [[unlikely]] {
        std::sort(first, links_.end(), by_target);  // one link per target
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
        links_.erase(std::remove_if(links_.begin(), links_.end(),
                                    [](const flow_link& l) { return l.from == no_event; }),
                     links_.end());
      if constexpr (Policy::inherit_thread) inherit_device_threads(t_, unplaced_);
    }
    return s_;
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
    std::uint32_t entry;  // its reserved entry in links_ (device activities)
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
                                    std::size_t& placed_count, event_index idx, std::uint32_t entry,
                                    bool final) {
    // Before the maps are complete, an index after the row may yet give way to a smaller one.
    const event_index parent = m.find(id);
    if (parent == no_event || (!final && parent > idx)) return final ? 0 : -1;
    set_parent(idx, parent, how);
    mark(idx, parent);
    const flow_link l{flow_kind::async_cpu_gpu, id, parent, idx};
    if (entry == no_entry)
      links_.push_back(l);
    else
      links_[entry] = l;
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
    const auto first = links_.begin() + static_cast<std::ptrdiff_t>(chunk_links_);
    const auto it = std::lower_bound(first, links_.end(), to,
                                     [](const flow_link& l, event_index x) { return l.to < x; });
    return static_cast<std::uint32_t>(it - links_.begin());
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
        if (!is_runtime_call(d.activity)) links_[link_entry(idx)].from = now;
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

  basic_event_table<Schema>& t_;
  std::size_t n_;
  device_link_stats s_;
  scratch_vector<flow_link> links_;
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

/// Every row through a device linker in table order, then its second pass: the links of
/// `link_device_activities`, left in `out` (in table order of their targets).
template <class Schema, class Policy>
device_link_stats link_devices_in_order(basic_event_table<Schema>& t,
                                        scratch_vector<flow_link>& out) {
  device_linker<Schema, Policy> linker(t);
  if constexpr (device_linker<Schema, Policy>::enabled)
    for (std::size_t i = 0, n = t.size(); i < n; ++i) linker.step(i);
  device_link_stats s = linker.finish();
  out = std::move(linker.links());
  return s;
}

}  // namespace detail
TRACEMODEL_END_NAMESPACE
