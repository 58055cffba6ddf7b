// tracemodel — internal. Not part of the public API; do not include directly.
//
// `stable_order(keys)`: the permutation that sorts 64-bit signed keys stably, by LSD radix sort.
// When (key - min) and the index fit together in 64 bits (a trace shorter than ~18 minutes with
// under 16M events, say), both are packed into one word and sorted as one: 8 bytes per element
// instead of 16. Already-sorted input costs one pass over the keys.
#pragma once

#include <bit>
#include <cstdint>
#include <vector>

#include "tracemodel/config.hpp"
#include "tracemodel/detail/big_allocator.hpp"

TRACEMODEL_BEGIN_NAMESPACE
namespace detail {

/// Sorts `a` stably by the low `bits` bits of `digit(w, 0)` (`digit(w, s)` gives those bits
/// shifted right by `s`). The digits are as wide as `bits` allows in passes of at most 12 bits
/// (36-bit keys, about a minute of nanoseconds, take three); one read counts all of them, and a
/// digit that is the same in every word takes no pass.
template <class Words, class Digit>
void lsd_radix(Words& a, unsigned bits, Digit digit) {
  using Word = typename Words::value_type;
  constexpr unsigned max_width = 12;
  const std::size_t n = a.size();
  if (bits == 0 || n < 2) return;
  const unsigned passes = (bits + max_width - 1) / max_width;
  const unsigned width = (bits + passes - 1) / passes;
  const std::size_t buckets = std::size_t{1} << width;
  const std::uint64_t mask = buckets - 1;
  std::vector<std::size_t> count(passes * buckets, 0);
  for (const Word& w : a) {
    const std::uint64_t d = digit(w, 0);
    for (unsigned p = 0; p < passes; ++p) ++count[p * buckets + ((d >> (p * width)) & mask)];
  }
  scratch_vector<Word> b;
  for (unsigned p = 0; p < passes; ++p) {
    std::size_t* const c = count.data() + p * buckets;
    const unsigned shift = p * width;
    if (c[digit(a[0], shift) & mask] == n) continue;  // one value of this digit: in order
    if (b.empty()) b.resize(n);
    std::size_t sum = 0;
    for (std::size_t k = 0; k < buckets; ++k) {
      const std::size_t t = c[k];
      c[k] = sum;
      sum += t;
    }
    for (const Word& w : a) b[c[digit(w, shift) & mask]++] = w;
    a.swap(b);
  }
}

/// The stable sorting permutation of `keys`: order[r] is the index of the r-th smallest key.
/// `keys[i]` is read once: the keys are copied on the way (keys are often a field of large
/// records, read with a stride), and the sort works on the copy.
template <class Keys>
scratch_vector<std::uint32_t> stable_order(const Keys& keys) {
  const std::size_t n = keys.size();
  scratch_vector<std::uint32_t> order(n);
  if (n == 0) return order;
  scratch_vector<std::uint64_t> a(n);
  bool sorted = true;
  std::int64_t lo = keys[0], hi = lo, last = lo;
  a[0] = static_cast<std::uint64_t>(lo);
  for (std::size_t i = 1; i < n; ++i) {
    const std::int64_t k = keys[i];
    a[i] = static_cast<std::uint64_t>(k);
    sorted = sorted && last <= k;
    last = k;
    lo = k < lo ? k : lo;
    hi = k > hi ? k : hi;
  }
  if (sorted) {
    for (std::size_t i = 0; i < n; ++i) order[i] = static_cast<std::uint32_t>(i);
    return order;
  }
  const std::uint64_t base = static_cast<std::uint64_t>(lo);
  const auto range = static_cast<std::uint64_t>(hi) - base;
  const unsigned key_bits = static_cast<unsigned>(std::bit_width(range));
  const unsigned index_bits = static_cast<unsigned>(std::bit_width(n - 1));
  if (key_bits + index_bits <= 64) {
    for (std::size_t i = 0; i < n; ++i) a[i] = ((a[i] - base) << index_bits) | i;
    // Indices are in increasing order already: sorting the key bits alone keeps it stable.
    lsd_radix(a, key_bits, [index_bits](std::uint64_t w, unsigned shift) {
      return w >> (index_bits + shift);
    });
    const std::uint64_t mask = index_bits == 64 ? ~0ull : (std::uint64_t{1} << index_bits) - 1;
    for (std::size_t i = 0; i < n; ++i) order[i] = static_cast<std::uint32_t>(a[i] & mask);
  } else {
    struct pair {
      std::uint64_t key;
      std::uint32_t index;
    };
    scratch_vector<pair> p(n);
    for (std::size_t i = 0; i < n; ++i) p[i] = {a[i] - base, static_cast<std::uint32_t>(i)};
    a = {};
    lsd_radix(p, key_bits, [](const pair& w, unsigned shift) { return w.key >> shift; });
    for (std::size_t i = 0; i < n; ++i) order[i] = p[i].index;
  }
  return order;
}

/// The stable start-time order of an event table's events (`events[i].start_ns`).
template <class Events>
scratch_vector<std::uint32_t> start_order(const Events& events) {
  struct starts {
    const Events& e;
    [[nodiscard]] std::size_t size() const noexcept { return e.size(); }
    std::int64_t operator[](std::size_t i) const noexcept { return e[i].start_ns; }
  };
  return stable_order(starts{events});
}

}  // namespace detail
TRACEMODEL_END_NAMESPACE
