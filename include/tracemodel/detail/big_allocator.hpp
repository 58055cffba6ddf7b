// tracemodel — internal. Not part of the public API; do not include directly (the public face is
// `tracemodel/memory.hpp`).
//
// `big_allocator<T>`: a standard allocator for the large arrays of an event table and for the
// algorithms' scratch arrays. Requests of 2 MiB and more are mapped directly, 2 MiB aligned and
// marked for transparent huge pages, so filling a table of millions of events takes a page
// fault per 2 MiB instead of per 4 KiB (faults are dear on a virtual machine). Freed regions can
// be kept in a cache (none by default; a program raises `set_memory_cache_limits`) and reused by
// later requests of up to their size, so scratch arrays and the tables of later sessions do not
// fault again: the same recycling the block pool does for recording. Requests from 64 KiB up to
// 2 MiB are rounded up to a power of two and kept by size when freed (by default up to 8 MiB;
// `set_memory_cache_limits`): a system allocator maps such blocks afresh and unmaps them when
// freed, so each use of them (the reader's per-stretch arrays, the flow binding's) would fault
// every page in again (figures in docs/performance-journal.md). Smaller requests use operator new.
// Stateless allocator.
//
// Where regions are mapped (Linux), a request takes the front of a cached region that holds it
// and the rest stays cached, and a freed region merges with cached neighbours. Arrays fill from
// their front, so the front of a freed array is the part whose pages were touched, and what is
// left of a region after a request took its front is likely untouched: a request prefers the
// front of a freed array (the most recently freed among the smallest), so that an algorithm's
// scratch array freed before the next one is made hands it pages that need no fault, whatever
// the two sizes.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <mutex>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

#include "tracemodel/config.hpp"

#if defined(__linux__)
#include <sys/mman.h>
#define TRACEMODEL_BIG_ALLOC_MMAP 1
#else
#define TRACEMODEL_BIG_ALLOC_MMAP 0
#endif

TRACEMODEL_BEGIN_NAMESPACE
namespace detail {

inline constexpr std::size_t huge_page = std::size_t{2} << 20;

/// The caches' limits in a process that sets none: small, as a library embedded in a runtime
/// should be (memory.hpp: `program_memory_cache` for a program that analyses trace after trace).
struct memory_cache_defaults {
  static constexpr std::size_t regions = 0;
  static constexpr std::size_t blocks = std::size_t{8} << 20;
};

/// What the caches below share: the bytes they hold, their limit, and the lock that guards
/// them. `Cache::set_limit(bytes)` frees what is beyond `bytes` and keeps the limit.
template <class Cache>
class cache_accounting {
 public:
  /// Frees everything cached; the limit stays.
  void release() noexcept {
    const std::size_t keep = limit();
    static_cast<Cache*>(this)->set_limit(0);
    static_cast<Cache*>(this)->set_limit(keep);
  }
  [[nodiscard]] std::size_t limit() const noexcept {
    std::lock_guard lock(mutex_);
    return limit_;
  }
  [[nodiscard]] std::size_t cached_bytes() const noexcept {
    std::lock_guard lock(mutex_);
    return cached_;
  }

 protected:
  explicit cache_accounting(std::size_t limit) noexcept : limit_(limit) {}
  mutable std::mutex mutex_;
  std::size_t cached_ = 0;
  std::size_t limit_;
};

/// Freed big regions kept for reuse.
class region_cache : public cache_accounting<region_cache> {
 public:
  /// Never destroyed: arrays freed during static destruction may still come back to it.
  static region_cache& instance() noexcept {
    static region_cache* c = new region_cache;
    return *c;
  }
  region_cache() noexcept : cache_accounting(memory_cache_defaults::regions) {}
  /// Mapped regions can be split and merged (any page range of a mapping can be unmapped);
  /// regions from operator new cannot.
  static constexpr bool splits = TRACEMODEL_BIG_ALLOC_MMAP != 0;

