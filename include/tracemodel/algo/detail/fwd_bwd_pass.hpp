// tracemodel/algo/detail — the forward/backward linker as `analyze` runs it.
//
// The rules of `link_forward_backward` (algo/fwd_bwd.hpp) in two steps: `fwd_bwd_collect`
// reads the table once (wrappers inherit their keys, the ops with a sequence number become
// compact records, threads and key pairs become dense ids) and `fwd_bwd_match` works on those
// records alone, so that `analyze` can run the matching on its second thread while the tree is
// built on the table. `collect` reports how far it has come (`collect_progress`): the tree's
// replay reads a forward thread id only behind it, and reads each row's thread from it.
#pragma once

#include <algorithm>
#include <atomic>
#include <concepts>
#include <cstdint>
#include <limits>
#include <string_view>
#include <vector>

#include "tracemodel/algo/fwd_bwd.hpp"
#include "tracemodel/config.hpp"
#include "tracemodel/detail/big_allocator.hpp"
#include "tracemodel/detail/flat_map.hpp"
#include "tracemodel/detail/radix_sort.hpp"
#include "tracemodel/model/table.hpp"

TRACEMODEL_BEGIN_NAMESPACE
namespace detail {
struct forward_slot {
  std::int64_t start = 0;
  event_index index = no_event;
};
/// Forward-op slots of one thread, indexed by sequence number (an array when the numbers are
/// dense, a hash map when they are not).
class sequence_slots {
 public:
  void reserve_dense(std::int64_t max_seq) {
    dense_.assign(static_cast<std::size_t>(max_seq) + 1, forward_slot{});
  }
  void use_sparse() { sparse_mode_ = true; }
  forward_slot& operator[](std::int64_t seq) {
    if (!sparse_mode_) return dense_[static_cast<std::size_t>(seq)];
    return *sparse_.try_emplace(static_cast<std::uint64_t>(seq), forward_slot{}).first;
  }

 private:
  bool sparse_mode_ = false;
  scratch_vector<forward_slot> dense_;
  flat_map<forward_slot> sparse_;
};
/// How far `collect` has come, for a thread that reads the table meanwhile (`analyze`'s tree
/// builder reads forward thread ids, which `collect` writes into wrappers). The reader may
/// read the ops of the rows below `wait_past`'s answer: `collect` writes nothing into them any
/// more. A table out of order stops `collect`'s first pass; it then undoes what it wrote, once
/// the reader has said (`ack`) that it reads no op fields any more, and starts again.
class collect_progress {
 public:
  static constexpr std::uint64_t done = std::numeric_limits<std::uint64_t>::max();
  static constexpr std::uint64_t failed = done - 1;   // collect threw
  static constexpr std::uint64_t stopped = done - 2;  // out of order: undoing, then again

  /// `chunk`: rows between two reports (at least; more with many threads).
  explicit collect_progress(std::size_t chunk = 4096) noexcept : chunk_(chunk == 0 ? 1 : chunk) {}
  [[nodiscard]] std::size_t chunk() const noexcept { return chunk_; }

  /// Optional: an array of one byte per row, into which `collect`'s first pass writes each
  /// row's thread: its dense id among the table's (pid, tid) pairs in order of first
  /// appearance, the tree's numbering of its stacks (`build_tree` with `pid_tid_key`), or
  /// `many_threads` from there on. A row's byte is written before the pass reports past it,
  /// and only for the rows before the first one out of order.
  static constexpr std::uint8_t many_threads = 0xff;
  void set_row_threads(std::uint8_t* bytes) noexcept { row_threads_ = bytes; }
  [[nodiscard]] std::uint8_t* row_threads() const noexcept { return row_threads_; }
  /// The writer: the bytes of the rows below `rows` are written.
  void publish_row_threads(std::size_t rows) noexcept {
    row_threads_ready_.store(rows, std::memory_order_release);
  }
  /// The reader: the bytes of the rows below this may be read (never waits).
  [[nodiscard]] std::size_t row_threads_ready() const noexcept {
    return row_threads_ready_.load(std::memory_order_acquire);
  }

  // The writer (`collect`).
  void publish(std::uint64_t safe_rows) noexcept {
    safe_.store(safe_rows, std::memory_order_release);
    safe_.notify_all();
  }
  void stop_and_wait() noexcept {
    publish(stopped);
    acked_.wait(false, std::memory_order_acquire);
  }

