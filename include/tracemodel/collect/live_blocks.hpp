// tracemodel/collect — the live queue's blocks and per-thread state (collect/live_queue.hpp):
// a block of op records with its copied names and its side area, the side area as the encoder's
// word store, what each recording thread owns and what others read of it, and the registry that
// seals a thread's blocks when it exits.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tracemodel/collect/crash_file.hpp"
#include "tracemodel/collect/records.hpp"
#include "tracemodel/config.hpp"
#include "tracemodel/storage/block_pool.hpp"

TRACEMODEL_BEGIN_NAMESPACE

namespace detail {
/// Late ends are op records with this flag, `start` holding the op's id.
inline constexpr std::uint8_t late_end_flag = 128;

struct live_thread;

/// Side data entries in a block's side area: a header word (the kind in the low byte, the
/// payload's words above), the op's correlation id, then the payload.
enum class side_kind : std::uint8_t { inputs = 1, call_stack, modules, extra_args };

/// A block's records and side words: from the process's block pool (recycled across queues
/// and sessions, touched in advance by `block_pool::prefault`, huge pages where the system has
/// them) when they fill more than half a pool block and fit in one, from the heap otherwise.
struct pooled_deleter {
  bool pooled = false;
  bool borrowed = false;  ///< in a crash file's mapping: not freed
  template <class T>
  void operator()(T* p) const noexcept {
    if (borrowed) return;
    if (pooled)
      block_pool::instance().release(p);
    else
      delete[] p;
  }
};
template <class T>
using pooled_array = std::unique_ptr<T[], pooled_deleter>;
template <class T>
pooled_array<T> make_pooled_array(std::size_t n) {
  static_assert(std::is_trivial_v<T> && alignof(T) <= block_pool::block_size);
  if (const std::size_t bytes = n * sizeof(T);
      bytes <= block_pool::block_size && 2 * bytes > block_pool::block_size)
    return pooled_array<T>(std::launder(::new (block_pool::instance().acquire()) T[n]),
                           pooled_deleter{true});
  return pooled_array<T>(std::make_unique_for_overwrite<T[]>(n).release());
}

template <class T>
pooled_array<T> borrowed_array(T* p) {
  return pooled_array<T>(p, pooled_deleter{false, true});
}

struct alignas(64) live_block {
  pooled_array<op_record> records;
  pooled_array<char> names;
  pooled_array<std::uint64_t> side;
  crash_block* file = nullptr;  ///< its slot's header in the crash file, if the queue has one
  std::uint32_t slot = 0;       ///< (its slot's number)
  std::uint64_t id_start = 0;
  std::uint32_t count = 0;  ///< records written (final once sealed)
  std::uint32_t names_used = 0;
  std::uint32_t side_used = 0;
  /// While current: records | side words << 32 written so far (what a cut may read). A line of
  /// its own: the recording thread stores it at every record, while the consumer reads the
  /// headers of other blocks, which would share its line otherwise.
  alignas(64) std::atomic<std::uint64_t> published{0};
  char published_line_[64 - sizeof(std::atomic<std::uint64_t>)]{};
  std::uint32_t tail_records = 0, tail_side = 0;  ///< read by cuts while current (the consumer's)
  std::uint64_t tid = 0;                          ///< the thread that wrote it
  bool self_contained = false;  ///< sealed with every op ended in place, no other op's entry
  std::chrono::steady_clock::time_point sealed_at{};

