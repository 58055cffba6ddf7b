// tracemodel — compile-time knobs.
//
// Every knob is an `#ifndef TRACEMODEL_X / #define TRACEMODEL_X default` block and is mirrored
// as an `inline constexpr bool` so that code can use `if constexpr` instead of the preprocessor.
// Set knobs through the CMake target (INTERFACE compile definitions), never per translation
// unit: two translation units that disagree on a knob would break the one-definition rule.
// A user header can be injected with TRACEMODEL_USER_CONFIG_HEADER.
#pragma once

#ifdef TRACEMODEL_USER_CONFIG_HEADER
#include TRACEMODEL_USER_CONFIG_HEADER
#endif

// Recording on/off. Off: the recording macros compile to nothing (arguments are still
// type-checked but never evaluated), and `record_queue` records nothing.
#ifndef TRACEMODEL_ENABLE_COLLECTION
#define TRACEMODEL_ENABLE_COLLECTION 1
#endif

// Use the time-stamp counter as the approximate clock where the target has one.
#ifndef TRACEMODEL_USE_TSC
#if defined(__x86_64__) || defined(_M_X64) || defined(__i386__)
#define TRACEMODEL_USE_TSC 1
#else
#define TRACEMODEL_USE_TSC 0
#endif
#endif

// Bytes per storage block. Every append-only list takes blocks of this size from one
// process-wide pool, so blocks are recycled across lists, queues and profiling sessions.
#ifndef TRACEMODEL_BLOCK_BYTES
#define TRACEMODEL_BLOCK_BYTES 65536
#endif

// Expensive internal consistency checks (tree invariants after every algorithm, ...).
#ifndef TRACEMODEL_DEBUG_CHECKS
#define TRACEMODEL_DEBUG_CHECKS 0
#endif

#define TRACEMODEL_BEGIN_NAMESPACE \
  namespace tracemodel {           \
  inline namespace v0 {
#define TRACEMODEL_END_NAMESPACE \
  }                              \
  }

#if defined(__GNUC__) || defined(__clang__)
#define TRACEMODEL_NOINLINE __attribute__((noinline))
#define TRACEMODEL_ALWAYS_INLINE inline __attribute__((always_inline))
/// Inlines every call in the function's body (hot loops whose speed must not depend on how
/// much else the including translation unit instantiates: the compiler's inlining budget is
/// per unit).
#define TRACEMODEL_FLATTEN __attribute__((flatten))
/// The same for a lambda (after its parameter list).
#define TRACEMODEL_ALWAYS_INLINE_LAMBDA __attribute__((always_inline))
/// Asks for the cache line at `p` ahead of its use (no fault, whatever `p` is).
#define TRACEMODEL_PREFETCH(p) __builtin_prefetch(p)
#else
#define TRACEMODEL_FLATTEN
#define TRACEMODEL_ALWAYS_INLINE_LAMBDA
#define TRACEMODEL_PREFETCH(p) ((void)(p))
#define TRACEMODEL_NOINLINE
#define TRACEMODEL_ALWAYS_INLINE inline
#endif

TRACEMODEL_BEGIN_NAMESPACE
inline constexpr bool collection_enabled = TRACEMODEL_ENABLE_COLLECTION != 0;
inline constexpr bool use_tsc = TRACEMODEL_USE_TSC != 0;
inline constexpr unsigned block_bytes = TRACEMODEL_BLOCK_BYTES;
inline constexpr bool debug_checks = TRACEMODEL_DEBUG_CHECKS != 0;

namespace detail {
/// Asks for the first and the last cache line of `*p` ahead of its use: a row read in a pass
/// over an array whose elements span two or three lines (an event: 112 bytes). Asking for a
/// line between the two as well made no difference in the forward/backward linker's pass.
template <class T>
TRACEMODEL_ALWAYS_INLINE void prefetch_object(const T* p) noexcept {
  TRACEMODEL_PREFETCH(p);
  TRACEMODEL_PREFETCH(reinterpret_cast<const char*>(p) + sizeof(T) - 1);
}
}  // namespace detail
TRACEMODEL_END_NAMESPACE
