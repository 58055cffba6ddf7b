// tracemodel — internal. Not part of the public API; do not include directly.
//
// `stream_array<T>`: an array of trivially copyable values that one thread fills by copying with
// streaming (non-temporal) stores and another thread reads. A plain copy first reads each target
// cache line (to write into it), and where the reading thread still holds that line from the
// last round, the line travels back to the writer's core before it is overwritten; streaming
// stores write whole lines without reading them. Where there are no such stores (not x86), a
// plain copy.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <span>
#include <type_traits>
#include <utility>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "tracemodel/config.hpp"
#include "tracemodel/detail/big_allocator.hpp"

TRACEMODEL_BEGIN_NAMESPACE
namespace detail {

/// Copies `bytes` from `src` to `dst` (16-byte aligned) with streaming stores where there are;
/// call stream_fence() before another thread may read `dst`.
inline void stream_copy(void* dst, const void* src, std::size_t bytes) noexcept {
#if defined(__SSE2__)
  auto* d = static_cast<__m128i*>(dst);
  const char* s = static_cast<const char*>(src);
  std::size_t i = 0;
  for (; i + 64 <= bytes; i += 64, d += 4) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 16));
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 32));
    const __m128i e = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 48));
    _mm_stream_si128(d, a);
    _mm_stream_si128(d + 1, b);
    _mm_stream_si128(d + 2, c);
    _mm_stream_si128(d + 3, e);
  }
  if (i < bytes) std::memcpy(d, s + i, bytes - i);
#else
  if (bytes > 0) std::memcpy(dst, src, bytes);
#endif
}

/// Orders the streaming stores before what follows (a release that publishes them).
inline void stream_fence() noexcept {
#if defined(__SSE2__)
  _mm_sfence();
#endif
}

template <class T>
class stream_array {
  static_assert(std::is_trivially_copyable_v<T>);

 public:
  stream_array() = default;
  stream_array(const stream_array&) = delete;
  stream_array& operator=(const stream_array&) = delete;
  ~stream_array() { release(); }

  /// Replaces the contents with `n` values from `src` (streaming stores).
  void assign(const T* src, std::size_t n) {
    if (n > cap_) {
      release();
      p_ = static_cast<T*>(allocate(n * sizeof(T)));
      cap_ = n;
    }
    stream_copy(p_, src, n * sizeof(T));
    n_ = n;
  }
  [[nodiscard]] std::span<const T> span() const noexcept { return {p_, n_}; }
  [[nodiscard]] std::size_t size() const noexcept { return n_; }

 private:
  // 64-byte aligned: blocks of 64 KiB and more come from big_allocate (kept for the next use
  // when freed, and aligned at least that much), smaller ones from operator new.
  static constexpr std::size_t block_min = std::size_t{1} << block_cache::min_log;
  static void* allocate(std::size_t bytes) {
    return bytes >= block_min ? big_allocate(bytes) : ::operator new (bytes, std::align_val_t{64});
  }
  void release() noexcept {
    if (p_ != nullptr) {
      const std::size_t bytes = cap_ * sizeof(T);
      if (bytes >= block_min)
        big_deallocate(p_, bytes);
      else
        ::operator delete (p_, std::align_val_t{64});
    }
    p_ = nullptr;
    cap_ = n_ = 0;
  }
  T* p_ = nullptr;
  std::size_t n_ = 0, cap_ = 0;
};

}  // namespace detail
TRACEMODEL_END_NAMESPACE
