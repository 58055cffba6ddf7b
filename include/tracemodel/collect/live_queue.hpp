// tracemodel/collect — a queue that records for hours: drained while threads record, bounded in
// memory, a flight recorder, started and stopped at any time.
//
//   static tracemodel::live_queue<> queue({.max_blocks = 256});   // long-lived
//   auto h = queue.begin_op({.name = "handle_request"});  ...  queue.end_op(h);
//   // another thread, now and then:
//   queue.drain([&](tracemodel::event_table&& part) { stream.write(part); });
//
// The protocol, the memory cap, threads, flushes and cuts: docs/recording.md ("Always-on
// recording"). In short: a block of records is written only by its thread while it is that
// thread's current block; a full block is sealed, read by the consumer and recycled; an end is
// written in place while the op's record is in its thread's current block, else appended as a
// late end naming the op by its correlation id. Nothing is lost silently (`live_counts`).
//
// Its parts: the blocks and per-thread state (live_blocks.hpp), the pairing of begins and ends
// (live_pairing.hpp) and the side data (live_side.hpp) on the consumer's side, the tables of
// parts (table_sink.hpp), the crash file (crash_file.hpp, read by crash_recover.hpp).
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tracemodel/collect/clock.hpp"
#include "tracemodel/collect/encoder.hpp"
#include "tracemodel/collect/kind_records.hpp"
#include "tracemodel/collect/live_blocks.hpp"
#include "tracemodel/collect/live_options.hpp"
#include "tracemodel/collect/live_pairing.hpp"
#include "tracemodel/collect/live_side.hpp"
#include "tracemodel/collect/record_queue.hpp"
#include "tracemodel/collect/records.hpp"
#include "tracemodel/collect/table_sink.hpp"
#include "tracemodel/config.hpp"
#include "tracemodel/detail/flat_map.hpp"
#include "tracemodel/detail/os.hpp"
#include "tracemodel/model/table.hpp"
#include "tracemodel/storage/id_source.hpp"

TRACEMODEL_BEGIN_NAMESPACE

/// `Features` and `Policies` as `record_queue`'s. `AddressOnlyEnds`: a broken variant for the
/// tests, ending an op in place by its record's address alone (tests/concurrency/live_queue.cpp).
template <record_features Features = record_features{}, class Policies = default_record_policies,
          bool AddressOnlyEnds = false>
class live_queue {
  static_assert(((void)detail::check_record_policies<Policies>(), true));
  using usable = detail::usable_policies<Policies>;

 public:
  using clock = typename usable::clock;
  using value_traits_type = typename usable::value_traits;
  static constexpr record_features features = Features;
  static constexpr bool has_side =
      Features.inputs || Features.call_stack || Features.module_hierarchy || Features.extra_args;
  static_assert(!Features.inputs || !std::is_same_v<value_traits_type, no_value_traits>,
                "live_queue: recording inputs needs Policies::value_traits (collect/encoder.hpp)");

  explicit live_queue(live_queue_options o = {})
      : o_(o), id_(detail::next_live_queue_id.fetch_add(1, std::memory_order_relaxed)) {
    if (o_.block_records < 4) o_.block_records = 4;  // (a device record takes three)
    if constexpr (!has_side) o_.side_words = 0;
    if (!o_.crash_file.empty()) open_crash_file();
    state_.store(o_.start_stopped ? 0 : 1, std::memory_order_relaxed);
    detail::live_registry& r = detail::live_registry::instance();
    const std::lock_guard lock(r.mutex);
    r.queues.emplace(id_, detail::live_registry::entry{this, [](void* q, detail::live_thread* t) {
                                                         static_cast<live_queue*>(q)->retire(t);
                                                       }});
  }
  live_queue(const live_queue&) = delete;
  live_queue& operator=(const live_queue&) = delete;
  ~live_queue() {
    detail::live_registry& r = detail::live_registry::instance();
    const std::lock_guard lock(r.mutex);
    r.queues.erase(id_);
  }

  // ---- session -------------------------------------------------------------------------
  void start() noexcept { state_.fetch_or(1, std::memory_order_relaxed); }
  void stop() noexcept { state_.fetch_and(~std::uint64_t{1}, std::memory_order_relaxed); }
  [[nodiscard]] bool active() const noexcept {
    return (state_.load(std::memory_order_relaxed) & 1) != 0;
  }

  /// Asks every thread to seal its current block at its next call (the calling thread's at
  /// once), and waits up to `timeout` for them. Returns how many did not answer (their records stay
  /// until they record again or exit).
  std::size_t flush(std::chrono::milliseconds timeout) {
    const std::uint64_t epoch = (state_.fetch_add(2, std::memory_order_acq_rel) >> 1) + 1;
    if (cache_.key == id_) (void)make_room(*cache_.ref, state_.load(std::memory_order_relaxed));
    std::unique_lock lock(mutex_);
    const auto pending = [&] {
      std::size_t n = 0;
      for (const auto& t : threads_)
        if (!t->retired.load(std::memory_order_acquire) &&
            t->acked.load(std::memory_order_acquire) < epoch)
          ++n;
      return n;
    };
    sealed_cv_.wait_for(lock, timeout, [&] { return pending() == 0; });
    return pending();
  }