  // The reader.
  /// Waits until rows up to `row` may be read, or `collect` stopped or ended: the answer is
  /// above `row` then (`done`, `failed` and `stopped` are above every row).
  std::uint64_t wait_past(std::size_t row) const noexcept {
    std::uint64_t s = safe_.load(std::memory_order_acquire);
    while (s <= row) {
      safe_.wait(s, std::memory_order_acquire);
      s = safe_.load(std::memory_order_acquire);
    }
    return s;
  }
  /// Waits until `collect` ended: `done` or `failed`.
  std::uint64_t wait_end() const noexcept {
    std::uint64_t s = safe_.load(std::memory_order_acquire);
    while (s < failed) {
      safe_.wait(s, std::memory_order_acquire);
      s = safe_.load(std::memory_order_acquire);
    }
    return s;
  }
  /// The reader reads no op fields until `wait_end` (a stopped `collect` may undo then).
  void ack() noexcept {
    acked_.store(true, std::memory_order_release);
    acked_.notify_all();
  }

 private:
  std::size_t chunk_;
  std::uint8_t* row_threads_ = nullptr;
  std::atomic<std::size_t> row_threads_ready_{0};
  std::atomic<std::uint64_t> safe_{0};
  std::atomic<bool> acked_{false};
};

/// What the forward/backward linker keeps between its two steps: `collect` reads the table
/// (and lets wrappers inherit their keys), `match` works on these records alone. `analyze`
/// runs `match` while the tree builder works on the table.
struct fwd_bwd_records {
  /// 32 bytes: the matching reads the records twice and writes none of them.
  struct keyed {
    std::int64_t seq;
    std::int64_t start;
    std::int64_t end;  // `open` for ops that never ended
    event_index index;
    std::uint32_t pair;  // the dense (thread, forward thread id) pair: `pairs`
  };
  static constexpr std::int64_t open = std::numeric_limits<std::int64_t>::max();
  scratch_vector<keyed> recs;    ///< ops with a sequence number, in start order
  pair_ids threads;              ///< (pid, tid)
  pair_ids pairs;                ///< (dense thread, forward thread id; 0 for a forward op)
  std::size_t wrappers = 0;      ///< wrappers that took the keys of their backward op
  std::size_t backward_ops = 0;  ///< records with a forward thread id (counted by the matching)

