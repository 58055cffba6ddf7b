// tracemodel/storage — the process-wide pool of fixed-size storage blocks.
//
// Every append-only list takes its blocks from here and gives them back when it is cleared,
// so blocks are recycled across lists, record queues and profiling sessions. Memory that has
// never been touched costs a page fault per 4 KiB on first write, several times the cost of
// the recording itself; a session can therefore `prefault` blocks before it starts.
//
// Blocks are carved out of 2 MiB slabs taken from tracemodel's memory resource (`memory.hpp`),
// the one the event tables use: huge pages where the system has them (first touch costs one
// fault per 2 MiB instead of one per 4 KiB, and the recording streams need 512 times fewer TLB
// entries). `trim` gives the slabs whose blocks are all free back to the resource, and
// `release_cached_memory()` trims the pool before it returns the resource's caches to the
// operating system.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <new>
#include <utility>
#include <vector>

#include "tracemodel/config.hpp"
#include "tracemodel/detail/big_allocator.hpp"

TRACEMODEL_BEGIN_NAMESPACE

/// Counters of the block pool, for tests and for sessions that report their memory.
struct block_pool_stats {
  std::size_t blocks_owned = 0;       ///< blocks of the slabs the pool holds (in use or free)
  std::size_t blocks_free = 0;        ///< blocks waiting in the pool for reuse
  std::size_t blocks_prefaulted = 0;  ///< blocks touched by `prefault` over the pool's life
};

class block_pool {
 public:
  static constexpr std::size_t block_size = block_bytes;
  static_assert(block_size >= 4096 && block_size <= detail::huge_page &&
                    (block_size & (block_size - 1)) == 0,
                "TRACEMODEL_BLOCK_BYTES must be a power of two from 4096 to 2 MiB");
  /// Bytes the pool takes from the memory resource at a time: a huge page (aligned to its
  /// size, so every block is aligned to its own).
  static constexpr std::size_t slab_size = detail::huge_page;
  static constexpr std::size_t blocks_per_slab = slab_size / block_size;

  /// The one pool of the process. Never destroyed: lists that live in static storage may give
  /// their blocks back during static destruction.
  static block_pool& instance() noexcept {
    static block_pool* pool = [] {
      auto* p = new block_pool;
      detail::cache_holders::instance().add({[]() noexcept { return instance().free_bytes(); },
                                             []() noexcept { instance().trim(); }});
      return p;
    }();
    return *pool;
  }

  block_pool(const block_pool&) = delete;
  block_pool& operator=(const block_pool&) = delete;

  /// A block of `block_size` bytes, aligned to `block_size`: a recycled one if there is one.
  [[nodiscard]] void* acquire() {
    std::lock_guard lock(mutex_);
    if (free_ == nullptr) add_slab(false);
    free_node* n = free_;
    free_ = n->next;
    --free_count_;
    return n;
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
    std::lock_guard lock(mutex_);
    std::size_t made = 0;
    while (free_count_ < want) made += add_slab(true);
    prefaulted_ += made;
    return made;
  }

  /// Gives every slab whose blocks are all free back to the memory resource.
  void trim() noexcept {
    std::lock_guard lock(mutex_);
    // Count free blocks per slab.
    std::vector<std::pair<std::uintptr_t, std::size_t>> counts;
    for (free_node* n = free_; n != nullptr; n = n->next) {
      const std::uintptr_t slab = slab_of(n);
      bool found = false;
      for (auto& c : counts)
        if (c.first == slab) {
          ++c.second;
          found = true;
          break;
        }
      if (!found) counts.emplace_back(slab, 1);
    }
    auto releasable = [&counts](std::uintptr_t slab) {
      for (const auto& c : counts)
        if (c.first == slab) return c.second == blocks_per_slab;
      return false;
    };
    free_node** link = &free_;
    while (*link != nullptr) {
      if (releasable(slab_of(*link))) {
        *link = (*link)->next;
        --free_count_;
      } else {
        link = &(*link)->next;
      }
    }
    for (const auto& c : counts)
      if (c.second == blocks_per_slab) free_slab(reinterpret_cast<void*>(c.first));
  }

  /// The start of the block that holds `p` (blocks are aligned to their size).
  static void* block_of(const void* p) noexcept {
    return reinterpret_cast<void*>(reinterpret_cast<std::uintptr_t>(p) &
                                   ~(std::uintptr_t{block_size} - 1));
  }

  [[nodiscard]] block_pool_stats stats() const {
    std::lock_guard lock(mutex_);
    return {owned_, free_count_, prefaulted_};
  }
  /// Bytes of the free blocks.
  [[nodiscard]] std::size_t free_bytes() const noexcept {
    std::lock_guard lock(mutex_);
    return free_count_ * block_size;
  }

 private:
  struct free_node {
    free_node* next;
  };

  block_pool() = default;

  static std::uintptr_t slab_of(const void* p) noexcept {
    return reinterpret_cast<std::uintptr_t>(p) & ~(std::uintptr_t{slab_size} - 1);
  }

  /// Takes a slab from the memory resource and puts its blocks on the free list. Caller holds
  /// the mutex.
  std::size_t add_slab(bool touch) {
    void* p = detail::big_allocate(slab_size);
    if (touch) {
      // Write one byte per page: the page faults happen here, not on the recording path.
      auto* bytes = static_cast<volatile unsigned char*>(p);
      for (std::size_t i = 0; i < slab_size; i += 4096) bytes[i] = 0;
    }
    // Push the blocks so that the lowest address comes out first.
    for (std::size_t i = blocks_per_slab; i-- > 0;) {
      auto* n = reinterpret_cast<free_node*>(static_cast<unsigned char*>(p) + i * block_size);
      n->next = free_;
      free_ = n;
    }
    free_count_ += blocks_per_slab;
    owned_ += blocks_per_slab;
    return blocks_per_slab;
  }

  void free_slab(void* p) noexcept {
    detail::big_deallocate(p, slab_size);
    owned_ -= blocks_per_slab;
  }

  mutable std::mutex mutex_;
  free_node* free_ = nullptr;
  std::size_t free_count_ = 0;
  std::size_t owned_ = 0;
  std::size_t prefaulted_ = 0;
};

TRACEMODEL_END_NAMESPACE