  // ---- ops -----------------------------------------------------------------------------
  TRACEMODEL_ALWAYS_INLINE live_handle begin_op(const op_info& info) {
    const std::uint64_t s = state_.load(std::memory_order_relaxed);
    if ((s & 1) == 0) [[unlikely]] {
      answer_stopped(s);
      return {};
    }
    detail::live_thread& t = thread();
    if (t.seen != s || t.count == t.capacity) [[unlikely]]
      if (!make_room(t, s)) {
        detail::lost(t.dropped_ops, crash_.get(), false);
        return {};
      }
    std::string_view name = info.name;
    if (info.copy_name) [[unlikely]] {
      if (!copy_name(t, name)) {
        detail::lost(t.dropped_ops, crash_.get(), false);
        return {};
      }
    } else if (crash_ != nullptr && !known_name(t, name)) {
      detail::lost(t.dropped_ops, crash_.get(), false);
      return {};
    }
    return take_record(t, name, info);
  }

  /// Ends the op; false for an empty handle or a second end found on the spot (a late second
  /// end is counted by the consumer).
  TRACEMODEL_ALWAYS_INLINE bool end_op(live_handle h) noexcept {
    const approx_time now = clock::now();
    if (h.record == nullptr) return false;
    detail::live_thread& t = thread();
    const bool here = AddressOnlyEnds ? t.block != nullptr && h.record >= &t.block->records[0] &&
                                            h.record < &t.block->records[0] + t.count
                                      : h.id - t.id_start < t.count;
    if (here && t.block != nullptr && t.seen == state_.load(std::memory_order_relaxed)) [[likely]] {
      // Still in this thread's current block: in place.
      if (h.record->end != 0) [[unlikely]] {
        detail::bump(t.ended_twice);
        return false;
      }
      // Atomic (plain stores on x86): a cut may read the record while this thread owns it.
      std::atomic_ref(h.record->end_tid)
          .store(static_cast<std::uint32_t>(t.tid), std::memory_order_relaxed);
      std::atomic_ref(h.record->end).store(now, std::memory_order_release);
      ++t.ended_here;
      return true;
    }
    return late_end(t, h.id, now);
  }

  /// An op with its inputs, encoded through the value traits into the block's side area.
  template <class V>
  live_handle begin_op(const op_info& info, std::span<const V> inputs) requires(Features.inputs) {
    const std::uint64_t s = state_.load(std::memory_order_relaxed);
    if ((s & 1) == 0) [[unlikely]] {
      answer_stopped(s);
      return {};
    }
    detail::live_thread& t = thread();
    std::string_view name = info.name;
    if (((t.seen != s || t.count == t.capacity) && !make_room(t, s)) ||
        !with_inputs(t, name, info.copy_name, inputs)) {
      detail::lost(t.dropped_ops, crash_.get(), false);
      return {};
    }
    return take_record(t, name, info);
  }

  /// Frames of the op's call stack, outermost first (copied). From any thread, before its end.
  void record_call_stack(live_handle h, std::span<const std::string_view> frames) {
    static_assert(Features.call_stack, "live_queue::record_call_stack: enable call_stack");
    write_side(h, detail::side_kind::call_stack,
               [&](detail::side_words& w) { put_frames(w, frames); });
  }
  /// The op's module frames, outermost first (copied).
  void record_module_hierarchy(live_handle h, std::span<const std::string_view> frames) {
    static_assert(Features.module_hierarchy,
                  "live_queue::record_module_hierarchy: enable module_hierarchy");
    write_side(h, detail::side_kind::modules,
               [&](detail::side_words& w) { put_frames(w, frames); });
  }
  /// Key/value pairs of the op (strings copied).
  void record_extra_args(live_handle h, std::span<const extra_arg> args) {
    static_assert(Features.extra_args, "live_queue::record_extra_args: enable extra_args");
    write_side(h, detail::side_kind::extra_args, [&](detail::side_words& w) {
      w.emplace_back(args.size());
      for (const extra_arg& a : args) {
        const std::string_view key = a.key.substr(0, (std::size_t{1} << 24) - 1);
        const std::string_view str =
            a.type == attr_type::string ? a.s.substr(0, 0xffffffffu) : std::string_view{};
        w.emplace_back(std::uint64_t{static_cast<std::uint8_t>(a.type)} | key.size() << 8 |
                       std::uint64_t{str.size()} << 32);
        std::uint64_t v = 0;
        if (a.type == attr_type::floating)
          std::memcpy(&v, &a.f, sizeof v);
        else
          v = static_cast<std::uint64_t>(a.i);
        w.emplace_back(v);
        w.bytes(key);
        w.bytes(str);
      }
    });
  }

