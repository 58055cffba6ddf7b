// tracemodel — internal. Not part of the public API; do not include directly.
//
// Stable sort of (key, payload) pairs that exploits existing order: the input is split into
// its natural ascending runs, which are merged pairwise (bottom-up). Recorded events come in
// a few long sorted runs (one per thread and kind), so this costs about log2(runs) linear
// passes instead of n log n comparisons.
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

#include "tracemodel/config.hpp"

TRACEMODEL_BEGIN_NAMESPACE
namespace detail {

/// Sorts `v` stably by `key(element)`.
template <class T, class Key>
void natural_merge_sort(std::vector<T>& v, Key key) {
  const std::size_t n = v.size();
  if (n < 2) return;
  std::vector<std::size_t> bounds{0};
  for (std::size_t i = 1; i < n; ++i)
    if (key(v[i]) < key(v[i - 1])) bounds.push_back(i);
  bounds.push_back(n);
  if (bounds.size() == 2) return;  // already sorted
  std::vector<T> buf(n);
  auto less = [&key](const T& a, const T& b) { return key(a) < key(b); };
  while (bounds.size() > 2) {
    std::vector<std::size_t> next{0};
    std::size_t r = 0;
    for (; r + 2 < bounds.size(); r += 2) {
      std::merge(v.begin() + static_cast<std::ptrdiff_t>(bounds[r]),
                 v.begin() + static_cast<std::ptrdiff_t>(bounds[r + 1]),
                 v.begin() + static_cast<std::ptrdiff_t>(bounds[r + 1]),
                 v.begin() + static_cast<std::ptrdiff_t>(bounds[r + 2]),
                 buf.begin() + static_cast<std::ptrdiff_t>(bounds[r]), less);
      next.push_back(bounds[r + 2]);
    }
    if (r + 1 < bounds.size()) {  // an odd run left over
      std::copy(v.begin() + static_cast<std::ptrdiff_t>(bounds[r]),
                v.begin() + static_cast<std::ptrdiff_t>(bounds[r + 1]),
                buf.begin() + static_cast<std::ptrdiff_t>(bounds[r]));
      if (next.back() != bounds[r + 1]) next.push_back(bounds[r + 1]);
    }
    v.swap(buf);
    bounds.swap(next);
  }
}

}  // namespace detail
TRACEMODEL_END_NAMESPACE
