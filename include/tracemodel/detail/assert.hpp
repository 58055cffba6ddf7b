// tracemodel — internal. Not part of the public API; do not include directly.
//
// Three tiers of errors (see README "Errors"):
//  * TRACEMODEL_ASSERT: internal invariants; a failure is a bug in tracemodel. Users may
//    define TRACEMODEL_ASSERT before including any tracemodel header to replace it.
//  * tracemodel::usage_error / input_error: bad input from the caller, thrown at the API edge.
//  * anomalies in trace data: counted in an `anomalies` record and repaired, never thrown.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "tracemodel/config.hpp"

#ifndef TRACEMODEL_ASSERT
#define TRACEMODEL_ASSERT(cond, msg)                                     \
  do {                                                                   \
    if (!(cond)) [[unlikely]]                                            \
      ::tracemodel::detail::assert_fail(#cond, msg, __FILE__, __LINE__); \
  } while (0)
#endif

TRACEMODEL_BEGIN_NAMESPACE

/// Thrown when the caller breaks an API precondition that can be checked cheaply.
class usage_error : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

/// Thrown when input data (a trace file, a buffer) cannot be turned into a model.
/// `offset()` is the byte offset of the problem in the input, or npos when not applicable.
class input_error : public std::runtime_error {
 public:
  static constexpr std::size_t npos = static_cast<std::size_t>(-1);
  explicit input_error(const std::string& what, std::size_t offset = npos)
      : std::runtime_error(what), offset_(offset) {}
  [[nodiscard]] std::size_t offset() const noexcept { return offset_; }

 private:
  std::size_t offset_;
};

namespace detail {
[[noreturn]] inline void assert_fail(const char* cond, const char* msg, const char* file,
                                     int line) noexcept {
  std::fprintf(stderr, "tracemodel: internal assertion failed: %s (%s) at %s:%d\n", cond, msg, file,
               line);
  std::abort();
}
}  // namespace detail

TRACEMODEL_END_NAMESPACE