  // ---- other kinds (as record_queue's) -------------------------------------------------
  void record_allocation(std::uint64_t ptr, std::int64_t alloc_size, std::int64_t total_allocated,
                         std::int64_t total_reserved, std::int8_t device_type = 0,
                         std::int8_t device_index = -1) {
    if (active())
      put_kind(detail::live_kind::allocation,
               allocation_record{clock::now(), ptr, alloc_size, total_allocated, total_reserved,
                                 device_type, device_index});
  }
  void record_out_of_memory(std::int64_t alloc_size, std::int64_t total_allocated,
                            std::int64_t total_reserved, std::int8_t device_type = 0,
                            std::int8_t device_index = -1) {
    if (active())
      put_kind(detail::live_kind::out_of_memory,
               oom_record{clock::now(), alloc_size, total_allocated, total_reserved, device_type,
                          device_index});
  }
  /// A device record (times in the queue's ticks), recorded whether or not the queue records
  /// now, its name copied; a host call's thread becomes the runtime's id, as in materialize.
  void record_device(const device_record& r) { put_kind(detail::live_kind::device, r); }

  // ---- draining ------------------------------------------------------------------------
  /// Hands the ops of the blocks sealed so far to `sink` as one event table (a part; none when
  /// there is nothing new): every op whose end is known, each once. Open ops wait for their
  /// end. Lost ops and ends since the last part are counted in its `lost_ops` and
  /// `lost_ends` anomalies (`live_counts` keeps the totals). One consumer at a time.
  template <class Sink>
  void drain(Sink&& sink) {
    hand_out(sink, part_kind::drain);
  }

  /// Waits until a block is sealed, or `timeout` passed (a consumer's pace; it looks every
  /// `poll_interval`, woken only at half the cap, a flush or a thread's exit). Whether one is.
  bool wait_sealed(std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    std::unique_lock lock(mutex_);
    for (;;) {
      if (sealed_.size() >= wake_batch ||
          (o_.max_blocks != 0 && sealed_.size() >= std::max<std::size_t>(1, o_.max_blocks / 2)))
        return true;
      const auto now = std::chrono::steady_clock::now();
      if (now >= deadline) return !sealed_.empty();
      sealed_cv_.wait_for(
          lock, std::min<std::chrono::steady_clock::duration>(deadline - now, o_.poll_interval));
    }
  }

  /// The last drain: flushes (waiting up to `timeout`), drains, then hands out the ops still
  /// open as unfinished and counts the ends whose op never came as orphans.
  template <class Sink>
  void close(Sink&& sink, std::chrono::milliseconds timeout = std::chrono::milliseconds{100}) {
    flush(timeout);
    hand_out(sink, part_kind::last);
  }

  /// A part that stands on its own (a session's end, a dump): flushed, drained, and the ops still
  /// open handed out as unfinished copies (they stay open; their end comes in a later part, with
  /// the same correlation id, which `table_sink` keeps).
  template <class Sink>
  void cut(Sink&& sink, std::chrono::milliseconds timeout = std::chrono::milliseconds{100}) {
    flush(timeout);
    hand_out(sink, part_kind::cut);
  }

  /// Stops recording and cuts: the session's last part, ops that span the stop unfinished in it.
  template <class Sink>
  void stop(Sink&& sink, std::chrono::milliseconds timeout = std::chrono::milliseconds{100}) {
    stop();
    cut(sink, timeout);
  }

  /// A flight recorder's dump: what the queue holds now, as one table (`cut`): open ops as
  /// unfinished copies (they keep the tree's roots), the queue going on as before.
  event_table dump(std::chrono::milliseconds timeout = std::chrono::milliseconds{50}) {
    event_table out;
    cut([&](event_table&& t) { out = std::move(t); }, timeout);
    return out;
  }

  /// Asks for a dump from anywhere, a signal or crash handler included: one lock-free atomic
  /// store (the library installs no handler). The thread that serves dumps sees the request
  /// through `take_dump_request` and calls `dump`.
  void request_dump() noexcept { dump_requested_.store(true, std::memory_order_relaxed); }
  /// Whether a dump was asked for since the last call.
  bool take_dump_request() noexcept {
    return dump_requested_.exchange(false, std::memory_order_acquire);
  }

  /// The totals so far (the consumer's counts are those of the drains done).
  [[nodiscard]] live_counts counts() const {
    live_counts c;
    {
      const std::lock_guard lock(mutex_);
      for (const auto& t : threads_) {
        c.begun += t->begun.load(std::memory_order_relaxed);
        if (t->current != nullptr)  // its current block: the records published, less late ends
          c.begun += t->current->published_records() -
                     t->late_in_block.load(std::memory_order_relaxed) -
                     t->kind_in_block.load(std::memory_order_relaxed);
        c.dropped_ops += t->dropped_ops.load(std::memory_order_relaxed);
        c.dropped_ends += t->dropped_ends.load(std::memory_order_relaxed);
        c.ended_twice += t->ended_twice.load(std::memory_order_relaxed);
        c.lost_side += t->lost_side.load(std::memory_order_relaxed);
      }
      c.lost_side += retired_.lost_side;
      c.begun += retired_.begun;
      c.dropped_ops += retired_.dropped_ops;
      c.dropped_ends += retired_.dropped_ends;
      c.ended_twice += retired_.ended_twice + late_twice_;
      c.evicted_ops = evicted_ops_;
      c.evicted_other = evicted_other_;
    }
    c.ended = ended_.load(std::memory_order_relaxed);
    c.unfinished = unfinished_.load(std::memory_order_relaxed);
    c.orphan_ends = orphans_.load(std::memory_order_relaxed);
    c.open = open_count_.load(std::memory_order_relaxed);
    c.handed_open = handed_open_.load(std::memory_order_relaxed);
    c.other = other_.load(std::memory_order_relaxed);
    return c;
  }
  /// Blocks the queue holds now (recording, sealed, being drained).
  [[nodiscard]] std::size_t blocks_held() const {
    const std::lock_guard lock(mutex_);
    return held_;
  }
  /// Threads that recorded and have not exited.
  [[nodiscard]] std::size_t live_threads() const {
    const std::lock_guard lock(mutex_);
    std::size_t n = 0;
    for (const auto& t : threads_) n += !t->retired.load(std::memory_order_relaxed);
    return n;
  }
  [[nodiscard]] std::uint32_t id() const noexcept { return id_; }