  /// A cached region of at least `size` bytes (a multiple of the huge page), or nullptr. Where
  /// regions split, the front `size` bytes of the best one that holds them (the front of a
  /// freed array before what is left of one; then the smallest; then the most recently freed;
  /// `actual` is `size`); elsewhere a whole region of at most twice that (`actual` is its size).
  /// `front`, if given, tells whether it was the front of a freed array.
  void* take(std::size_t size, std::size_t& actual, bool* front = nullptr) noexcept {
    std::lock_guard lock(mutex_);
    std::size_t best = regions_.size();
    auto better = [](const region& a, const region& b) {  // a before b
      if (a.freed_front != b.freed_front) return a.freed_front;
      if (a.size != b.size) return a.size < b.size;
      return a.stamp > b.stamp;
    };
    for (std::size_t i = 0; i < regions_.size(); ++i)
      if (regions_[i].size >= size && (splits || regions_[i].size <= 2 * size) &&
          (best == regions_.size() || better(regions_[i], regions_[best])))
        best = i;
    if (best == regions_.size()) return nullptr;
    if (front != nullptr) *front = regions_[best].freed_front;
    actual = splits ? size : regions_[best].size;
    return take_front(best, actual);
  }
  /// Keeps a region if it fits under the limit (merged with the cached regions next to it,
  /// where regions split); returns false when the caller must unmap it.
  bool give(void* p, std::size_t size) noexcept {
    std::lock_guard lock(mutex_);
    if (cached_ + size > limit_) return false;
    try {
      regions_.reserve(regions_.size() + 1);  // the push below cannot throw then
    } catch (...) {
      return false;
    }
    region add{p, size, true, ++stamp_};
    if constexpr (splits) {
      for (std::size_t i = 0; i < regions_.size();) {
        char* const b = static_cast<char*>(regions_[i].p);
        if (b + regions_[i].size == static_cast<char*>(add.p)) {  // its front is the region's
          add = {b, regions_[i].size + add.size, regions_[i].freed_front, add.stamp};
        } else if (static_cast<char*>(add.p) + add.size == b) {
          add.size += regions_[i].size;
        } else {
          ++i;
          continue;
        }
        regions_[i] = regions_.back();
        regions_.pop_back();
      }
    }
    regions_.push_back(add);
    cached_ += size;
    return true;
  }
  /// Frees the cached regions beyond `bytes` and keeps at most that many from now on.
  void set_limit(std::size_t bytes) noexcept { shrink(bytes, true); }
  /// Frees the cached regions beyond `bytes`; the limit stays.
  void trim(std::size_t bytes) noexcept { shrink(bytes, false); }

  struct piece {
    void* p;
    std::size_t size;
  };
  /// Where regions split: cached regions up to `size` bytes in all and at most `max` pieces,
  /// taken out of the cache (the last one split if it is larger than what is left to fill):
  /// fronts of freed arrays (the pages most likely touched), the most recently freed first,
  /// then, with `rests`, what is left of regions (the rest of a split array may have been
  /// touched as well). A request that no freed front holds moves them into its own memory
  /// (`fill_from_cache`), so that pages touched once serve it instead of new ones: the cache
  /// keeps no touched pages while a request touches fresh ones. Returns how many pieces.
  std::size_t take_pieces(std::size_t size, piece* out, std::size_t max, bool rests) noexcept {
    if constexpr (!splits) {
      return 0;
    } else {
      std::lock_guard lock(mutex_);
      std::size_t n = 0;
      while (size > 0 && n < max) {
        std::size_t best = regions_.size();
        auto before = [](const region& a, const region& b) {
          if (a.freed_front != b.freed_front) return a.freed_front;
          return a.stamp > b.stamp;
        };
        for (std::size_t i = 0; i < regions_.size(); ++i)
          if ((rests || regions_[i].freed_front) &&
              (best == regions_.size() || before(regions_[i], regions_[best])))
            best = i;
        if (best == regions_.size()) break;
        const std::size_t len = std::min(regions_[best].size, size);
        out[n++] = {take_front(best, len), len};
        size -= len;
      }
      return n;
    }
  }

 private:
  void shrink(std::size_t bytes, bool as_limit) noexcept;

