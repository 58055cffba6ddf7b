// tracemodel — internal. Not part of the public API; do not include directly.
//
// `stable_order(keys)`: the permutation that sorts 64-bit signed keys stably, by LSD radix sort.
// When (key - min) and the index fit together in 64 bits (a trace shorter than ~18 minutes with
// under 16M events, say), both are packed into one word and sorted as one: 8 bytes per element
// instead of 16. Already-sorted input costs one pass over the keys.
// `near_order`: the same packed order for keys that come one at a time and nearly sorted,
// built by insertion as they come (no pass of its own), with the radix sort as its fallback.
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
    lsd_radix(a, key_bits,
              [index_bits](std::uint64_t w, unsigned shift) { return w >> (index_bits + shift); });
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

/// The ascending order of signed 64-bit keys that come one at a time and nearly in order
/// (a key is rarely below more than a few of the earlier ones: the ends of records taken in
/// order of start, say), ties broken by position: the later position first. Each key is
/// packed with its position into one word, as in `stable_order`, and inserted into the sorted
/// words before it: a compare of the four words above it decides its place without a branch,
/// and only a key below all four walks further down. Input far from that (more than 4 moves a
/// key on average) stops the insertion and sorts the words by radix instead. Keys equal to
/// `top` sort after all others; keys below `base`, or too far above it to pack beside the
/// position, make `ok()` false (the caller uses `stable_order`).
class near_order {
 public:
  near_order(std::size_t n, std::int64_t base, std::int64_t top)
      : n_(n),
        base_(base),
        top_(top),
        index_bits_(n > 1 ? static_cast<unsigned>(std::bit_width(n - 1)) : 0),
        limit_(index_bits_ == 0 ? ~std::uint64_t{0} : ~std::uint64_t{0} >> index_bits_),
        budget_(4 * n + 4096),
        words_(n) {}

  /// The key of the next position.
  TRACEMODEL_ALWAYS_INLINE void add(std::int64_t key) {
    const std::size_t p = next_++;
    std::uint64_t rel = limit_;
    if (key != top_) {
      rel = static_cast<std::uint64_t>(key) - static_cast<std::uint64_t>(base_);
      if (key < base_ || rel >= limit_) [[unlikely]] {
        ok_ = false;
        return;
      }
    }
    const std::uint64_t x = (rel << index_bits_) | (n_ - 1 - p);
    std::uint64_t* const w = words_.data();
    if (p >= 4 && in_order_) [[likely]] {
      const std::uint64_t a1 = w[p - 1], a2 = w[p - 2], a3 = w[p - 3];
      if (w[p - 4] < x) [[likely]] {
        // The words above x move up one place; x takes the place below them.
        const bool g1 = a1 > x, g2 = a2 > x, g3 = a3 > x;
        w[p] = g1 ? a1 : x;
        w[p - 1] = g2 ? a2 : (g1 ? x : a1);
        w[p - 2] = g3 ? a3 : (g2 ? x : a2);
        w[p - 3] = g3 ? x : a3;
        return;
      }
    }
    if (!in_order_) {
      w[p] = x;
      return;
    }
    std::size_t j = p;
    while (j > 0 && w[j - 1] > x) {
      w[j] = w[j - 1];
      --j;
    }
    w[j] = x;
    const std::size_t moved = p - j;
    if (moved > budget_) {
      in_order_ = false;
      return;
    }
    budget_ -= moved;
  }

  /// Whether every key could be packed (call after the last `add`).
  [[nodiscard]] bool ok() const noexcept { return ok_ && next_ == n_; }

  /// The order (call once, when `ok()`): `position(r)` of the r-th smallest key.
  void finish() {
    if (in_order_ || n_ < 2) return;
    std::uint64_t top = 0;
    for (const std::uint64_t w : words_) top = w > top ? w : top;
    lsd_radix(words_, static_cast<unsigned>(std::bit_width(top)),
              [](std::uint64_t w, unsigned shift) { return w >> shift; });
  }
  [[nodiscard]] TRACEMODEL_ALWAYS_INLINE std::size_t position(std::size_t r) const noexcept {
    const std::uint64_t mask = index_bits_ == 0 ? 0 : (std::uint64_t{1} << index_bits_) - 1;
    return n_ - 1 - static_cast<std::size_t>(words_[r] & mask);
  }

 private:
  std::size_t n_;
  std::size_t next_ = 0;
  std::int64_t base_;
  std::int64_t top_;
  unsigned index_bits_;
  std::uint64_t limit_;  // packed keys are below it; `top` keys take it
  std::size_t budget_;   // moves the slow insertions may still make
  scratch_vector<std::uint64_t> words_;
  bool ok_ = true;
  bool in_order_ = true;
};

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