 private:
  using pending_op = detail::live_pending;
  using late = detail::live_late;
  using tail_op = detail::live_tail_op;
  using carried_end = detail::live_carried_end;
  using part_kind = detail::live_part_kind;
  using side_index = detail::live_side_index<Features.inputs, value_traits_type>;

  TRACEMODEL_ALWAYS_INLINE detail::live_thread& thread() {
    cache& c = cache_;
    if (c.key == id_) [[likely]]
      return *c.ref;
    return thread_slow();
  }
  TRACEMODEL_NOINLINE detail::live_thread& thread_slow() {
    auto t = std::make_unique<detail::live_thread>();
    t->tid = current_thread_id();
    t->os_tid = detail::os_thread_id();
    t->pthread_id32 = detail::pthread_thread_id32();
    detail::live_thread* p = t.get();
    {
      const std::lock_guard lock(mutex_);
      threads_.push_back(std::move(t));
    }
    exit_guard_.held.emplace_back(id_, p);
    cache_ = {id_, p};
    return *p;
  }

  /// Takes the sealed blocks and the carried ops, and hands their part to `sink` (if any).
  template <class Sink>
  void hand_out(Sink& sink, part_kind kind) {
    const std::lock_guard consumer(drain_mutex_);
    std::deque<detail::live_block*> taken;
    std::vector<pending_op> carried;
    std::vector<carried_end> carried_ends;
    std::vector<std::uint64_t> carried_side;
    std::vector<tail_op> tail;
    std::vector<std::uint64_t> tail_side;
    {
      const std::lock_guard lock(mutex_);
      taken.swap(sealed_);
      carried.swap(carried_);
      carried_ends.swap(carried_ends_);
      carried_side.swap(carried_side_);
      if (kind != part_kind::drain) read_tails(tail, tail_side);
      for (const auto& t : threads_) pairing_.note_thread(t->os_tid, t->pthread_id32, t->tid);
    }
    if constexpr (has_side) {
      side_index_.begin_part();
      side_index_.index_side(carried_side.data(), carried_side.size());  // (blocks': in convert)
      side_index_.index_side(tail_side.data(), tail_side.size());
    }
    event_table part = convert(taken, carried, carried_ends, tail, kind);
    save_held();
    if (!part.events.empty() || part.anomalies.total() != 0) sink(std::move(part));
    // Recycled once the sink has the part: a crash file keeps them until then.
    {
      const std::lock_guard lock(mutex_);
      for (detail::live_block* b : taken) {
        if (crash_ != nullptr) crash_->set(b->slot, detail::crash_state::free);
        free_.push_back(b);
      }
      save_carried();
    }
    free_cv_.notify_all();
  }

  /// What the threads' current blocks hold beyond what earlier cuts read (live_read_tail).
  void read_tails(std::vector<tail_op>& out, std::vector<std::uint64_t>& side) {
    for (const auto& t : threads_)
      if (t->current != nullptr) detail::live_read_tail<has_side>(*t->current, out, side);
  }

  /// The op's record in the thread's current block (room made), published for cuts.
  TRACEMODEL_ALWAYS_INLINE live_handle take_record(detail::live_thread& t, std::string_view name,
                                                   const op_info& info) {
    op_record* r = &t.block->records[t.count];
    const std::uint64_t id = t.id_start + t.count;
    announce(t);
    ++t.count;
    detail::begin_op_record(r, name, info);
    r->start = clock::now();
    publish(t);
    return {r, id};
  }
  /// What a cut may read of the thread's current block: its records and side words so far (one
  /// release store, a plain store on x86).
  TRACEMODEL_ALWAYS_INLINE static void publish(detail::live_thread& t) noexcept {
    if constexpr (has_side)
      t.pub->store(t.count | std::uint64_t{t.side_used} << 32, std::memory_order_release);
    else
      t.pub->store(t.count, std::memory_order_release);
  }
  /// The record at the count is being written (for a crash file's reader: a death now leaves a
  /// torn record, which it counts instead of reading).
  TRACEMODEL_ALWAYS_INLINE static void announce(detail::live_thread& t) noexcept {
    if constexpr (has_side)
      t.pub->store(t.count | detail::crash_writing | std::uint64_t{t.side_used} << 32,
                   std::memory_order_release);
    else
      t.pub->store(t.count | detail::crash_writing, std::memory_order_release);
  }