  struct region {
    void* p;
    std::size_t size;
    bool freed_front = true;  // begins where a freed array began
    std::uint64_t stamp = 0;  // when it was freed (larger: later)
  };
  /// The first `len` bytes of region `i` (with the lock held), out of the cache: what is left
  /// of it stays, no longer a freed array's front.
  void* take_front(std::size_t i, std::size_t len) noexcept {
    region& r = regions_[i];
    void* p = r.p;
    cached_ -= len;
    if (r.size > len) {
      r.p = static_cast<char*>(r.p) + len;
      r.size -= len;
      r.freed_front = false;
    } else {
      r = regions_.back();
      regions_.pop_back();
    }
    return p;
  }
  std::vector<region> regions_;
  std::uint64_t stamp_ = 0;
};

/// Freed blocks of 64 KiB up to 2 MiB (a power of two each), kept by size for reuse.
class block_cache : public cache_accounting<block_cache> {
 public:
  block_cache() noexcept : cache_accounting(memory_cache_defaults::blocks) {}
  static constexpr unsigned min_log = 16, max_log = 21;  // 64 KiB .. 2 MiB
  static constexpr std::align_val_t align{64};
  /// Never destroyed, as region_cache.
  static block_cache& instance() noexcept {
    static block_cache* c = new block_cache;
    return *c;
  }
  /// The class of a request of `bytes` (at least 64 KiB, at most 2 MiB): its log2 size.
  static unsigned size_log(std::size_t bytes) noexcept {
    return static_cast<unsigned>(std::bit_width(bytes - 1));
  }
  /// A cached block of 2^k bytes, or nullptr.
  void* take(unsigned k) noexcept {
    std::lock_guard lock(mutex_);
    auto& v = free_[k - min_log];
    if (v.empty()) return nullptr;
    void* p = v.back();
    v.pop_back();
    cached_ -= std::size_t{1} << k;
    return p;
  }
  /// Keeps a block of 2^k bytes if it fits under the limit; false: the caller frees it.
  bool give(void* p, unsigned k) noexcept {
    std::lock_guard lock(mutex_);
    const std::size_t size = std::size_t{1} << k;
    if (cached_ + size > limit_) return false;
    try {
      free_[k - min_log].push_back(p);
    } catch (...) {
      return false;
    }
    cached_ += size;
    return true;
  }
  /// Frees the cached blocks beyond `bytes` and keeps at most that many from now on.
  void set_limit(std::size_t bytes) noexcept {
    std::vector<void*> release;
    {
      std::lock_guard lock(mutex_);
      limit_ = bytes;
      try {
        for (unsigned k = max_log + 1; k-- > min_log && cached_ > limit_;) {
          auto& v = free_[k - min_log];
          while (!v.empty() && cached_ > limit_) {
            release.push_back(v.back());  // may throw: then the rest stays cached
            v.pop_back();
            cached_ -= std::size_t{1} << k;
          }
        }
      } catch (...) {
      }
    }
    for (void* p : release) ::operator delete(p, align);
  }

 private:
  std::vector<void*> free_[max_log - min_log + 1];
};

/// The mapped size of a big request: whole huge pages.
inline std::size_t big_size(std::size_t bytes) noexcept {
  return (bytes + huge_page - 1) & ~(huge_page - 1);
}

inline void unmap_region(void* p, std::size_t size) noexcept {
#if TRACEMODEL_BIG_ALLOC_MMAP
  ::munmap(p, size);
#else
  ::operator delete (p, std::align_val_t{huge_page});
  (void)size;
#endif
}

inline void region_cache::shrink(std::size_t bytes, bool as_limit) noexcept {
  std::vector<region> release;
  {
    std::lock_guard lock(mutex_);
    if (as_limit) limit_ = bytes;
    const std::size_t keep = std::min(bytes, limit_);
    while (cached_ > keep && !regions_.empty()) {
      release.push_back(regions_.back());
      cached_ -= regions_.back().size;
      regions_.pop_back();
    }
  }
  for (const region& r : release) unmap_region(r.p, r.size);
}

// A region handed out from the cache may be larger than asked for; its true size is kept in
// a small side map so that deallocation (which only knows the requested size) returns all of
// it. Both are rare events (arrays of megabytes).
class region_sizes {
 public:
  static region_sizes& instance() noexcept {
    static region_sizes* s = new region_sizes;
    return *s;
  }
  void remember(void* p, std::size_t size) noexcept {
    std::lock_guard lock(mutex_);
    try {
      entries_.push_back({p, size});
    } catch (...) {
    }
  }
  /// The size `p` was mapped with, or `fallback` if it was mapped at exactly that.
  std::size_t forget(void* p, std::size_t fallback) noexcept {
    std::lock_guard lock(mutex_);
    for (std::size_t i = 0; i < entries_.size(); ++i)
      if (entries_[i].first == p) {
        const std::size_t s = entries_[i].second;
        entries_[i] = entries_.back();
        entries_.pop_back();
        return s;
      }
    return fallback;
  }