  /// The record's forward thread id (0 for a forward op).
  [[nodiscard]] std::uint64_t fwd(const keyed& k) const { return pairs.pair(k.pair).second; }
  /// The record's thread (its dense id in `threads`).
  [[nodiscard]] std::uint32_t thread(const keyed& k) const {
    return static_cast<std::uint32_t>(pairs.pair(k.pair).first);
  }
};

/// Step one: wrappers inherit their keys; the ops with a sequence number become records.
/// `progress`: told how far it has come, for a thread that reads the table meanwhile
/// (`chunk()`, `publish(rows)`, `stop_and_wait()`: see collect_progress).
/// (Longer than the other functions on purpose: one pass over every row of the table on the
/// analysis's second thread, whose locals the compiler keeps in registers only while they stay
/// in one function; the parts are marked by their comments.)
template <class Policy, class Schema, class Progress = collect_progress>
fwd_bwd_records fwd_bwd_collect(basic_event_table<Schema>& t, Progress* progress = nullptr) {
  fwd_bwd_records out;
  if constexpr (Schema::template contains<event_kind::op>) {
    using keyed = fwd_bwd_records::keyed;
    constexpr std::int64_t open = fwd_bwd_records::open;
    auto& recs = out.recs;
    auto& threads = out.threads;
    // Each record's (thread, forward thread id) pair, through the pair last used by the
    // thread's forward ops and by its backward ops (a thread's records alternate between
    // the two).
    struct last_pair {
      std::uint64_t fwd = 0;
      std::uint32_t id = pair_ids::no_id;
    };
    std::vector<last_pair> last;
    std::size_t last_n = 0;  // last.size(), kept apart (the compiler reloads the vector's)
    auto pair_of = [&](std::uint32_t th, std::uint64_t fwd)
                       TRACEMODEL_ALWAYS_INLINE_LAMBDA -> std::uint32_t {
      const std::size_t slot = 2 * std::size_t{th} + (fwd != 0 ? 1 : 0);
      if (slot >= last_n) [[unlikely]] {
        last.resize(slot + 2);
        last_n = last.size();
      }
      last_pair& c = last[slot];
      if (c.id == pair_ids::no_id || c.fwd != fwd) [[unlikely]]
        c = {fwd, out.pairs.id(th, fwd)};
      return c.id;
    };
    const std::size_t n = t.size();
    recs.reserve(n);  // an upper bound: untouched pages cost nothing
    // One read pass in start order. Wrappers inherit from the backward op that follows them
    // on their thread (decided when that op comes); the ops with a sequence number become
    // compact records, kept in start order (a wrapper's record is inserted at its place).
    // The table's own order is tried first (materialized and read tables are sorted by
    // start); the first event out of order undoes what the pass wrote and starts again in a
    // computed order.
    struct previous {
      event_index index = no_event;
      bool wrapper_scope = false;  // function scope: may be a wrapper
    };
    // What the first pass wrote into wrappers, to undo if it stops: a wrapper is written at
    // most once (it stops being its thread's previous op then), and most had no keys of their
    // own, so those are kept as indices alone.
    struct undo {
      event_index index;
      std::int64_t seq;
      std::uint64_t fwd;
    };
    std::vector<previous> prev;
    std::size_t prev_n = 0;  // prev.size(), kept apart as `last_n`
    scratch_vector<event_index> written_keyless;
    scratch_vector<undo> written;  // every wrapper of a table analysed before
    written_keyless.reserve(n);    // upper bounds: untouched pages cost nothing
    written.reserve(n);
    scratch_vector<event_index> order_storage;
    auto before = [](const keyed& a, const keyed& b) {
      return a.start < b.start || (a.start == b.start && a.index < b.index);
    };
    auto is_wrapper = [&](const auto& op) {
      return op.scope == op_scope::function &&
             t.strings.view(op.name).starts_with(Policy::wrapper_prefix);
    };
    // Rows below `r` are final except a wrapper that its thread's next op has not reached.
    auto report = [&](std::size_t r) {
      std::uint64_t safe = r;
      for (const previous& w : prev)
        if (w.wrapper_scope && w.index < safe &&
            is_wrapper(t.events[w.index].template get<event_kind::op>()))
          safe = w.index;
      progress->publish(safe);
    };
    constexpr std::size_t rows_ahead = 32;
    auto pass = [&](bool identity) -> bool {
      std::int64_t last_start = std::numeric_limits<std::int64_t>::min();
      std::size_t next_report = progress != nullptr && identity ? progress->chunk() : n;
      // Every row's thread, for the tree's replay on the other thread (see
      // collect_progress::set_row_threads): the pass looks up each row's thread then, where
      // it looked up only the ops'. The records' thread numbers then count the threads
      // without ops too, which the matching does not mind (it orders the threads that
      // recorded forward ops by their records, not by these numbers).
      constexpr bool tells_threads = requires(Progress & g) {
        { g.row_threads() } -> std::same_as<std::uint8_t*>;
        g.publish_row_threads(std::size_t{});
      };
      std::uint8_t* const row_threads = [&]() -> std::uint8_t* {
        if constexpr (tells_threads)
          return progress != nullptr && identity ? progress->row_threads() : nullptr;
        else
          return nullptr;
      }();
      auto threads_written = [&](std::size_t rows) {
        if constexpr (tells_threads)
          if (row_threads != nullptr) progress->publish_row_threads(rows);
      };
      for (std::size_t r = 0; r < n; ++r) {
        if (r == next_report) [[unlikely]] {
          threads_written(r);
          report(r);
          next_report = r + std::max(progress->chunk(), 4 * prev.size());
        }
        const auto i = identity ? static_cast<event_index>(r) : order_storage[r];
        auto& e = t.events[i];
        if (identity) {
          // The rows a little ahead: the hardware's prefetcher may not keep up with rows of
          // three cache lines (docs/performance-journal.md).
          if (r + rows_ahead < n) [[likely]]
            prefetch_object(t.events.data() + r + rows_ahead);
          if (e.start_ns < last_start) return false;
          last_start = e.start_ns;
        }
        std::uint32_t th = pair_ids::no_id;
        if (row_threads != nullptr) {
          th = threads.id(static_cast<std::uint64_t>(e.pid), e.tid);
          constexpr std::uint8_t many = collect_progress::many_threads;
          row_threads[r] = th < many ? static_cast<std::uint8_t>(th) : many;
        }
        auto* op = e.template get_if<event_kind::op>();
        if (op == nullptr) continue;
        if (row_threads == nullptr) th = threads.id(static_cast<std::uint64_t>(e.pid), e.tid);
        const std::int64_t end = op->end_ns == no_end_ns ? open : op->end_ns;
        if constexpr (!Policy::wrapper_prefix.empty()) {
          if (th >= prev_n) [[unlikely]] {
            prev.resize(th + 1);
            prev_n = prev.size();
          }
          const previous w = prev[th];
          const bool backward = op->scope == op_scope::backward_function || op->fwd_thread_id > 0;
          if (backward && w.wrapper_scope) {
            auto& we = t.events[w.index];
            auto& wf = we.template get<event_kind::op>();
            if (is_wrapper(wf)) {
              const bool had = wf.sequence_number >= 0;
              if (identity) {
                if (wf.sequence_number == -1 && wf.fwd_thread_id == 0)
                  written_keyless.push_back(w.index);
                else
                  written.push_back({w.index, wf.sequence_number, wf.fwd_thread_id});
              }
              wf.sequence_number = op->sequence_number;
              wf.fwd_thread_id = op->fwd_thread_id;
              ++out.wrappers;
              const keyed wk{wf.sequence_number, we.start_ns,
                             wf.end_ns == no_end_ns ? open : wf.end_ns, w.index,
                             wf.sequence_number >= 0 ? pair_of(th, wf.fwd_thread_id) : 0};
              // Its record, if it has one, is among the last ones (it is the previous op of
              // this thread): update or insert it in start order.
              auto it = recs.end();
              while (it != recs.begin() && before(wk, *(it - 1))) --it;
              const bool found = had && it != recs.begin() && (it - 1)->index == w.index;
              if (found) {
                if (wk.seq >= 0)
                  *(it - 1) = wk;
                else
                  recs.erase(it - 1);
              } else if (wk.seq >= 0) {
                recs.insert(it, wk);
              }
            }
          }
          prev[th] = {i, op->scope == op_scope::function};
        }
        if (op->sequence_number >= 0)
          recs.push_back({op->sequence_number, e.start_ns, end, i, pair_of(th, op->fwd_thread_id)});
      }
      threads_written(n);
      return true;
    };
    if (!pass(true)) {
      if (progress != nullptr) progress->stop_and_wait();
      for (const event_index w : written_keyless) {
        auto& f = t.events[w].template get<event_kind::op>();
        f.sequence_number = -1;
        f.fwd_thread_id = 0;
      }
      for (const undo& u : written) {
        auto& f = t.events[u.index].template get<event_kind::op>();
        f.sequence_number = u.seq;
        f.fwd_thread_id = u.fwd;
      }
      written_keyless = {};
      written = {};
      prev.clear();
      prev_n = 0;
      recs.clear();
      out.wrappers = 0;
      threads = pair_ids{};
      out.pairs = pair_ids{};
      last.clear();
      last_n = 0;
      order_storage = start_order(t.events);
      pass(false);
    }
  }
  if (progress != nullptr) progress->publish(collect_progress::done);
  return out;
}

template <class Policy>
table_vector<flow_link> fwd_bwd_match(fwd_bwd_records& r) {
  using keyed = fwd_bwd_records::keyed;
  auto& recs = r.recs;
  auto& threads = r.threads;
  const pair_ids& pairs = r.pairs;
  table_vector<flow_link> links;
  links.reserve(recs.size() / 2);
  // Both passes over the records ask for the ones a little ahead (as the pass over the table).
  constexpr std::size_t records_ahead = 16;
  // Threads that recorded forward ops, per process, in order of first appearance; and, in
  // the same pass over the records, the largest sequence number and the number of records of
  // each (thread, forward thread id) pair.
  std::vector<std::pair<process_key, std::vector<thread_key>>> forward_threads;
  auto forward_threads_of = [&](process_key pid) -> std::vector<thread_key>& {
    for (auto& [p, v] : forward_threads)
      if (p == pid) return v;
    return forward_threads.emplace_back(pid, std::vector<thread_key>{}).second;
  };
  std::vector<std::int64_t> pair_max_seq(pairs.size(), -1);
  std::vector<std::size_t> pair_count(pairs.size(), 0);
  // Per pair: its records are forward ops (a thread has one such pair), and, until the first
  // of them comes, 2 as well.
  std::vector<std::uint8_t> forward(pairs.size(), 0);
  for (std::uint32_t p = 0; p < pairs.size(); ++p)
    if (pairs.pair(p).second == 0) forward[p] = 3;
  // The visit order by end is built in the same pass (the records come in start order, and
  // their ends are nearly in order then: see near_order).
  const std::int64_t first_start = recs.empty() ? 0 : recs.front().start;
  near_order by_end(Policy::visit_by_end ? recs.size() : 0, first_start, fwd_bwd_records::open);
  for (std::size_t q = 0; q < recs.size(); ++q) {
    const keyed& k = recs[q];
    if (q + records_ahead < recs.size()) [[likely]]
      TRACEMODEL_PREFETCH(&recs[q + records_ahead]);
    if constexpr (Policy::visit_by_end) by_end.add(k.end);
    const std::uint32_t p = k.pair;
    pair_max_seq[p] = std::max(pair_max_seq[p], k.seq);
    ++pair_count[p];
    if (forward[p] != 3) [[likely]]
      continue;
    forward[p] = 1;
    const auto& [pid, tid] = threads.pair(static_cast<std::uint32_t>(pairs.pair(p).first));
    forward_threads_of(static_cast<process_key>(pid)).push_back(tid);
  }
  // The thread whose slots each pair uses: its own for forward ops, the one its key names
  // for backward ops.
  std::vector<std::uint32_t> pair_thread(pairs.size());
  for (std::uint32_t p = 0; p < pairs.size(); ++p) {
    const auto [th, fwd] = pairs.pair(p);
    const auto [pid, tid] = threads.pair(static_cast<std::uint32_t>(th));
    pair_thread[p] =
        fwd == 0 ? static_cast<std::uint32_t>(th)
                 : threads.id(pid, Policy::thread_resolver::resolve(
                                       fwd, forward_threads_of(static_cast<process_key>(pid))));
  }

  // The visit order: end time, ties to the op that started later (with equal ends that is
  // the inner one, so a backward op whose wrapper ends in the same nanosecond still gets
  // the link); or start time. The keys are read reversed for the first, and the sort is
  // stable.
  struct visit_keys {
    const scratch_vector<keyed>& r;
    [[nodiscard]] std::size_t size() const noexcept { return r.size(); }
    std::int64_t operator[](std::size_t k) const noexcept {
      return Policy::visit_by_end ? r[r.size() - 1 - k].end : r[k].start;
    }
  };
  const bool near = Policy::visit_by_end && by_end.ok();
  if (near) by_end.finish();
  const scratch_vector<std::uint32_t> visit =
      near ? scratch_vector<std::uint32_t>{} : stable_order(visit_keys{recs});
  auto visited = [&](std::size_t k) -> const keyed& {
    if (Policy::visit_by_end && near) return recs[by_end.position(k)];
    return Policy::visit_by_end ? recs[recs.size() - 1 - visit[k]] : recs[visit[k]];
  };
  // Slots per thread: arrays over the sequence numbers unless they are sparse. A slot keeps
  // the forward op and its start, so the visit never goes back to the table.
  std::vector<std::int64_t> max_seq(threads.size(), -1);
  std::vector<std::size_t> count(threads.size(), 0);
  for (std::uint32_t p = 0; p < pairs.size(); ++p) {
    max_seq[pair_thread[p]] = std::max(max_seq[pair_thread[p]], pair_max_seq[p]);
    count[pair_thread[p]] += pair_count[p];
  }
  std::vector<sequence_slots> slots(threads.size());
  for (std::size_t th = 0; th < slots.size(); ++th) {
    if (max_seq[th] < 0) continue;
    if (static_cast<std::uint64_t>(max_seq[th]) <= 4 * count[th] + 4096)
      slots[th].reserve_dense(max_seq[th]);
    else
      slots[th].use_sparse();
  }
  std::uint64_t next_id = 1;
  for (std::size_t v = 0; v < recs.size(); ++v) {
    if (v + records_ahead < recs.size()) [[likely]]
      TRACEMODEL_PREFETCH(&visited(v + records_ahead));
    const keyed& k = visited(v);
    forward_slot& slot = slots[pair_thread[k.pair]][k.seq];
    if (forward[k.pair] != 0) {
      if (slot.index == no_event || k.start >= slot.start) slot = {k.start, k.index};
    } else if (++r.backward_ops, slot.index != no_event) {
      links.push_back({flow_kind::fwd_bwd, next_id++, slot.index, k.index});
      if constexpr (Policy::consume_on_match) slot.index = no_event;
    }
  }
  return links;
}

}  // namespace detail
TRACEMODEL_END_NAMESPACE