  /// The slow path of a record: answer a flush, seal a full block, take a new one.
  TRACEMODEL_NOINLINE bool make_room(detail::live_thread& t, std::uint64_t s) {
    const bool flush = (t.seen >> 1) != (s >> 1);
    t.seen = s;
    if (t.block != nullptr && (flush || t.count == t.capacity)) seal(t);
    if (flush) {
      t.acked.store(s >> 1, std::memory_order_release);
      sealed_cv_.notify_all();
    }
    if (t.block != nullptr) return true;
    if (t.retry > 0) {  // dropping: ask for a block again every 64 records
      --t.retry;
      return false;
    }
    if (!acquire(t)) {
      t.retry = 63;
      return false;
    }
    return true;
  }

  /// A stopped queue still answers a flush (a thread that only begins ops while stopped).
  TRACEMODEL_NOINLINE void answer_stopped(std::uint64_t s) {
    const cache& c = cache_;
    if (c.key != id_ || (c.ref->seen >> 1) == (s >> 1)) return;
    (void)make_room(*c.ref, s);
  }

  /// Another kind's record in the thread's current block (a device record's name copied first).
  template <class T>
  TRACEMODEL_NOINLINE void put_kind(detail::live_kind k, T r) {
    constexpr std::uint32_t n = detail::kind_slots<T>;
    detail::live_thread& t = thread();
    const std::uint64_t s = state_.load(std::memory_order_relaxed);
    if (t.block != nullptr && t.capacity - t.count < n) seal(t);
    std::string_view name;
    if constexpr (std::is_same_v<T, device_record>) name = {r.name, r.name_len};
    if (((t.seen != s || t.block == nullptr) && !make_room(t, s)) ||
        (!name.empty() && !copy_name(t, name))) {
      detail::lost(t.dropped_ops, crash_.get(), false);
      return;
    }
    if constexpr (std::is_same_v<T, device_record>) {
      r.name = name.data();
      r.name_len = static_cast<std::uint32_t>(name.size());
    }
    announce(t);
    detail::put_kind(&t.block->records[t.count], k, r);
    t.count += n;
    t.kind_in_block.store(t.kind_in_block.load(std::memory_order_relaxed) + n,
                          std::memory_order_relaxed);  // (before the count, as late ends)
    publish(t);
  }

  TRACEMODEL_NOINLINE bool late_end(detail::live_thread& t, std::uint64_t id, approx_time now) {
    const std::uint64_t s = state_.load(std::memory_order_relaxed);
    if ((t.seen != s || t.block == nullptr || t.count == t.capacity) && !make_room(t, s)) {
      detail::lost(t.dropped_ends, crash_.get(), true);
      return false;
    }
    announce(t);
    op_record* r = &t.block->records[t.count++];
    r->name = nullptr;
    r->name_len = 0;
    r->start = id;
    r->end = now;
    r->end_tid = static_cast<std::uint32_t>(t.tid);
    r->flags = detail::late_end_flag;
    detail::bump(t.late_in_block);  // (before the count: a reader that sees it sees this)
    publish(t);
    return true;
  }

  /// Copies the name if asked (else, with a crash file, writes its entry) and writes the inputs'
  /// entry, in one block: when they do not fit, the block is sealed and all go to a new one; inputs
  /// that do not fit a whole block are not kept (`lost_side`). False when no block could be had.
  template <class V>
  TRACEMODEL_NOINLINE bool with_inputs(detail::live_thread& t, std::string_view& name, bool copy,
                                       std::span<const V> inputs) {
    const std::string_view given = name;
    for (;;) {
      name = given;
      if (copy ? !copy_name(t, name) : crash_ != nullptr && !known_name(t, name)) return false;
      const bool fresh = t.count == 0 && t.side_used == 0;
      detail::side_words w{t.block->side.get(), t.side_used, t.side_room};
      if (std::uint64_t* head = w.append_contiguous(2); head != nullptr) {
        if constexpr (detail::check_value_traits<value_traits_type, V>())
          detail::io_writer::push<value_traits_type>(w, inputs);
        if (!w.full) {
          head[0] = static_cast<std::uint64_t>(detail::side_kind::inputs) |
                    std::uint64_t{w.used - t.side_used - 2} << 8;
          head[1] = t.id_start + t.count;
          t.side_used = w.used;
          return true;
        }
      }
      if (fresh) {  // more than a block holds
        detail::bump(t.lost_side);
        return true;
      }
      seal(t);
      if (!acquire(t)) return false;
    }
  }

