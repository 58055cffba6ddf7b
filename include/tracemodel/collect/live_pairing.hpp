// tracemodel/collect — the live queue's pairing of begins and ends on the consumer's side
// (collect/live_queue.hpp): a part's blocks, carried ops and a cut's tails turned into the part's
// events, each op with its end. An op whose end is not known yet waits (`open`) across parts,
// an end read before its op waits for it (`early`); ticks become nanoseconds by the queue's
// piecewise conversion, synced at each part.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <deque>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tracemodel/collect/clock.hpp"
#include "tracemodel/collect/kind_records.hpp"
#include "tracemodel/collect/live_blocks.hpp"
#include "tracemodel/collect/records.hpp"
#include "tracemodel/config.hpp"
#include "tracemodel/detail/flat_map.hpp"
#include "tracemodel/detail/os.hpp"
#include "tracemodel/model/table.hpp"

TRACEMODEL_BEGIN_NAMESPACE
namespace detail {

/// An op the consumer holds: open, or carried out of an evicted block.
struct live_pending {
  std::uint64_t id = 0, tid = 0;
  approx_time start = 0;
  std::string name;
  std::int64_t sequence_number = -1, debug_handle = -1;
  std::uint64_t fwd_thread_id = 0;
  op_scope scope = op_scope::function;
  std::uint8_t flags = 0;

