// tracemodel — internal. Not part of the public API; do not include directly.
//
// `id_map`: from 64-bit ids (correlation ids, flow ids, external ids) to event indices, filled
// one pair at a time while the table is read. Ids in traces are dense (Kineto numbers them 1,
// 2, ...; our queues hand them out in blocks from one process-wide counter, so a later session
// starts where the last one stopped), so ids in a window of a few times the table's size go
// straight into an array: one access, no hashing, and no list of pairs to write and read
// again. The window is placed by the first id inserted: three quarters of it from that id up
// (a sorted table meets its ids roughly in order) at the front of the array, the quarter below
// it after them, nearest first. The array is reserved, not filled: its pages (1024 ids each)
// are initialized when the first id lands in them, so a map that holds N ids of one block
// touches about 4N bytes, from the front of the array (a scratch array made after the map is
// freed reuses those pages: see big_allocator.hpp). Ids outside the window go to a hash map.
// The first index of an id wins (`insert`: the first one inserted; `insert_min`: the smallest
// one, whatever the order of the inserts); later ones are counted as duplicates.
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "tracemodel/config.hpp"
#include "tracemodel/detail/big_allocator.hpp"
#include "tracemodel/detail/flat_map.hpp"

TRACEMODEL_BEGIN_NAMESPACE
namespace detail {

/// What the map holds: a row index of a table (the model's `row_index`), `no_row` for none.
using row_index = std::uint32_t;
inline constexpr row_index no_row = 0xffffffffu;

class id_map {
 public:
  /// A map for a table of `events` events (a window of 4 * events + 4096 ids takes the array).
  explicit id_map(std::size_t events = 0)
      : limit_(4 * events + 4096),
        below_(limit_ / 4),
        above_(limit_ - below_),
        ready_((limit_ + page - 1) / page, 0) {
    dense_ = static_cast<row_index*>(big_allocate(limit_ * sizeof(row_index)));
  }
  id_map(const id_map&) = delete;
  id_map& operator=(const id_map&) = delete;
  ~id_map() { big_deallocate(dense_, limit_ * sizeof(row_index)); }

  /// Maps `id` to `i` unless it is mapped already; returns whether it was new.
  TRACEMODEL_ALWAYS_INLINE bool insert(std::uint64_t id, row_index i) {
    return entry(id, i).second;
  }

  /// As `insert`, but an id mapped already keeps the smaller of its two indices, and
  /// `replaced()` counts the inserts that found a larger one (none when indices come in order).
  TRACEMODEL_ALWAYS_INLINE bool insert_min(std::uint64_t id, row_index i) {
    const auto [v, fresh] = entry(id, i);
    if (!fresh && i < *v) [[unlikely]] {
      *v = i;
      ++replaced_;
    }
    return fresh;
  }
  [[nodiscard]] std::size_t replaced() const noexcept { return replaced_; }

  [[nodiscard]] TRACEMODEL_ALWAYS_INLINE row_index find(std::uint64_t id) const noexcept {
    if (const std::uint64_t k = slot(id); k < limit_) return ready_[k / page] ? dense_[k] : no_row;
    const row_index* i = sparse_.find(id);
    return i == nullptr ? no_row : *i;
  }

 private:
  /// The array slot of `id`, or `limit_` and above outside the window. Unsigned differences:
  /// an id below the first wraps around in the first, one above it in the second.
  [[nodiscard]] TRACEMODEL_ALWAYS_INLINE std::uint64_t slot(std::uint64_t id) const noexcept {
    if (const std::uint64_t up = id - first_; up < above_) [[likely]]
      return up;
    const std::uint64_t down = first_ - 1 - id;
    return down < below_ ? above_ + down : limit_;
  }
  /// The index `id` maps to, set to `i` if it was not mapped (then true).
  TRACEMODEL_ALWAYS_INLINE std::pair<row_index*, bool> entry(std::uint64_t id, row_index i) {
    if (!placed_) [[unlikely]] {
      first_ = id;
      placed_ = true;
    }
    if (const std::uint64_t k = slot(id); k < limit_) [[likely]] {
      const std::size_t p = k / page;
      if (!ready_[p]) [[unlikely]]
        make_ready(p);
      row_index& slot = dense_[k];
      if (slot != no_row) return {&slot, false};
      slot = i;
      return {&slot, true};
    }
    return sparse_.try_emplace(id, i);
  }
  TRACEMODEL_NOINLINE void make_ready(std::size_t p) noexcept {
    std::fill_n(dense_ + p * page, std::min(page, limit_ - p * page), no_row);
    ready_[p] = 1;
  }
  static constexpr std::size_t page = 1024;
  std::size_t limit_;
  std::size_t below_;  // ids below the first one kept in the array
  std::size_t above_;  // ids from the first one up kept in the array
  std::uint64_t first_ = 0;
  bool placed_ = false;              // first_ set by the first insert
  std::vector<std::uint8_t> ready_;  // bytes: a bit vector costs shifts on every access
  row_index* dense_ = nullptr;
  flat_map<row_index> sparse_;
  std::size_t replaced_ = 0;
};

}  // namespace detail
TRACEMODEL_END_NAMESPACE