  /// Writes a side entry for the op of `h` in the calling thread's current block (a new block
  /// when it does not fit; counted as `lost_side` when no block can hold it).
  template <class Fill>
  void write_side(live_handle h, detail::side_kind kind, Fill&& fill) {
    if (h.record == nullptr) return;
    detail::live_thread& t = thread();
    const std::uint64_t s = state_.load(std::memory_order_relaxed);
    for (;;) {
      if ((t.seen != s || t.block == nullptr) && !make_room(t, s)) break;
      const bool fresh = t.count == 0 && t.side_used == 0;
      detail::side_words w{t.block->side.get(), t.side_used, t.side_room};
      if (std::uint64_t* head = w.append_contiguous(2); head != nullptr) {
        fill(w);
        if (!w.full) {
          head[0] = static_cast<std::uint64_t>(kind) | std::uint64_t{w.used - t.side_used - 2} << 8;
          head[1] = h.id;
          t.side_used = w.used;
          t.foreign_side |= h.id - t.id_start >= t.count;  // (an op of another block)
          publish(t);
          return;
        }
      }
      if (fresh) break;
      seal(t);
      if (!acquire(t)) break;
    }
    detail::bump(t.lost_side);
  }
  static void put_frames(detail::side_words& w, std::span<const std::string_view> frames) {
    w.emplace_back(frames.size());
    for (const std::string_view f : frames) {
      w.emplace_back(f.size());
      w.bytes(f);
    }
  }

  /// Copies `name` into the thread's block (a new block when there is no room left).
  bool copy_name(detail::live_thread& t, std::string_view& name) {
    if (crash_ != nullptr) return add_name(t, name, true);
    if (name.size() > o_.name_bytes) name = name.substr(0, o_.name_bytes);
    if (t.name_room - t.names_used < name.size()) {
      seal(t);
      if (!acquire(t)) return false;
    }
    char* p = t.block->names.get() + t.names_used;
    std::memcpy(p, name.data(), name.size());
    t.names_used += static_cast<std::uint32_t>(name.size());
    name = {p, name.size()};
    return true;
  }

  // ---- the crash file ------------------------------------------------------------------
  void open_crash_file() {
    if (o_.max_blocks == 0) o_.max_blocks = 256;
    o_.name_bytes = std::max<std::uint32_t>(o_.name_bytes, 64) / 8 * 8;
    crash_ = detail::crash_mapping::open<Features, value_traits_type, clock>(
        o_.crash_file, o_.block_records, o_.name_bytes, o_.side_words,
        static_cast<std::uint32_t>(o_.max_blocks));
    pairing_.sync();  // two points: a reader converts ticks without a consumer's drain
    crash_->points(pairing_.points());
  }
  /// Whether the name is in the thread's current block (crash files): else it is written there.
  TRACEMODEL_ALWAYS_INLINE bool known_name(detail::live_thread& t, std::string_view& name) {
    const auto& s =
        t.named[((reinterpret_cast<std::uintptr_t>(name.data()) >> 3) ^ name.size()) & 31];
    return (s.p == name.data() && s.len == name.size()) || add_name(t, name, false);
  }
  /// A name entry in the thread's block: the name's address in this process, its length, its
  /// bytes (`copy`: the name becomes those bytes). A new block when there is no room.
  TRACEMODEL_NOINLINE bool add_name(detail::live_thread& t, std::string_view& name, bool copy) {
    if (name.size() + 16 > o_.name_bytes) name = name.substr(0, o_.name_bytes - 16);
    const std::uint32_t need = 16 + static_cast<std::uint32_t>((name.size() + 7) / 8 * 8);
    if (t.block == nullptr || t.name_room - t.names_used < need) {
      seal(t);
      if (!acquire(t)) return false;
    }
    const std::string_view kept =
        detail::crash_name_entry(t.block->names.get() + t.names_used, name, copy);
    t.names_used += need;
    t.block->file->names_used.store(t.names_used, std::memory_order_release);
    if (copy) name = kept;
    t.named[((reinterpret_cast<std::uintptr_t>(name.data()) >> 3) ^ name.size()) & 31] = {
        name.data(), name.size()};
    return true;
  }
  /// The consumer's held ops, kept in the crash file before their blocks are recycled.
  void save_held() {
    if (crash_ != nullptr) detail::crash_save_held(*crash_, pairing_, side_index_);
  }
  /// The ops carried out of overwritten blocks (under the lock).
  void save_carried() {
    if (crash_ != nullptr)
      detail::crash_save_carried(*crash_, carried_, carried_ends_, carried_side_);
  }

  /// Hands the thread's current block to the queue (never written again).
  void seal(detail::live_thread& t) {
    detail::live_block* b = t.block;
    if (b == nullptr) return;
    b->count = t.count;
    b->names_used = t.names_used;
    b->side_used = t.side_used;
    const std::uint32_t begins =
        t.count - static_cast<std::uint32_t>(t.late_in_block.load(std::memory_order_relaxed) +
                                             t.kind_in_block.load(std::memory_order_relaxed));
    // Every op ended in place, no entry for another block's op: evicted without a walk.
    b->self_contained = t.ended_here == t.count && !t.foreign_side;
    t.block = nullptr;
    t.capacity = t.count = t.names_used = t.name_room = t.side_used = t.side_room = 0;
    t.ended_here = 0;
    t.foreign_side = false;
    const std::lock_guard lock(mutex_);
    t.begun.store(t.begun.load(std::memory_order_relaxed) + begins, std::memory_order_relaxed);
    t.late_in_block.store(0, std::memory_order_relaxed);
    t.kind_in_block.store(0, std::memory_order_relaxed);
    t.current = nullptr;
    if (b->count == 0 && b->side_used == 0 && b->tail_records == 0) {
      if (crash_ != nullptr) crash_->set(b->slot, detail::crash_state::free);
      free_.push_back(b);
      free_cv_.notify_one();
    } else {
      if (crash_ != nullptr) crash_->set(b->slot, detail::crash_state::sealed);
      b->sealed_at = std::chrono::steady_clock::now();
      sealed_.push_back(b);
      if (o_.policy == when_full::overwrite_oldest && o_.keep_for.count() > 0)
        while (sealed_.size() > 1 && b->sealed_at - sealed_.front()->sealed_at > o_.keep_for) {
          detail::live_block* old = sealed_.front();
          sealed_.pop_front();
          evict(*old);
          if (crash_ != nullptr) crash_->set(old->slot, detail::crash_state::free);
          free_.push_back(old);
          save_carried();  // (only what an eviction carried changes the file's held ops)
        }
      // A consumer waiting (`wait_sealed`) is woken only when half the cap is sealed.
      if (o_.max_blocks != 0 && sealed_.size() == std::max<std::size_t>(1, o_.max_blocks / 2))
        sealed_cv_.notify_all();
    }
  }