  static live_pending of(const op_record& r, std::uint64_t id, std::uint64_t tid) {
    live_pending p;
    p.id = id;
    p.tid = tid;
    p.start = r.start;
    p.name.assign(r.name == nullptr ? "" : r.name, r.name_len);
    p.sequence_number = r.sequence_number;
    p.debug_handle = r.debug_handle;
    p.fwd_thread_id = r.fwd_thread_id;
    p.scope = r.scope;
    p.flags = r.flags;
    return p;
  }
};
/// An end: when, and on which thread.
struct live_late {
  approx_time end;
  std::uint64_t tid;
};
/// A record a cut read from a thread's current block (the name copied).
struct live_tail_op {
  std::uint64_t id = 0, tid = 0;
  op_record record{};
  std::string name;
  live_late end{0, 0};
  bool late_end = false;
  bool kind = false;               ///< another kind's record, in `raw`
  std::array<op_record, 3> raw{};  ///< (its slots)
};
/// An end taken out of an overwritten block for the consumer.
struct live_carried_end {
  std::uint64_t id;
  live_late end;
  bool only_if_open;
};
/// What a cut reads of a thread's current block beyond what earlier cuts read: the records and
/// side words published (under the queue's lock: a current block is neither sealed nor
/// recycled meanwhile). The block remembers how far it was read; its drain, once sealed, goes
/// on from there.
template <bool HasSide>
void live_read_tail(live_block& b, std::vector<live_tail_op>& out,
                    std::vector<std::uint64_t>& side) {
  const std::uint32_t n = b.published_records();
  for (std::uint32_t k = b.tail_records; k < n; ++k) {
    op_record& r = b.records[k];
    if ((r.flags & kind_flag) != 0) {  // another kind's record: its slots as they are
      const std::uint32_t slots = slots_of(kind_of(r));
      if (slots == 0 || n - k < slots) continue;
      live_tail_op& o = out.emplace_back();
      o.tid = b.tid;
      o.kind = true;
      std::memcpy(static_cast<void*>(o.raw.data()), &r, slots * sizeof(op_record));
      if (kind_of(r) == live_kind::device) {
        const auto d = get_kind<device_record>(&r);
        o.name.assign(d.name == nullptr ? "" : d.name, d.name_len);
      }
      k += slots - 1;
      continue;
    }
    live_tail_op& o = out.emplace_back();
    o.tid = b.tid;
    if ((r.flags & late_end_flag) != 0) {
      o.late_end = true;
      o.id = r.start;
      o.end = {r.end, r.end_tid};
      continue;
    }
    o.id = b.id_start + k;
    // Field by field: the owner may be writing its end (read below, atomically).
    o.record.start = r.start;
    o.record.sequence_number = r.sequence_number;
    o.record.fwd_thread_id = r.fwd_thread_id;
    o.record.debug_handle = r.debug_handle;
    o.record.name_len = r.name_len;
    o.record.scope = r.scope;
    o.record.flags = r.flags;
    o.name.assign(r.name == nullptr ? "" : r.name, r.name_len);
    o.end.end = std::atomic_ref(r.end).load(std::memory_order_acquire);
    o.end.tid = o.end.end != 0 ? std::atomic_ref(r.end_tid).load(std::memory_order_relaxed) : 0;
  }
  // The side words published after the ends were read: an op seen ended has every entry its
  // thread wrote before the end (entries of ops not read yet wait for them by id).
  const auto words = static_cast<std::uint32_t>(b.pub().load(std::memory_order_acquire) >> 32);
  if constexpr (HasSide) side.insert(side.end(), b.side.get() + b.tail_side, b.side.get() + words);
  b.tail_records = n;
  b.tail_side = words;
}

/// A sealed block overwritten: its open ops are carried, its ended ops counted as lost (the ends
/// and side entries of ops elsewhere carried too).
inline void live_evict(live_block& b, std::vector<live_pending>& carried,
                       std::vector<live_carried_end>& carried_ends,
                       std::vector<std::uint64_t>& carried_side, std::uint64_t& evicted,
                       std::uint64_t& evicted_other) {
  if (b.self_contained && b.tail_records == 0) {  // every op ended, lost with its entries
    evicted += b.count;
    return;
  }
  const op_record* records = b.records.get();
  const std::uint32_t count = b.count, tail = b.tail_records;
  std::uint64_t ended = 0;  // ended in place, not handed out: lost with the block
  for (std::uint32_t k = 0; k < count; ++k) {
    const op_record& r = records[k];
    const bool read = k < tail;  // by a cut: the consumer has it
    if ((r.flags & (late_end_flag | kind_flag)) == 0 && r.end != 0 && !read) [[likely]] {
      ++ended;
      continue;
    }
    if ((r.flags & kind_flag) != 0) {  // another kind's record: lost with the block
      evicted_other += !read && kind_of(r) != live_kind::continuation;
      continue;
    }
    if ((r.flags & late_end_flag) != 0) {
      if (read) continue;
      bool found = false;
      for (live_pending& c : carried)  // (few carried ops)
        if (c.id == r.start) {
          c.flags |= op_flag::end_borrowed;  // ended: lost with its end
          found = true;
        }
      // The end of an op elsewhere (held open by the consumer, or in a block to come).
      if (!found) carried_ends.push_back({r.start, {r.end, r.end_tid}, false});
      continue;
    }
    if (read) {  // the consumer holds the op open, or handed it out ended already
      if (r.end != 0) carried_ends.push_back({b.id_start + k, {r.end, r.end_tid}, true});
      continue;
    }
    carried.push_back(live_pending::of(r, b.id_start + k, b.tid));  // open: carried
  }
  evicted += ended;
  std::erase_if(carried, [&](const live_pending& c) {
    if ((c.flags & op_flag::end_borrowed) == 0) return false;
    ++evicted;
    return true;
  });
  // Side entries: kept for the ops carried and for ops recorded in other blocks; those of the
  // ops overwritten go with them.
  for (std::uint32_t k = b.tail_side; k + 2 <= b.side_used;) {
    const std::uint64_t* e = b.side.get() + k;
    const std::uint32_t n = 2 + static_cast<std::uint32_t>(e[0] >> 8);
    const std::uint64_t id = e[1];
    // (ops a cut read are the consumer's: their entries go to it too)
    const bool here = id - b.id_start < b.count && id - b.id_start >= b.tail_records;
    if (!here || std::any_of(carried.begin(), carried.end(),
                             [&](const live_pending& c) { return c.id == id; }))
      carried_side.insert(carried_side.end(), e, e + n);
    k += n;
  }
}

/// What a part is: a drain's (ended ops), a cut's (open ops as unfinished copies too), the
/// last one's (open ops unfinished, ends without their op counted).
enum class live_part_kind : std::uint8_t { drain, cut, last };

/// The pairing of one queue's parts (one consumer at a time). `HasSide`: whether the queue
/// records side data, attached through `SideIndex` (live_side.hpp).
template <class Clock, bool HasSide, class SideIndex>
class live_pairing {
 public:
  /// What a part's pairing counted.
  struct counts {
    std::uint64_t ended = 0, unfinished = 0, orphans = 0, twice = 0, handed_open = 0, other = 0;
  };