 private:
  std::mutex mutex_;
  std::vector<std::pair<void*, std::size_t>> entries_;
};

/// Bytes of live arrays of 64 KiB and more (their sizes rounded as they were taken), recording
/// slabs included.
inline std::atomic<std::size_t>& bytes_in_use() noexcept {
  static std::atomic<std::size_t> n{0};
  return n;
}

/// Another cache of memory taken from here (the recording block pool): how many bytes it holds
/// free, and how to make it give them back (to the caches above).
struct cache_holder {
  std::size_t (*free_bytes)() noexcept;
  void (*give_back)() noexcept;
};
class cache_holders {
 public:
  /// Never destroyed, as region_cache.
  static cache_holders& instance() noexcept {
    static cache_holders* h = new cache_holders;
    return *h;
  }
  void add(cache_holder h) noexcept {
    std::lock_guard lock(mutex_);
    if (n_ < holders_.size()) holders_[n_++] = h;
  }
  [[nodiscard]] std::size_t free_bytes() const noexcept {
    std::lock_guard lock(mutex_);
    std::size_t b = 0;
    for (std::size_t i = 0; i < n_; ++i) b += holders_[i].free_bytes();
    return b;
  }
  void give_back() noexcept {
    std::lock_guard lock(mutex_);
    for (std::size_t i = 0; i < n_; ++i) holders_[i].give_back();
  }