  /// A block for the thread under the cap and the policy.
  bool acquire(detail::live_thread& t) {
    std::unique_lock lock(mutex_);
    detail::live_block* b = take_block(lock);
    if (b == nullptr) return false;
    b->tid = t.tid;
    b->count = 0;
    b->names_used = 0;
    b->side_used = 0;
    b->tail_records = b->tail_side = 0;
    b->published.store(0, std::memory_order_relaxed);
    b->id_start = usable::id_source::take(o_.block_records);
    if (crash_ != nullptr) {
      crash_->take(b->slot, b->id_start, t.tid);
      t.named.fill({});
    }
    t.current = b;
    lock.unlock();
    t.block = b;
    t.pub = &b->pub();
    t.id_start = b->id_start;
    t.count = 0;
    t.capacity = o_.block_records;
    t.names_used = 0;
    t.name_room = o_.name_bytes;
    t.side_used = 0;
    t.side_room = o_.side_words;
    return true;
  }

  detail::live_block* take_block(std::unique_lock<std::mutex>& lock) {
    const auto deadline = std::chrono::steady_clock::now() + o_.block_timeout;
    for (;;) {
      if (!free_.empty()) {
        // The block freed longest ago: its lines have left the consumer's cache since.
        detail::live_block* b = free_.front();
        free_.pop_front();
        return b;
      }
      if (o_.max_blocks == 0 || held_ < o_.max_blocks) {
        auto b = std::make_unique<detail::live_block>();
        if (crash_ != nullptr) {  // its slot in the file
          b->slot = static_cast<std::uint32_t>(blocks_.size());
          b->file = &crash_->block(b->slot);
          b->records = detail::borrowed_array(crash_->records(b->slot));
          b->names = detail::borrowed_array(crash_->names(b->slot));
          if (o_.side_words > 0) b->side = detail::borrowed_array(crash_->side(b->slot));
        } else {
          b->records = detail::make_pooled_array<op_record>(o_.block_records);
          b->names = detail::make_pooled_array<char>(o_.name_bytes);
          if (o_.side_words > 0) b->side = detail::make_pooled_array<std::uint64_t>(o_.side_words);
        }
        detail::live_block* p = b.get();
        blocks_.push_back(std::move(b));
        ++held_;
        return p;
      }
      if (o_.policy == when_full::overwrite_oldest && !sealed_.empty()) {
        detail::live_block* b = sealed_.front();
        sealed_.pop_front();
        evict(*b);
        save_carried();
        return b;
      }
      if (o_.policy != when_full::wait ||
          free_cv_.wait_until(lock, deadline) == std::cv_status::timeout)
        return nullptr;
    }
  }

  /// A sealed block overwritten: its open ops are carried, its ended ops counted as lost.
  void evict(detail::live_block& b) {
    const std::uint64_t before = evicted_ops_;
    const std::uint64_t other = evicted_other_;
    detail::live_evict(b, carried_, carried_ends_, carried_side_, evicted_ops_, evicted_other_);
    if (crash_ != nullptr)
      crash_->header().lost_ops.fetch_add(evicted_ops_ - before + evicted_other_ - other,
                                          std::memory_order_relaxed);
  }

  /// A thread exited: its block is sealed (it was its owner), its counts stay.
  void retire(detail::live_thread* t) {
    seal(*t);
    t->retired.store(true, std::memory_order_release);
    if (cache_.ref == t) cache_ = {};
    sealed_cv_.notify_all();
  }

