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
/// NumPy's `aheapsort`: the `len` indices at `a` ordered by `less`, as its 1-based heap orders
/// them (the fallback of its introsort past the depth limit).
template <class Less>
void numpy_heapsort(std::size_t* a, std::ptrdiff_t len, Less less) {
  auto h = [a](std::ptrdiff_t i) -> std::size_t& { return a[i - 1]; };
  auto sift = [&](std::ptrdiff_t i, std::ptrdiff_t n, std::size_t tmp) {  // tmp down from i
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
    const std::size_t tmp = h(len);
    h(len) = h(1);
    len -= 1;
    sift(1, len, tmp);
  }
}
}  // namespace detail

/// The permutation that sorts `v` as NumPy's `argsort(kind="quicksort")` does (an introsort
/// that is not stable: equal keys come out in an order its partitioning decides).
template <class T>
[[nodiscard]] std::vector<std::size_t> numpy_argsort(const std::vector<T>& v) {
  const std::size_t n = v.size();
  std::vector<std::size_t> idx(n);
  for (std::size_t k = 0; k < n; ++k) idx[k] = k;
  if (n < 2) return idx;
  auto less = [&](std::size_t a, std::size_t b) { return v[a] < v[b]; };
  auto heapsort = [&](std::size_t* a, std::ptrdiff_t len) { detail::numpy_heapsort(a, len, less); };
  int msb = 0;
  for (std::size_t m = n; m > 1; m >>= 1) ++msb;
  std::size_t* pl = idx.data();
  std::size_t* pr = idx.data() + n - 1;
  std::vector<std::size_t*> stack;
  std::vector<int> depth;
  int cdepth = msb * 2;
  for (;;) {
    if (cdepth < 0) {
      heapsort(pl, pr - pl + 1);
    } else {
      while (pr - pl > 15) {
        std::size_t* pm = pl + ((pr - pl) >> 1);
        if (less(*pm, *pl)) std::swap(*pm, *pl);
        if (less(*pr, *pm)) std::swap(*pr, *pm);
        if (less(*pm, *pl)) std::swap(*pm, *pl);
        const std::size_t vp = *pm;
        std::size_t* pi = pl;
        std::size_t* pj = pr - 1;
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
      for (std::size_t* pi = pl + 1; pi <= pr; ++pi) {  // insertion sort
        const std::size_t vi = *pi;
        std::size_t* pj = pi;
        std::size_t* pk = pi - 1;
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
  return idx;
}

}  // namespace hta
TRACEMODEL_END_NAMESPACE
