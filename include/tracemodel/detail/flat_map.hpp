// tracemodel — internal. Not part of the public API; do not include directly.
//
// `flat_map<V>`: open-addressing hash map from 64-bit integer keys to trivially copyable
// values, linear probing, power-of-two capacity, load factor <= 1/2. No erase (the algorithms
// that need removal use a tombstone value of their own). Used for pointer caches and
// correlation maps, where std::unordered_map's node allocations dominate.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "tracemodel/config.hpp"
#include "tracemodel/detail/big_allocator.hpp"

TRACEMODEL_BEGIN_NAMESPACE
namespace detail {

constexpr std::uint64_t mix64(std::uint64_t x) noexcept {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}

/// Unaligned loads of a fixed size. Short strings are read through these alone: a memcpy of a
/// variable length into a local is compiled as stores of pieces, and a whole-word load of that
/// local waits for them to retire (no store forwarding), which was most of the string table's
/// cost when a trace reader interned its names.
inline std::uint64_t load_u64(const char* p) noexcept {
  std::uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}
inline std::uint32_t load_u32(const char* p) noexcept {
  std::uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
/// Every byte of a string of 1 to 7 bytes, in one word (which bytes are where depends on `n`):
/// the first and last four bytes from 4 on, else the first, middle and last byte.
inline std::uint64_t short_word(const char* p, std::size_t n) noexcept {
  if (n >= 4) return load_u32(p) | std::uint64_t{load_u32(p + n - 4)} << 32;
  return static_cast<unsigned char>(p[0]) |
         std::uint64_t{static_cast<unsigned char>(p[n / 2])} << 8 |
         std::uint64_t{static_cast<unsigned char>(p[n - 1])} << 16;
}
/// Whether the `n` bytes at `a` and `b` are equal (inlined: names are short, and a call of
/// memcmp costs more than comparing them).
inline bool same_bytes(const char* a, const char* b, std::size_t n) noexcept {
  if (n >= 8) {
    for (std::size_t i = 0; i + 8 < n; i += 8)
      if (load_u64(a + i) != load_u64(b + i)) return false;
    return load_u64(a + n - 8) == load_u64(b + n - 8);
  }
  return n == 0 || short_word(a, n) == short_word(b, n);
}
inline bool same_text(std::string_view a, std::string_view b) noexcept {
  return a.size() == b.size() && same_bytes(a.data(), b.data(), a.size());
}

/// A fast, good-enough 64-bit string hash (8 bytes per step; the last step reads the last 8
/// bytes, overlapping the one before, and strings under 8 bytes are read as one word).
inline std::uint64_t hash_bytes(const char* p, std::size_t n) noexcept {
  std::uint64_t h = 0x9e3779b97f4a7c15ULL ^ (n * 0xbf58476d1ce4e5b9ULL);
  if (n < 8) return mix64(h ^ (n == 0 ? 0 : short_word(p, n)) ^ (n << 56));
  for (std::size_t i = 0; i + 8 < n; i += 8) h = mix64(h ^ load_u64(p + i)) + 0x632be59bd9b4e019ULL;
  return mix64(h ^ load_u64(p + n - 8));
}

template <class V>
class flat_map {
  static_assert(std::is_trivially_copyable_v<V>);

 public:
  flat_map() { rehash(16); }
  explicit flat_map(std::size_t expected) { rehash(capacity_for(expected)); }

  /// Inserts (key, value) if key is absent. Returns {pointer to the stored value, inserted}.
  std::pair<V*, bool> try_emplace(std::uint64_t key, V value) {
    if ((size_ + 1) * 2 > slots_.size()) rehash(slots_.size() * 2);
    std::size_t i = mix64(key) & mask_;
    while (slots_[i].used) {
      if (slots_[i].key == key) return {&slots_[i].value, false};
      i = (i + 1) & mask_;
    }
    slots_[i] = {key, value, true};
    ++size_;
    return {&slots_[i].value, true};
  }
  /// Inserts or overwrites.
  void insert_or_assign(std::uint64_t key, V value) {
    auto [p, inserted] = try_emplace(key, value);
    if (!inserted) *p = value;
  }
  [[nodiscard]] V* find(std::uint64_t key) noexcept {
    std::size_t i = mix64(key) & mask_;
    while (slots_[i].used) {
      if (slots_[i].key == key) return &slots_[i].value;
      i = (i + 1) & mask_;
    }
    return nullptr;
  }
  [[nodiscard]] const V* find(std::uint64_t key) const noexcept {
    return const_cast<flat_map*>(this)->find(key);
  }
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  void clear() {
    for (auto& s : slots_) s.used = false;
    size_ = 0;
  }
  template <class F>
  void for_each(F&& f) const {
    for (const auto& s : slots_)
      if (s.used) f(s.key, s.value);
  }

 private:
  struct slot {
    std::uint64_t key;
    V value;
    bool used;
  };
  static std::size_t capacity_for(std::size_t n) {
    std::size_t c = 16;
    while (c < n * 2 + 2) c *= 2;
    return c;
  }
  void rehash(std::size_t cap) {
    scratch_vector<slot> old = std::move(slots_);
    slots_.assign(cap, slot{0, V{}, false});
    mask_ = cap - 1;
    size_ = 0;
    for (const auto& s : old)
      if (s.used) try_emplace(s.key, s.value);
  }
  scratch_vector<slot> slots_;
  std::size_t mask_ = 0;
  std::size_t size_ = 0;
};

/// Dense ids for pairs of 64-bit values (for example (pid, tid) thread keys): `id(a, b)` returns
/// 0, 1, 2, ... in order of first appearance.
class pair_ids {
 public:
  TRACEMODEL_ALWAYS_INLINE std::uint32_t id(std::uint64_t a, std::uint64_t b) {
    // A small direct-mapped cache: events of a handful of threads interleave.
    recent& r = recent_[set_of(a, b)];
    if (r.id != no_id && r.a == a && r.b == b) [[likely]]
      return r.id;
    return miss(a, b);
  }
  static constexpr std::uint32_t no_id = 0xffffffffu;

 private:
  TRACEMODEL_NOINLINE std::uint32_t miss(std::uint64_t a, std::uint64_t b) {
    const std::uint64_t h = hash(a, b);
    std::uint32_t* bucket = index_.find(h);
    std::uint32_t found = no_id;
    if (bucket != nullptr) {
      for (std::uint32_t i = *bucket; i != no_id; i = next_[i])
        if (pairs_[i].first == a && pairs_[i].second == b) {
          found = i;
          break;
        }
    }
    if (found == no_id) {
      found = static_cast<std::uint32_t>(pairs_.size());
      pairs_.emplace_back(a, b);
      next_.push_back(bucket != nullptr ? *bucket : no_id);
      index_.insert_or_assign(h, found);
      if (pairs_.size() <= sets) {
        reseed();  // puts every pair known into the cache
        return found;
      }
    }
    recent_[set_of(a, b)] = {a, b, found};
    return found;
  }

  /// The cache's sets come from a multiplicative hash whose factor is chosen, while there are
  /// at most as many pairs as sets, so that the pairs known share as few sets as it can find
  /// in 256 tries (none, almost always, up to 10 pairs). Thread ids are whatever the system
  /// gave out: with one fixed hash, two of four threads shared a set about once in three, and
  /// evicted each other on every event (a 10M-event analysis whose four threads all shared
  /// one took 1.3 times as long).
  void reseed() {
    std::uint64_t candidate = factor_;
    std::size_t best = sets + 1;
    for (int attempt = 0; attempt < 256 && best > 0; ++attempt) {
      candidate = mix64(candidate + 0x632be59bd9b4e019ULL) | 1;
      std::uint32_t used = 0;
      for (const auto& [a, b] : pairs_) used |= std::uint32_t{1} << set_of(a, b, candidate);
      const std::size_t shared = pairs_.size() - static_cast<std::size_t>(std::popcount(used));
      if (shared < best) {
        best = shared;
        factor_ = candidate;
      }
    }
    for (recent& r : recent_) r = recent{};
    for (std::uint32_t i = 0; i < pairs_.size(); ++i)
      recent_[set_of(pairs_[i].first, pairs_[i].second)] = {pairs_[i].first, pairs_[i].second, i};
  }
  /// The key of a pair in `index_`.
  [[nodiscard]] static std::uint64_t hash(std::uint64_t a, std::uint64_t b) noexcept {
    return mix64(a ^ mix64(b + 0x9e3779b97f4a7c15ULL));
  }
  [[nodiscard]] TRACEMODEL_ALWAYS_INLINE std::size_t set_of(std::uint64_t a,
                                                            std::uint64_t b) const noexcept {
    return set_of(a, b, factor_);
  }
  [[nodiscard]] static TRACEMODEL_ALWAYS_INLINE std::size_t set_of(std::uint64_t a, std::uint64_t b,
                                                                   std::uint64_t factor) noexcept {
    return static_cast<std::size_t>((a * 31 + b) * factor >> (64 - set_bits));
  }

 public:
  /// The id of a pair seen before, or `no_id`.
  [[nodiscard]] std::uint32_t find(std::uint64_t a, std::uint64_t b) const {
    const std::uint64_t h = hash(a, b);
    if (const std::uint32_t* bucket = index_.find(h))
      for (std::uint32_t i = *bucket; i != no_id; i = next_[i])
        if (pairs_[i].first == a && pairs_[i].second == b) return i;
    return no_id;
  }
  [[nodiscard]] std::size_t size() const noexcept { return pairs_.size(); }
  [[nodiscard]] const std::pair<std::uint64_t, std::uint64_t>& pair(std::uint32_t id) const {
    return pairs_[id];
  }

 private:
  struct recent {
    std::uint64_t a = 0, b = 0;
    std::uint32_t id = no_id;
  };
  static constexpr unsigned set_bits = 4;
  static constexpr std::size_t sets = std::size_t{1} << set_bits;
  recent recent_[sets];
  std::uint64_t factor_ = 0x9e3779b97f4a7c15ULL;
  flat_map<std::uint32_t> index_;  // hash -> newest id with that hash (chained through next_)
  std::vector<std::pair<std::uint64_t, std::uint64_t>> pairs_;
  std::vector<std::uint32_t> next_;
};

}  // namespace detail
TRACEMODEL_END_NAMESPACE
