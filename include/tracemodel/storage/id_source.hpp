// tracemodel/storage — where correlation IDs come from.
//
// A storage block takes a contiguous range of IDs when it is created; an event's correlation
// ID is then `block start + index in block`, which costs no atomic per event. The ID source is
// a policy:
//
//   concept id_source: `static std::uint64_t take(std::uint64_t n)` returns the first of `n`
//   fresh IDs; ranges handed out by one source never overlap.
//
// The default, `process_id_source`, is ONE counter for the whole process, shared by every
// queue and every storage type. (PyTorch keeps one static counter per template instantiation,
// so two storages of different types hand out the same IDs; we must not.)
#pragma once

#include <atomic>
#include <concepts>
#include <cstdint>

#include "tracemodel/config.hpp"

TRACEMODEL_BEGIN_NAMESPACE

template <class S>
concept id_source = requires(std::uint64_t n) {
  { S::take(n) } -> std::same_as<std::uint64_t>;
};

namespace detail {
// One object for the whole program (inline variable: one definition across translation units).
inline std::atomic<std::uint64_t> process_id_counter{1};
}  // namespace detail

/// The default ID source: one process-wide counter. IDs start at 1; 0 means "no ID".
struct process_id_source {
  static std::uint64_t take(std::uint64_t n) noexcept {
    // Relaxed: only uniqueness of the ranges matters, not ordering with other memory.
    return detail::process_id_counter.fetch_add(n, std::memory_order_relaxed);
  }
};

/// For storages whose elements need no correlation ID: takes nothing.
struct no_id_source {
  static constexpr std::uint64_t take(std::uint64_t) noexcept { return 0; }
};

static_assert(id_source<process_id_source>);
static_assert(id_source<no_id_source>);

TRACEMODEL_END_NAMESPACE
