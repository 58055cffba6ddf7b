// tracemodel/storage — the process-wide pool of fixed-size storage blocks.
//
// Every append-only list takes its blocks from here and gives them back when it is cleared,
// so blocks are recycled across lists, record queues and profiling sessions. Memory that has
// never been touched costs a page fault per 4 KiB on first write, several times the cost of
// the recording itself; a session can therefore `prefault` blocks before it starts.
//
// Blocks come straight from the operating system (mmap on POSIX), so a block that has not
// been recycled really is untouched memory, and `trim` really returns memory.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <new>

#include "tracemodel/config.hpp"

#if defined(__unix__) || defined(__APPLE__)
#include <sys/mman.h>
#define TRACEMODEL_HAS_MMAP 1
#else
#define TRACEMODEL_HAS_MMAP 0
#endif

TRACEMODEL_BEGIN_NAMESPACE

/// Counters of the block pool, for tests and for sessions that report their memory.
struct block_pool_stats {
  std::size_t blocks_from_os = 0;  ///< blocks obtained from the OS and not yet returned
  std::size_t blocks_free = 0;     ///< blocks waiting in the pool for reuse
  std::size_t blocks_prefaulted = 0;  ///< blocks touched by `prefault` over the pool's life
};

class block_pool {
 public:
  static constexpr std::size_t block_size = block_bytes;
  static_assert(block_size >= 4096 && (block_size & (block_size - 1)) == 0,
                "TRACEMODEL_BLOCK_BYTES must be a power of two of at least 4096");

  /// The one pool of the process.
  static block_pool& instance() noexcept {
    static block_pool pool;
    return pool;
  }

  block_pool(const block_pool&) = delete;
  block_pool& operator=(const block_pool&) = delete;
  ~block_pool() { trim(); }

  /// A block of `block_size` bytes, aligned to `block_size`: a recycled one if there is one.
  [[nodiscard]] void* acquire() {
    {
      std::lock_guard lock(mutex_);
      if (free_ != nullptr) {
        free_node* n = free_;
        free_ = n->next;
        --free_count_;
        return n;
      }
    }
    return allocate_from_os(false);
  }

  /// Gives a block back for reuse. The block must come from `acquire`.
  void release(void* block) noexcept {
    auto* n = static_cast<free_node*>(block);
    std::lock_guard lock(mutex_);
    n->next = free_;
    free_ = n;
    ++free_count_;
  }

  /// Makes sure at least `bytes` worth of blocks wait in the pool with their pages already
  /// touched. Returns the number of blocks newly obtained and touched.
  std::size_t prefault(std::size_t bytes) {
    const std::size_t want = (bytes + block_size - 1) / block_size;
    std::size_t have = 0;
    {
      std::lock_guard lock(mutex_);
      have = free_count_;
    }
    std::size_t made = 0;
    for (; have + made < want; ++made) release(allocate_from_os(true));
    prefaulted_.fetch_add(made, std::memory_order_relaxed);
    return made;
  }

  /// Returns every free block to the OS.
  void trim() noexcept {
    free_node* list = nullptr;
    {
      std::lock_guard lock(mutex_);
      list = free_;
      free_ = nullptr;
      free_count_ = 0;
    }
    while (list != nullptr) {
      free_node* next = list->next;
      free_to_os(list);
      list = next;
    }
  }

  /// The start of the block that holds `p` (blocks are aligned to their size).
  static void* block_of(const void* p) noexcept {
    return reinterpret_cast<void*>(reinterpret_cast<std::uintptr_t>(p) &
                                   ~(std::uintptr_t{block_size} - 1));
  }

  [[nodiscard]] block_pool_stats stats() const {
    std::lock_guard lock(mutex_);
    return {from_os_.load(std::memory_order_relaxed), free_count_,
            prefaulted_.load(std::memory_order_relaxed)};
  }

 private:
  struct free_node {
    free_node* next;
  };

  block_pool() = default;

  void* allocate_from_os(bool touch) {
    void* p = nullptr;
#if TRACEMODEL_HAS_MMAP
    // Map twice the size and keep the block-aligned middle, so that a block's header is found
    // from any address inside it by masking (see `block_of`).
    void* raw = ::mmap(nullptr, 2 * block_size, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) throw std::bad_alloc();
    const auto r = reinterpret_cast<std::uintptr_t>(raw);
    const std::uintptr_t a = (r + block_size - 1) & ~(std::uintptr_t{block_size} - 1);
    if (a > r) ::munmap(raw, a - r);
    if (const std::uintptr_t tail = r + 2 * block_size - (a + block_size); tail > 0)
      ::munmap(reinterpret_cast<void*>(a + block_size), tail);
    p = reinterpret_cast<void*>(a);
#else
    p = ::operator new(block_size, std::align_val_t{block_size});
#endif
    if (touch) {
      // Write one byte per page: the page faults happen here, not on the recording path.
      auto* bytes = static_cast<volatile unsigned char*>(p);
      for (std::size_t i = 0; i < block_size; i += 4096) bytes[i] = 0;
    }
    from_os_.fetch_add(1, std::memory_order_relaxed);
    return p;
  }

  void free_to_os(void* p) noexcept {
#if TRACEMODEL_HAS_MMAP
    ::munmap(p, block_size);
#else
    ::operator delete(p, std::align_val_t{block_size});
#endif
    from_os_.fetch_sub(1, std::memory_order_relaxed);
  }

  mutable std::mutex mutex_;
  free_node* free_ = nullptr;
  std::size_t free_count_ = 0;
  std::atomic<std::size_t> from_os_{0};
  std::atomic<std::size_t> prefaulted_{0};
};

TRACEMODEL_END_NAMESPACE