  /// The published word: the crash file's when there is one.
  [[nodiscard]] std::atomic<std::uint64_t>& pub() noexcept {
    return file != nullptr ? file->published : published;
  }
  /// Records published (without the bit of one being written) and side words.
  [[nodiscard]] std::uint32_t published_records() noexcept {
    return static_cast<std::uint32_t>(pub().load(std::memory_order_acquire)) &
           static_cast<std::uint32_t>(crash_writing - 1);
  }
};

/// A block's side area as the encoder's word store: what does not fit sets `full`.
struct side_words {
  std::uint64_t* p;
  std::uint32_t used, room;
  bool full = false;
  void emplace_back(std::uint64_t w) noexcept {
    if (used < room)
      p[used++] = w;
    else
      full = true;
  }
  std::uint64_t* append_contiguous(std::size_t n) noexcept {
    if (room - used < n) {
      full = true;
      return nullptr;
    }
    std::uint64_t* r = p + used;
    used += static_cast<std::uint32_t>(n);
    return r;
  }
  /// Bytes in words (the last one padded with zeros).
  void bytes(std::string_view s) noexcept {
    const std::size_t n = (s.size() + 7) / 8;
    if (n == 0) return;
    if (std::uint64_t* w = append_contiguous(n); w != nullptr) {
      w[n - 1] = 0;
      std::memcpy(w, s.data(), s.size());
    }
  }
};

/// Adds one to a counter that only its thread writes (others read it): a plain add and store,
/// not a locked read-modify-write on the recording path.
inline void bump(std::atomic<std::uint64_t>& c) noexcept {
  c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

/// An op or end dropped (no block under the cap): counted by its thread, and in the crash file.
inline void lost(std::atomic<std::uint64_t>& c, crash_mapping* file, bool end) noexcept {
  bump(c);
  if (file != nullptr)
    (end ? file->header().lost_ends : file->header().lost_ops)
        .fetch_add(1, std::memory_order_relaxed);
}

struct live_thread {
  std::uint64_t tid = 0;
  // The owner's alone:
  live_block* block = nullptr;
  std::atomic<std::uint64_t>* pub = nullptr;  ///< its block's published word
  /// With a crash file: names written into the current block's names (by address and length).
  struct name_slot {
    const char* p;
    std::size_t len;
  };
  std::array<name_slot, 32> named{};
  std::uint64_t id_start = 0;
  std::uint32_t count = 0, capacity = 0, names_used = 0, name_room = 0, side_used = 0,
                side_room = 0;
  std::uint64_t seen = 0;  ///< the state word last acted on
  std::uint32_t retry = 0;
  std::uint32_t ended_here = 0;  ///< ops of the current block ended in place
  bool foreign_side = false;     ///< the current block has side entries of another block's ops
  // Read by others:
  std::atomic<std::uint64_t> acked{0};  ///< the flush epoch answered
  /// Ops begun in the blocks sealed (per op: the current block's count less its late ends).
  std::atomic<std::uint64_t> begun{0};
  std::atomic<std::uint64_t> late_in_block{0};  ///< late ends in the current block (bump)
  std::atomic<std::uint64_t> kind_in_block{0};  ///< slots of other kinds' records in it (bump)
  std::uint64_t os_tid = 0, pthread_id32 = 0;   ///< how device records name the thread
  std::atomic<std::uint64_t> dropped_ops{0}, dropped_ends{0}, ended_twice{0},
      lost_side{0};  // (bump)
  std::atomic<bool> retired{false};
  live_block* current = nullptr;  ///< its block, set and cleared under the queue's lock
};

/// The threads' side of every live queue: a thread's blocks are sealed when it exits.
struct live_registry {
  std::mutex mutex;
  struct entry {
    void* queue;
    void (*retire)(void* queue, live_thread* t);
  };
  std::unordered_map<std::uint32_t, entry> queues;  // by queue id
  static live_registry& instance() {
    static live_registry r;
    return r;
  }
};
struct live_exit_guard {
  std::vector<std::pair<std::uint32_t, live_thread*>> held;
  ~live_exit_guard() {
    live_registry& r = live_registry::instance();
    const std::lock_guard lock(r.mutex);
    for (const auto& [id, t] : held)
      if (const auto it = r.queues.find(id); it != r.queues.end())
        it->second.retire(it->second.queue, t);
  }
};
inline std::atomic<std::uint32_t> next_live_queue_id{1};
}  // namespace detail

TRACEMODEL_END_NAMESPACE
