// tracemodel — internal. Not part of the public API; do not include directly.
//
// `id_map`: from 64-bit ids (correlation ids, flow ids, external ids) to event indices, filled
// one pair at a time while the table is read. Ids in traces are dense (Kineto numbers them 1,
// 2, ...; our queues hand them out in blocks from one counter), so ids up to a few times the
// table's size go straight into an array indexed by the id: one access, no hashing, and no
// list of pairs to write and read again. The array is reserved, not filled: its pages (1024
// ids each) are initialized when the first id lands in them, so a map that holds ids 1..N
// touches 4N bytes. Larger ids go to a hash map. The first index of an id wins; later ones
// are counted as duplicates.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "tracemodel/config.hpp"
#include "tracemodel/detail/big_allocator.hpp"
#include "tracemodel/detail/flat_map.hpp"
#include "tracemodel/model/types.hpp"

TRACEMODEL_BEGIN_NAMESPACE
namespace detail {

class id_map {
 public:
  /// A map for a table of `events` events (ids up to 4 * events + 4096 take the array).
  explicit id_map(std::size_t events = 0)
      : limit_(4 * events + 4096), ready_((limit_ + page - 1) / page, false) {
    dense_ = static_cast<event_index*>(big_allocate(limit_ * sizeof(event_index)));
  }
  id_map(const id_map&) = delete;
  id_map& operator=(const id_map&) = delete;
  ~id_map() { big_deallocate(dense_, limit_ * sizeof(event_index)); }

  /// Maps `id` to `i` unless it is mapped already; returns whether it was new.
  bool insert(std::uint64_t id, event_index i) {
    if (id < limit_) {
      const std::size_t p = id / page;
      if (!ready_[p]) {
        std::fill_n(dense_ + p * page, std::min(page, limit_ - p * page), no_event);
        ready_[p] = true;
      }
      event_index& slot = dense_[id];
      if (slot != no_event) return false;
      slot = i;
      return true;
    }
    return sparse_.try_emplace(id, i).second;
  }

  [[nodiscard]] event_index find(std::uint64_t id) const noexcept {
    if (id < limit_) return ready_[id / page] ? dense_[id] : no_event;
    const event_index* i = sparse_.find(id);
    return i == nullptr ? no_event : *i;
  }

 private:
  static constexpr std::size_t page = 1024;
  std::size_t limit_;
  std::vector<bool> ready_;
  event_index* dense_ = nullptr;
  flat_map<event_index> sparse_;
};

}  // namespace detail
TRACEMODEL_END_NAMESPACE