  /// The events of a part, in start order: the taken blocks' ops (each block in the order its
  /// thread sealed it), the carried ones and a cut's tails, each with its end when known; the
  /// ends for ops handed out earlier or still to come wait. A cut's part copies the open ops
  /// (unfinished, they stay open); the last part hands them out unfinished and counts the ends
  /// whose op never came.
  event_table pair(const std::deque<live_block*>& taken, std::vector<live_pending>& carried,
                   const std::vector<live_carried_end>& carried_ends,
                   const std::vector<live_tail_op>& tail, live_part_kind kind, SideIndex& side,
                   counts& n) {
    to_ns_.sync();  // a sync point for this part: each stretch between two has its own slope
    part_ = {};
    device_keys_ = {};
    event_table& part = part_;
    pid_ = process_id();
    names_.clear();
    reserve(taken, carried.size());
    for (live_pending& c : carried) open_.emplace(c.id, std::move(c));
    // Begins first (each block in the order its thread sealed it, then what cuts read of the
    // threads' current blocks), then late ends.
    for (live_block* b : taken) {
      if constexpr (HasSide) side.index_block(*b);
      for (std::uint32_t k = 0; k < b->count; ++k) {
        const op_record& r = b->records[k];
        if ((r.flags & (late_end_flag | kind_flag)) != 0) {
          if ((r.flags & kind_flag) != 0 && k >= b->tail_records &&
              kind_of(r) != live_kind::continuation)
            emit_kind(&r, b->tid, n);
          continue;
        }
        const live_late end{r.end, r.end_tid};
        if constexpr (HasSide) side.select(k);
        if (r.end != 0 && k >= b->tail_records && early_.empty()) [[likely]] {  // the most
          emit(b->id_start + k, b->tid, r.start, {r.name, r.name_len}, r.sequence_number,
               r.fwd_thread_id, r.debug_handle, r.scope, r.flags, &end, side, n);
        } else if (k < b->tail_records) {  // read by a cut while current: ended in place since?
          if (r.end != 0) ended_late(b->id_start + k, end, true, side, n);
        } else {
          begun(b->id_start + k, b->tid, r, r.end != 0 ? &end : nullptr, side, n);
        }
        if constexpr (HasSide) side.keep_selected(b->id_start + k);  // not handed out yet
      }
    }
    side.deselect();
    for (const live_tail_op& o : tail)
      if (o.kind) {
        emit_kind(o.raw.data(), o.tid, n, o.name);
      } else if (!o.late_end) {
        op_record r = o.record;
        r.name = o.name.data();
        begun(o.id, o.tid, r, o.end.end != 0 ? &o.end : nullptr, side, n);
      }
    const std::size_t in_block_order = part.events.size();  // the ops ended in their blocks
    for (const live_block* b : taken)
      for (std::uint32_t k = b->tail_records; k < b->count; ++k) {
        const op_record& r = b->records[k];
        if ((r.flags & late_end_flag) != 0) ended_late(r.start, {r.end, r.end_tid}, false, side, n);
      }
    for (const live_tail_op& o : tail)
      if (o.late_end) ended_late(o.id, o.end, false, side, n);
    for (const live_carried_end& c : carried_ends) ended_late(c.id, c.end, c.only_if_open, side, n);
    if (kind == live_part_kind::last) {
      for (auto& [id, p] : open_) emit_pending(p, nullptr, false, side, n);
      open_.clear();
      n.orphans += early_.size();
      early_.clear();
    } else if (kind == live_part_kind::cut) {  // copies: they stay open
      for (auto& [id, p] : open_) emit_pending(p, nullptr, true, side, n);
    }
    in_start_order(part, in_block_order);
    return std::move(part_);
  }