  event_table convert(std::deque<detail::live_block*>& taken, std::vector<pending_op>& carried,
                      const std::vector<carried_end>& carried_ends,
                      const std::vector<tail_op>& tail, part_kind kind) {
    typename decltype(pairing_)::counts n;
    event_table part = pairing_.pair(taken, carried, carried_ends, tail, kind, side_index_, n);
    std::uint64_t orphan_side = 0;
    if constexpr (has_side) {
      side_index_.end_part();
      if (kind == part_kind::last) orphan_side = side_index_.drop_kept();
    }
    // Losses since the last part, per kind, as the part's anomalies.
    std::uint64_t dropped = 0, dropped_ends = 0, evicted = 0, lost_side = 0;
    {
      const std::lock_guard lock(mutex_);
      for (const auto& t : threads_) {
        dropped += t->dropped_ops.load(std::memory_order_relaxed);
        dropped_ends += t->dropped_ends.load(std::memory_order_relaxed);
        lost_side += t->lost_side.load(std::memory_order_relaxed);
      }
      dropped += retired_.dropped_ops;
      dropped_ends += retired_.dropped_ends;
      lost_side += retired_.lost_side;
      evicted = evicted_ops_ + evicted_other_;
      late_twice_ += n.twice;
      // Threads that exited: their block was sealed (and is in this drain or an earlier one);
      // their counts stay in the queue's.
      std::erase_if(threads_, [&](const std::unique_ptr<detail::live_thread>& t) {
        if (!t->retired.load(std::memory_order_acquire)) return false;
        pairing_.note_thread(t->os_tid, t->pthread_id32, t->tid);  // (its blocks may be to come)
        retired_.begun += t->begun.load(std::memory_order_relaxed);
        retired_.dropped_ops += t->dropped_ops.load(std::memory_order_relaxed);
        retired_.dropped_ends += t->dropped_ends.load(std::memory_order_relaxed);
        retired_.ended_twice += t->ended_twice.load(std::memory_order_relaxed);
        retired_.lost_side += t->lost_side.load(std::memory_order_relaxed);
        return true;
      });
    }
    part.anomalies.add(anomaly::lost_op, dropped + evicted - lost_ops_taken_);
    part.anomalies.add(anomaly::lost_end, dropped_ends - lost_ends_taken_);
    part.anomalies.add(anomaly::orphan_end, n.orphans);
    part.anomalies.add(anomaly::op_ended_twice, n.twice);
    part.anomalies.add(anomaly::lost_side, lost_side - lost_side_taken_);
    part.anomalies.add(anomaly::orphan_side, orphan_side);
    lost_ops_taken_ = dropped + evicted;
    lost_ends_taken_ = dropped_ends;
    lost_side_taken_ = lost_side;
    // What was lost since the last part, said in the output too: a global instant.
    if (const std::uint64_t ops = part.anomalies[anomaly::lost_op],
        ends = part.anomalies[anomaly::lost_end];
        ops + ends > 0) {
      auto& e = part.events.emplace_back();
      e.start_ns = pairing_.to_ns(clock::now());
      e.pid = detail::process_id();
      e.instant_scope = 'g';
      auto& f = e.template new_fields<event_kind::op>();
      f.name = part.strings.intern("tracemodel: lost events");
      f.end_ns = e.start_ns;
      part.add_int_attr(e, "lost_ops", static_cast<std::int64_t>(ops));
      part.add_int_attr(e, "lost_ends", static_cast<std::int64_t>(ends));
    }
    ended_.fetch_add(n.ended, std::memory_order_relaxed);
    unfinished_.fetch_add(n.unfinished, std::memory_order_relaxed);
    orphans_.fetch_add(n.orphans, std::memory_order_relaxed);
    handed_open_.fetch_add(n.handed_open, std::memory_order_relaxed);
    other_.fetch_add(n.other, std::memory_order_relaxed);
    open_count_.store(pairing_.open(), std::memory_order_relaxed);
    return part;
  }

  static constexpr std::size_t wake_batch = 1;

  struct cache {
    std::uint32_t key = 0;
    detail::live_thread* ref = nullptr;
  };
  static inline thread_local cache cache_{};
  static inline thread_local detail::live_exit_guard exit_guard_{};

  live_queue_options o_;
  const std::uint32_t id_;
  std::atomic<std::uint64_t> state_{1};  ///< bit 0: recording; the rest: the flush epoch
  std::atomic<bool> dump_requested_{false};
  std::unique_ptr<detail::crash_mapping> crash_;  ///< the crash file, if any
  static_assert(std::atomic<bool>::is_always_lock_free, "request_dump must be signal-safe");
  mutable std::mutex mutex_;  ///< blocks, threads, sealed and carried
  std::condition_variable sealed_cv_, free_cv_;
  std::vector<std::unique_ptr<detail::live_block>> blocks_;
  std::deque<detail::live_block*> free_;
  std::deque<detail::live_block*> sealed_;
  std::vector<pending_op> carried_;
  std::vector<std::uint64_t> carried_side_;  ///< side entries kept out of evicted blocks
  std::vector<carried_end> carried_ends_;    ///< ends kept out of evicted blocks
  std::vector<std::unique_ptr<detail::live_thread>> threads_;
  std::size_t held_ = 0;
  std::uint64_t evicted_ops_ = 0, evicted_other_ = 0, late_twice_ = 0;
  live_counts retired_{};  ///< the counts of threads that exited and were let go
  // The consumer's:
  std::mutex drain_mutex_;
  side_index side_index_;
  detail::live_pairing<clock, has_side, side_index> pairing_;
  std::uint64_t lost_ops_taken_ = 0, lost_ends_taken_ = 0, lost_side_taken_ = 0;
  std::atomic<std::uint64_t> ended_{0}, unfinished_{0}, orphans_{0}, handed_open_{0},
      open_count_{0}, other_{0};
};

TRACEMODEL_END_NAMESPACE
