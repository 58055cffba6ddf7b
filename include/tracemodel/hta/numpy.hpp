// tracemodel/hta — the orders NumPy's sorts give, on which some of HTA's numbers depend (pandas'
// `sort_values` uses NumPy's unstable introsort: equal keys come out in an order its
// partitioning decides).
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "tracemodel/config.hpp"

TRACEMODEL_BEGIN_NAMESPACE
namespace hta {

namespace detail {
/// NumPy's `aheapsort`: the `len` elements at `a` ordered by `less`, as its 1-based heap orders
/// them (the fallback of its introsort past the depth limit).
template <class T, class Less>
void numpy_heapsort(T* a, std::ptrdiff_t len, Less less) {
  auto h = [a](std::ptrdiff_t i) -> T& { return a[i - 1]; };
  auto sift = [&](std::ptrdiff_t i, std::ptrdiff_t n, T tmp) {  // tmp down from i
    for (std::ptrdiff_t j = i << 1; j <= n;) {
      if (j < n && less(h(j), h(j + 1))) j += 1;
      if (!less(tmp, h(j))) break;
      h(i) = h(j);
      i = j;
      j += j;
    }
    h(i) = tmp;
  };
  for (std::ptrdiff_t l = len >> 1; l > 0; --l) sift(l, len, h(l));
  for (; len > 1;) {
    const T tmp = h(len);
    h(len) = h(1);
    len -= 1;
    sift(1, len, tmp);
  }
}
}  // namespace detail

/// The permutation that sorts `v` as NumPy's `argsort(kind="quicksort")` does (an introsort
/// that is not stable: equal keys come out in an order its partitioning decides). NumPy moves
/// indices and compares the keys they point to; the same steps on (key, index) pairs make the
/// same moves, with the keys at hand.
template <class T>
[[nodiscard]] std::vector<std::size_t> numpy_argsort(const std::vector<T>& v) {
  struct item {
    T key;
    std::size_t index;
  };
  const std::size_t n = v.size();
  std::vector<item> a(n);
  for (std::size_t k = 0; k < n; ++k) a[k] = {v[k], k};
  auto less = [](const item& x, const item& y) { return x.key < y.key; };
  if (n >= 2) {
    int msb = 0;
    for (std::size_t m = n; m > 1; m >>= 1) ++msb;
    item* pl = a.data();
    item* pr = a.data() + n - 1;
    std::vector<item*> stack;
    std::vector<int> depth;
    int cdepth = msb * 2;
    for (;;) {
      if (cdepth < 0) {
        detail::numpy_heapsort(pl, pr - pl + 1, less);
      } else {
        while (pr - pl > 15) {  // NumPy's SMALL_QUICKSORT: 16 elements or fewer are left
          item* pm = pl + ((pr - pl) >> 1);
          if (less(*pm, *pl)) std::swap(*pm, *pl);
          if (less(*pr, *pm)) std::swap(*pr, *pm);
          if (less(*pm, *pl)) std::swap(*pm, *pl);
          const item vp = *pm;
          item* pi = pl;
          item* pj = pr - 1;
          std::swap(*pm, *pj);
          for (;;) {
            do ++pi;
            while (less(*pi, vp));
            do --pj;
            while (less(vp, *pj));
            if (pi >= pj) break;
            std::swap(*pi, *pj);
          }
          std::swap(*pi, *(pr - 1));
          if (pi - pl < pr - pi) {
            stack.push_back(pi + 1);
            stack.push_back(pr);
            pr = pi - 1;
          } else {
            stack.push_back(pl);
            stack.push_back(pi - 1);
            pl = pi + 1;
          }
          depth.push_back(--cdepth);
        }
        for (item* pi = pl + 1; pi <= pr; ++pi) {  // insertion sort
          const item vi = *pi;
          item* pj = pi;
          item* pk = pi - 1;
          while (pj > pl && less(vi, *pk)) *pj-- = *pk--;
          *pj = vi;
        }
      }
      if (stack.empty()) break;
      pr = stack.back();
      stack.pop_back();
      pl = stack.back();
      stack.pop_back();
      cdepth = depth.back();
      depth.pop_back();
    }
  }
  std::vector<std::size_t> out(n);
  for (std::size_t k = 0; k < n; ++k) out[k] = a[k].index;
  return out;
}

}  // namespace hta
TRACEMODEL_END_NAMESPACE
