// tracemodel — internal. Not part of the public API; do not include directly.
// Process and OS thread ids.
#pragma once

#include <cstdint>

#include "tracemodel/config.hpp"

#if defined(__linux__)
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

/// The operating system's id of the calling thread (what CUPTI and Kineto report).
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

}  // namespace detail
TRACEMODEL_END_NAMESPACE