  /// A thread that recorded: how a device record's host call may name it (its OS id, the low
  /// 32 bits of its pthread id), and the runtime's id it stands for.
  void note_thread(std::uint64_t os_tid, std::uint64_t pthread_id32, std::uint64_t tid) {
    os_to_tid_.try_emplace(os_tid, tid);
    pthread_to_tid_.try_emplace(pthread_id32, tid);
  }
  /// Ops begun and not ended yet (held across parts).
  [[nodiscard]] std::size_t open() const noexcept { return open_.size(); }
  /// A sync point now, and the points so far (a crash file keeps them).
  void sync() { to_ns_.sync(); }
  [[nodiscard]] const std::vector<clock_sync_point>& points() const { return to_ns_.points(); }
  /// The ops held open and the ends waiting for their op (a crash file keeps them).
  template <class Op, class End>
  void for_each_held(Op&& op, End&& end) const {
    for (const auto& [id, p] : open_) op(p);
    for (const auto& [id, e] : early_) end(id, e);
  }
  /// A time of the queue's clock in nanoseconds (after the last part's sync).
  [[nodiscard]] std::int64_t to_ns(approx_time t) { return to_ns_(t); }

 private:
  void reserve(const std::deque<live_block*>& taken, std::size_t carried) {
    std::size_t records = carried;
    std::size_t words = 0;
    for (const live_block* b : taken) {
      records += b->count;
      words += b->side_used;
    }
    part_.events.reserve(records);
    if constexpr (HasSide) {  // a tensor: 3 words or more, an input and its sizes
      part_.inputs.reserve(words / 3);
      part_.ints.reserve(words);
    }
  }

  /// Names by address: the blocks' names stay where they are until the part is made.
  name_id intern(std::string_view name) {
    const auto key = reinterpret_cast<std::uint64_t>(name.data());
    if (cached_name* c = names_.find(key); c != nullptr && c->len == name.size()) return c->id;
    const name_id id = part_.strings.intern(name);
    names_.insert_or_assign(key, {name.data(), static_cast<std::uint32_t>(name.size()), id});
    return id;
  }

  void emit(std::uint64_t id, std::uint64_t tid, approx_time start, std::string_view name,
            std::int64_t seq, std::uint64_t fwd, std::int64_t debug, op_scope scope,
            std::uint8_t flags, const live_late* end, SideIndex& side, counts& n,
            bool copy = false) {
    event_table& part = part_;
    auto& e = part.events.emplace_back();
    e.start_ns = to_ns_(start);
    e.tid = tid;
    e.pid = pid_;
    auto& f = e.template new_fields<event_kind::op>();
    f.name = intern(name);
    f.scope = scope;
    f.flags = static_cast<std::uint8_t>(flags & ~late_end_flag);
    f.sequence_number = seq;
    f.fwd_thread_id = fwd;
    f.correlation_id = id;
    f.debug_handle = debug;
    if constexpr (HasSide)
      if (side.any()) side.attach_side(part, e, f, id, copy);
    if (end == nullptr) {
      f.flags |= op_flag::unfinished;
      f.end_ns = no_end_ns;
      f.end_tid = tid;
      part.anomalies.add(anomaly::unfinished_op);
      ++(copy ? n.handed_open : n.unfinished);
    } else {
      const std::int64_t end_ns = to_ns_(end->end);
      f.end_ns = std::max(e.start_ns, end_ns);
      if (end_ns < e.start_ns) part.anomalies.add(anomaly::end_before_start);
      f.end_tid = end->tid;
      ++n.ended;
    }
  }
  /// Another kind's record (allocation, out-of-memory, device) as an event of the part; a
  /// device record's name is in its block, or given (a cut's copy).
  void emit_kind(const op_record* slots, std::uint64_t tid, counts& n,
                 std::string_view copied = {}) {
    event_table& part = part_;
    auto& e = part.events.emplace_back();
    e.tid = tid;
    e.pid = pid_;
    ++n.other;
    switch (kind_of(slots[0])) {
      case live_kind::allocation: {
        const auto r = get_kind<allocation_record>(slots);
        e.start_ns = to_ns_(r.time);
        allocation_fields(e, r);
        break;
      }
      case live_kind::out_of_memory: {
        const auto r = get_kind<oom_record>(slots);
        e.start_ns = to_ns_(r.time);
        oom_fields(e, r);
        break;
      }
      default: {
        const auto r = get_kind<device_record>(slots);
        e.start_ns = to_ns_(r.start);
        if (r.host_thread) {
          const std::uint64_t* small = os_to_tid_.find(r.tid);
          if (small == nullptr) small = pthread_to_tid_.find(r.tid);
          e.tid = small != nullptr ? *small : r.tid;
        } else {
          e.tid = r.tid;
          e.pid = r.pid;
        }
        const std::int64_t end_ns = to_ns_(r.end);
        if (end_ns < e.start_ns) part.anomalies.add(anomaly::end_before_start);
        const name_id name =
            copied.data() != nullptr ? part.strings.intern(copied) : intern({r.name, r.name_len});
        device_fields(part, e, r, name, std::max(e.start_ns, end_ns), device_keys_);
      }
    }
  }
  void emit_pending(const live_pending& p, const live_late* end, bool copy, SideIndex& side,
                    counts& n) {
    emit(p.id, p.tid, p.start, p.name, p.sequence_number, p.fwd_thread_id, p.debug_handle, p.scope,
         p.flags, end, side, n, copy);
  }

