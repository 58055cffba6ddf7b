// tracemodel — the memory of large arrays, and how much of it is kept.
//
//   tracemodel::memory_stats m = tracemodel::memory_usage();   // in use, kept for reuse, limits
//   tracemodel::release_cached_memory();                       // give what is kept back, now
//
// Every array of 64 KiB or more that tracemodel makes goes through one memory resource: event
// tables, the algorithms' scratch arrays, the readers' working arrays, and the slabs of the
// recording queues' storage blocks. Arrays of 2 MiB and more are mapped 2 MiB aligned and marked
// for transparent huge pages (a page fault per 2 MiB instead of per 4 KiB); smaller ones are
// rounded up to a power of two. Freed arrays can be kept for reuse, so that the next analysis or
// read does not fault its pages in again: at most `memory_stats::region_limit` bytes of large
// regions and `block_limit` bytes of 64 KiB - 2 MiB blocks. A library inside a runtime keeps
// little by default (no regions, 8 MiB of blocks); a program that reads and analyses trace
// after trace raises the limits (`program_memory_cache()`: 2 GiB and 64 MiB, what the
// `tracemodel` program and the benchmarks use), and any caller can choose its own
// (`set_memory_cache_limits`). A large request that no kept region holds gets the kept regions'
// pages moved into it (no copy), so that what is kept serves the next arrays instead of sitting
// beside them. The recording block pool keeps its free blocks for the next session on top of
// that (`pool_free`). A process that is done with tracing for a while calls
// `release_cached_memory()`: all of it goes back to the operating system.
//
// `array_memory()` is the same resource as a `std::pmr::memory_resource`, for a caller's own
// containers.
#pragma once

#include <cstddef>
#include <memory_resource>
#include <new>

#include "tracemodel/config.hpp"
#include "tracemodel/detail/big_allocator.hpp"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

TRACEMODEL_BEGIN_NAMESPACE

struct memory_stats {
  std::size_t in_use = 0;          ///< bytes of live arrays of 64 KiB and more (slabs included)
  std::size_t regions_cached = 0;  ///< bytes of freed arrays of 2 MiB and more, kept
  std::size_t blocks_cached = 0;   ///< bytes of freed arrays of 64 KiB - 2 MiB, kept
  std::size_t pool_free = 0;       ///< bytes of free recording blocks in the block pool
  std::size_t region_limit = 0;    ///< the most `regions_cached` may reach
  std::size_t block_limit = 0;     ///< the most `blocks_cached` may reach
  /// Everything kept for reuse.
  [[nodiscard]] std::size_t cached() const noexcept {
    return regions_cached + blocks_cached + pool_free;
  }
};

/// What the memory resource holds now.
[[nodiscard]] inline memory_stats memory_usage() noexcept {
  memory_stats s;
  s.in_use = detail::bytes_in_use().load(std::memory_order_relaxed);
  s.regions_cached = detail::region_cache::instance().cached_bytes();
  s.blocks_cached = detail::block_cache::instance().cached_bytes();
  s.pool_free = detail::cache_holders::instance().free_bytes();
  s.region_limit = detail::region_cache::instance().limit();
  s.block_limit = detail::block_cache::instance().limit();
  return s;
}

/// Sets the most bytes of freed arrays kept for reuse (0: none); what is kept beyond a new
/// limit is given back at once.
inline void set_memory_cache_limits(std::size_t region_bytes, std::size_t small_bytes) noexcept {
  detail::region_cache::instance().set_limit(region_bytes);
  detail::block_cache::instance().set_limit(small_bytes);
}

/// The limits of a program that reads and analyses trace after trace (the `tracemodel` program,
/// the benchmarks): up to 2 GiB of large regions and 64 MiB of blocks kept for the next read.
inline void program_memory_cache() noexcept {
  set_memory_cache_limits(std::size_t{2} << 30, std::size_t{64} << 20);
}

/// Gives the cached large regions (arrays of 2 MiB and more) beyond `keep_bytes` back to the
/// operating system; the limits stay. With glibc, the free memory of malloc's heaps goes back
/// too (`malloc_trim`): the fragments of one rank's smaller allocations otherwise stay resident
/// and the peak creeps up rank after rank (by 17 MiB over six ranks of 1M events). A pipeline
/// that drops a table and reads the next one keeps about a table's worth (`for_each_rank` and
/// `read_rank` do), so that the scratch freed by analyses does not stay resident beside the
/// tables in flight.
inline void trim_cached_memory(std::size_t keep_bytes) noexcept {
  detail::region_cache::instance().trim(keep_bytes);
#if defined(__GLIBC__)
  ::malloc_trim(0);
#endif
}

/// Gives every byte kept for reuse back to the operating system: the free slabs of the
/// recording block pool, then the cached regions and blocks. The limits stay.
inline void release_cached_memory() noexcept {
  detail::cache_holders::instance().give_back();
  detail::region_cache::instance().release();
  detail::block_cache::instance().release();
}

/// The resource as a `std::pmr::memory_resource` (all instances are the same resource).
class array_memory_resource final : public std::pmr::memory_resource {
 private:
  void* do_allocate(std::size_t bytes, std::size_t align) override {
    if (align <= alignment_of(bytes)) return detail::big_allocate(bytes);
    return ::operator new (bytes, std::align_val_t{align});
  }
  void do_deallocate(void* p, std::size_t bytes, std::size_t align) noexcept override {
    if (align <= alignment_of(bytes))
      detail::big_deallocate(p, bytes);
    else
      ::operator delete (p, std::align_val_t{align});
  }
  [[nodiscard]] bool do_is_equal(const std::pmr::memory_resource& o) const noexcept override {
    return dynamic_cast<const array_memory_resource*>(&o) != nullptr;
  }
  /// The alignment `big_allocate` guarantees for a request of `bytes`.
  static std::size_t alignment_of(std::size_t bytes) noexcept {
    if (bytes >= detail::huge_page) return detail::huge_page;
    if (bytes >= std::size_t{1} << detail::block_cache::min_log)
      return static_cast<std::size_t>(detail::block_cache::align);
    return __STDCPP_DEFAULT_NEW_ALIGNMENT__;
  }
};

/// The memory resource of tracemodel's large arrays.
[[nodiscard]] inline std::pmr::memory_resource& array_memory() noexcept {
  static array_memory_resource r;
  return r;
}

TRACEMODEL_END_NAMESPACE
