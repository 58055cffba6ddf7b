// tracemodel — internal. Not part of the public API; do not include directly.
//
// `id_map`: from 64-bit ids (correlation ids, flow ids, external ids) to event indices, built
// once from (id, index) pairs. Ids in traces are dense (Kineto numbers them 1, 2, ...; our
// queues hand them out in blocks from one counter), so when the ids span at most a few times
// their number, the map is a plain array indexed by (id - smallest): one access, no hashing, no
// cache miss per probe. Otherwise it is a hash map. The first pair of an id wins; later pairs
// with the same id are counted as duplicates.
#pragma once

#include <cstdint>
#include <utility>

#include "tracemodel/config.hpp"
#include "tracemodel/detail/big_allocator.hpp"
#include "tracemodel/detail/flat_map.hpp"
#include "tracemodel/model/types.hpp"

TRACEMODEL_BEGIN_NAMESPACE
namespace detail {

class id_map {
 public:
  using pairs = scratch_vector<std::pair<std::uint64_t, event_index>>;

  /// Builds the map; returns the number of duplicate ids (ignored pairs).
  std::size_t build(const pairs& p) {
    std::size_t duplicates = 0;
    dense_.clear();
    sparse_.clear();
    if (p.empty()) {
      dense_mode_ = true;
      lo_ = 1;
      return 0;
    }
    std::uint64_t lo = p.front().first, hi = lo;
    for (const auto& [id, i] : p) {
      lo = id < lo ? id : lo;
      hi = id > hi ? id : hi;
    }
    const std::uint64_t span = hi - lo + 1;
    dense_mode_ = span <= 4 * p.size() + 4096;
    lo_ = lo;
    if (dense_mode_) {
      dense_.assign(span, no_event);
      for (const auto& [id, i] : p) {
        event_index& slot = dense_[id - lo];
        if (slot == no_event)
          slot = i;
        else
          ++duplicates;
      }
    } else {
      sparse_ = flat_map<event_index>(p.size());
      for (const auto& [id, i] : p)
        if (!sparse_.try_emplace(id, i).second) ++duplicates;
    }
    return duplicates;
  }

  [[nodiscard]] event_index find(std::uint64_t id) const noexcept {
    if (dense_mode_) {
      if (id < lo_ || id - lo_ >= dense_.size()) return no_event;
      return dense_[id - lo_];
    }
    const event_index* i = sparse_.find(id);
    return i == nullptr ? no_event : *i;
  }

 private:
  bool dense_mode_ = true;
  std::uint64_t lo_ = 1;
  scratch_vector<event_index> dense_;
  flat_map<event_index> sparse_;
};

}  // namespace detail
TRACEMODEL_END_NAMESPACE