  /// An op's begin: handed out with its end, or with an end read earlier, or kept open.
  void begun(std::uint64_t id, std::uint64_t tid, const op_record& r, const live_late* end,
             SideIndex& side, counts& n) {
    if (end != nullptr) {
      emit(id, tid, r.start, {r.name, r.name_len}, r.sequence_number, r.fwd_thread_id,
           r.debug_handle, r.scope, r.flags, end, side, n);
      if (!early_.empty())
        if (const auto it = early_.find(id); it != early_.end()) {  // and ended again
          early_.erase(it);
          ++n.twice;
        }
    } else if (const auto it = early_.empty() ? early_.end() : early_.find(id);
               it != early_.end()) {
      emit(id, tid, r.start, {r.name, r.name_len}, r.sequence_number, r.fwd_thread_id,
           r.debug_handle, r.scope, r.flags, &it->second, side, n);
      early_.erase(it);
    } else {
      open_.emplace(id, live_pending::of(r, id, tid));
    }
  }

  /// An end for an op handed over already, or still to come (`only_if_open`: an op a cut read
  /// open, ended in place since; not open any more means handed out with that end already).
  void ended_late(std::uint64_t id, const live_late& end, bool only_if_open, SideIndex& side,
                  counts& n) {
    if (const auto it = open_.find(id); it != open_.end()) {
      emit_pending(it->second, &end, false, side, n);
      open_.erase(it);
    } else if (!only_if_open && !early_.emplace(id, end).second) {
      ++n.twice;
    }
  }

  /// In start order. One thread's ops ended in their blocks already are: then the few ended
  /// later are sorted and merged in; several threads' interleave: then all are sorted.
  static void in_start_order(event_table& part, std::size_t in_block_order) {
    auto by_start = [](const auto& a, const auto& b) { return a.start_ns < b.start_ns; };
    const auto middle = part.events.begin() + static_cast<std::ptrdiff_t>(in_block_order);
    if (std::is_sorted(part.events.begin(), middle, by_start)) {
      std::stable_sort(middle, part.events.end(), by_start);
      std::inplace_merge(part.events.begin(), middle, part.events.end(), by_start);
    } else {
      std::vector<std::pair<std::int64_t, std::uint32_t>> order(part.events.size());
      for (std::uint32_t k = 0; k < order.size(); ++k) order[k] = {part.events[k].start_ns, k};
      std::sort(order.begin(), order.end());
      decltype(part.events) sorted;
      sorted.reserve(part.events.size());
      for (const auto& [start, k] : order) sorted.push_back(part.events[k]);
      part.events = std::move(sorted);
    }
  }

  struct cached_name {
    const char* p;
    std::uint32_t len;
    name_id id;
  };

  std::unordered_map<std::uint64_t, live_pending> open_;
  std::unordered_map<std::uint64_t, live_late> early_;
  piecewise_time_converter<Clock> to_ns_;  ///< ticks to ns, synced at each part
  event_table part_;                       ///< the part being made
  process_key pid_ = 0;
  flat_map<cached_name> names_{1024};
  flat_map<std::uint64_t> os_to_tid_, pthread_to_tid_;  ///< a host call's thread -> the runtime's
  device_keys device_keys_;
};

}  // namespace detail
TRACEMODEL_END_NAMESPACE
