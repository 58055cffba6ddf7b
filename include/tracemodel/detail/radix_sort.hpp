// tracemodel — internal. Not part of the public API; do not include directly.
//
// `stable_order(keys)`: the permutation that sorts 64-bit signed keys stably, by LSD radix sort.
// When (key - min) and the index fit together in 64 bits (a trace shorter than ~18 minutes with
// under 16M events, say), both are packed into one word and sorted as one: 8 bytes per element
// instead of 16. Already-sorted input costs one pass.
#pragma once

#include <bit>
#include <cstdint>
#include <vector>

#include "tracemodel/config.hpp"
#include "tracemodel/detail/big_allocator.hpp"

TRACEMODEL_BEGIN_NAMESPACE
namespace detail {

template <class Words, class Digit>
void lsd_radix(Words& a, unsigned bits, Digit digit) {
  using Word = typename Words::value_type;
  constexpr unsigned radix_bits = 11;
  constexpr std::size_t buckets = std::size_t{1} << radix_bits;
  scratch_vector<Word> b(a.size());
  std::vector<std::size_t> count(buckets);
  for (unsigned shift = 0; shift < bits; shift += radix_bits) {
    std::fill(count.begin(), count.end(), 0);
    for (const Word& w : a) ++count[digit(w, shift) & (buckets - 1)];
    std::size_t sum = 0;
    for (auto& c : count) {
      const std::size_t t = c;
      c = sum;
      sum += t;
    }
    for (const Word& w : a) b[count[digit(w, shift) & (buckets - 1)]++] = w;
    a.swap(b);
  }
}

/// The stable sorting permutation of `keys`: order[r] is the index of the r-th smallest key.
template <class Keys>
scratch_vector<std::uint32_t> stable_order(const Keys& keys) {
  const std::size_t n = keys.size();
  scratch_vector<std::uint32_t> order(n);
  if (n == 0) return order;
  bool sorted = true;
  std::int64_t lo = keys[0], hi = keys[0];
  for (std::size_t i = 1; i < n; ++i) {
    sorted = sorted && keys[i - 1] <= keys[i];
    lo = keys[i] < lo ? keys[i] : lo;
    hi = keys[i] > hi ? keys[i] : hi;
  }
  if (sorted) {
    for (std::size_t i = 0; i < n; ++i) order[i] = static_cast<std::uint32_t>(i);
    return order;
  }
  const auto range = static_cast<std::uint64_t>(hi) - static_cast<std::uint64_t>(lo);
  const unsigned key_bits = static_cast<unsigned>(std::bit_width(range));
  const unsigned index_bits = static_cast<unsigned>(std::bit_width(n - 1));
  if (key_bits + index_bits <= 64) {
    scratch_vector<std::uint64_t> a(n);
    for (std::size_t i = 0; i < n; ++i)
      a[i] = ((static_cast<std::uint64_t>(keys[i]) - static_cast<std::uint64_t>(lo)) << index_bits) | i;
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
    scratch_vector<pair> a(n);
    for (std::size_t i = 0; i < n; ++i)
      a[i] = {static_cast<std::uint64_t>(keys[i]) - static_cast<std::uint64_t>(lo),
              static_cast<std::uint32_t>(i)};
    lsd_radix(a, key_bits, [](const pair& p, unsigned shift) { return p.key >> shift; });
    for (std::size_t i = 0; i < n; ++i) order[i] = a[i].index;
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
