// tracemodel — internal. Not part of the public API; do not include directly.
// Process and OS thread ids.
#pragma once

#include <cstdint>

#include "tracemodel/config.hpp"

#if defined(__linux__)
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>
#elif defined(__unix__) || defined(__APPLE__)
#include <pthread.h>
#include <unistd.h>
#endif

TRACEMODEL_BEGIN_NAMESPACE
namespace detail {

inline std::int64_t process_id() noexcept {
#if defined(__unix__) || defined(__APPLE__)
  return static_cast<std::int64_t>(::getpid());
#else
  return 0;
#endif
}

/// The operating system's id of the calling thread (what Kineto writes as `tid`).
inline std::uint64_t os_thread_id() noexcept {
#if defined(__linux__)
  return static_cast<std::uint64_t>(::syscall(SYS_gettid));
#elif defined(__APPLE__)
  std::uint64_t t = 0;
  pthread_threadid_np(nullptr, &t);
  return t;
#else
  return 0;
#endif
}

/// The calling thread as CUPTI names it in API records (`threadId`): the low 32 bits of
/// `pthread_self()`, not the OS thread id (seen on Linux with CUPTI 13; Kineto maps it the same
/// way).
inline std::uint64_t pthread_thread_id32() noexcept {
#if defined(__unix__) || defined(__APPLE__)
  return static_cast<std::uint32_t>(
      reinterpret_cast<std::uintptr_t>(reinterpret_cast<void*>(::pthread_self())));
#else
  return 0;
#endif
}

}  // namespace detail
TRACEMODEL_END_NAMESPACE