 private:
  mutable std::mutex mutex_;
  std::array<cache_holder, 4> holders_{};
  std::size_t n_ = 0;
};

// Not inlined: callers are flattened hot paths (the reader's direct_event) that only grow
// arrays now and then; inlining the caches' code there made them much slower to compile.
/// Moves the pages of cached regions (`take_pieces`) into `[p, p + size)`, memory of ours that
/// has not been touched (whole huge pages): pages touched before serve it, no fault, no new
/// page (a move of the page tables, not a copy; what no cached region covers stays untouched).
inline void fill_from_cache([[maybe_unused]] void* p, [[maybe_unused]] std::size_t size,
                            [[maybe_unused]] bool rests) noexcept {
#if TRACEMODEL_BIG_ALLOC_MMAP
  region_cache::piece pieces[16];
  const std::size_t n = region_cache::instance().take_pieces(size, pieces, 16, rests);
  char* at = static_cast<char*>(p);
  for (std::size_t i = 0; i < n; ++i) {
    const region_cache::piece& q = pieces[i];
    if (::mremap(q.p, q.size, q.size, MREMAP_MAYMOVE | MREMAP_FIXED, at) == MAP_FAILED &&
        !region_cache::instance().give(q.p, q.size))
      ::munmap(q.p, q.size);  // (`at` keeps its own untouched pages then)
    at += q.size;
  }
#endif
}

TRACEMODEL_NOINLINE inline void* big_allocate(std::size_t bytes) {
  if (bytes >= huge_page) {
    const std::size_t size = big_size(bytes);
    std::size_t actual = 0;
    bool front = false;
    if (void* p = region_cache::instance().take(size, actual, &front)) {
      if (actual != size) region_sizes::instance().remember(p, actual);
      bytes_in_use().fetch_add(actual, std::memory_order_relaxed);
      if (!front) fill_from_cache(p, size, false);  // what is left of a region: untouched
      return p;
    }
    bytes_in_use().fetch_add(size, std::memory_order_relaxed);
#if TRACEMODEL_BIG_ALLOC_MMAP
    void* raw = ::mmap(nullptr, size + huge_page, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) {
      bytes_in_use().fetch_sub(size, std::memory_order_relaxed);
      throw std::bad_alloc();
    }
    const auto r = reinterpret_cast<std::uintptr_t>(raw);
    const std::uintptr_t a = (r + huge_page - 1) & ~(std::uintptr_t{huge_page} - 1);
    if (a > r) ::munmap(raw, a - r);
    if (const std::uintptr_t tail = r + size + huge_page - (a + size); tail > 0)
      ::munmap(reinterpret_cast<void*>(a + size), tail);
#ifdef MADV_HUGEPAGE
    ::madvise(reinterpret_cast<void*>(a), size, MADV_HUGEPAGE);
#endif
    fill_from_cache(reinterpret_cast<void*>(a), size, true);
    return reinterpret_cast<void*>(a);
#else
    try {
      return ::operator new (size, std::align_val_t{huge_page});
    } catch (...) {
      bytes_in_use().fetch_sub(size, std::memory_order_relaxed);
      throw;
    }
#endif
  }
  if (bytes >= std::size_t{1} << block_cache::min_log) {
    const unsigned k = block_cache::size_log(bytes);
    void* p = block_cache::instance().take(k);
    if (p == nullptr) p = ::operator new (std::size_t{1} << k, block_cache::align);
    bytes_in_use().fetch_add(std::size_t{1} << k, std::memory_order_relaxed);
    return p;
  }
  return ::operator new(bytes);
}

TRACEMODEL_NOINLINE inline void big_deallocate(void* p, std::size_t bytes) noexcept {
  if (bytes >= huge_page) {
    const std::size_t size = region_sizes::instance().forget(p, big_size(bytes));
    bytes_in_use().fetch_sub(size, std::memory_order_relaxed);
    if (!region_cache::instance().give(p, size)) unmap_region(p, size);
    return;
  }
  if (bytes >= std::size_t{1} << block_cache::min_log) {
    const unsigned k = block_cache::size_log(bytes);
    bytes_in_use().fetch_sub(std::size_t{1} << k, std::memory_order_relaxed);
    if (!block_cache::instance().give(p, k)) ::operator delete(p, block_cache::align);
    return;
  }
  ::operator delete(p);
}

/// `big_deallocate` for an array whose first `released` bytes were given back with
/// `big_release`: that part is unmapped rather than cached (its pages are gone already, and a
/// cached front is taken to be touched); the rest is freed as usual.
inline void big_deallocate_released(void* p, std::size_t bytes, std::size_t released) noexcept {
#if TRACEMODEL_BIG_ALLOC_MMAP
  if (bytes >= huge_page && released >= huge_page) {
    const std::size_t size = region_sizes::instance().forget(p, big_size(bytes));
    bytes_in_use().fetch_sub(size, std::memory_order_relaxed);
    const std::size_t cut = std::min(released & ~(huge_page - 1), size);
    ::munmap(p, cut);
    char* const rest = static_cast<char*>(p) + cut;
    if (size > cut && !region_cache::instance().give(rest, size - cut))
      unmap_region(rest, size - cut);
    return;
  }
#else
  (void)released;
#endif
  big_deallocate(p, bytes);
}

/// Returns the whole huge pages within bytes [from, to) of an array to the operating system
/// while the array stays allocated: they read as zeros afterwards (and cost a page fault when
/// touched again). `base` must come from big_allocate with `capacity` bytes. A no-op for arrays
/// below a huge page (not mapped by us) and where memory is not mapped (non-Linux). Returns
/// where the released bytes end (`from` when none were released).
inline std::size_t big_release(void* base, std::size_t from, std::size_t to,
                               std::size_t capacity) noexcept {
  const std::size_t first = (from + huge_page - 1) & ~(huge_page - 1);
  const std::size_t last = std::min(to, capacity) & ~(huge_page - 1);
#if TRACEMODEL_BIG_ALLOC_MMAP
  if (capacity >= huge_page && last > first &&
      ::madvise(static_cast<char*>(base) + first, last - first, MADV_DONTNEED) == 0)
    return last;
#else
  (void)base;
  (void)last;
#endif
  return from;
}

template <class T>
struct big_allocator {
  using value_type = T;
  big_allocator() noexcept = default;
  template <class U>
  big_allocator(const big_allocator<U>&) noexcept {}  // NOLINT: converting, as std::allocator
  // NOLINTBEGIN(bugprone-sizeof-expression): T may be a pointer (an array of pointers)
  [[nodiscard]] T* allocate(std::size_t n) {
    if (n > std::numeric_limits<std::size_t>::max() / sizeof(T)) throw std::bad_array_new_length();
    return static_cast<T*>(big_allocate(n * sizeof(T)));
  }
  void deallocate(T* p, std::size_t n) noexcept { big_deallocate(p, n * sizeof(T)); }
  // NOLINTEND(bugprone-sizeof-expression)
  template <class U>
  friend bool operator==(const big_allocator&, const big_allocator<U>&) noexcept {
    return true;
  }
};

/// A vector for large scratch arrays of the algorithms (recycled huge-page regions).
template <class T>
using scratch_vector = std::vector<T, big_allocator<T>>;

/// big_allocator whose vectors default-initialize: `fill_vector<T> v(n)` of a trivial T leaves
/// its elements unwritten (no pass that zeroes what the caller writes anyway).
template <class T>
struct big_fill_allocator : big_allocator<T> {
  template <class U>
  struct rebind {
    using other = big_fill_allocator<U>;
  };
  big_fill_allocator() noexcept = default;
  template <class U>
  big_fill_allocator(const big_fill_allocator<U>&) noexcept {}  // NOLINT: converting
  template <class U>
  void construct(U* p) noexcept(std::is_nothrow_default_constructible_v<U>) {
    ::new (static_cast<void*>(p)) U;
  }
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};

/// A scratch vector whose elements start unwritten (for arrays the caller fills completely).
template <class T>
using fill_vector = std::vector<T, big_fill_allocator<T>>;

}  // namespace detail
TRACEMODEL_END_NAMESPACE
