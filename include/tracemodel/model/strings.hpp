// tracemodel/model — the string table of an event table.
//
// Every name, category, dtype and string argument of a table is interned once and referred to
// by a 32-bit `name_id`. Views returned by `view` stay valid as long as the table lives (the
// characters live in chunks that never move, also when the table itself is moved).
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <string_view>
#include <vector>

#include "tracemodel/config.hpp"
#include "tracemodel/detail/assert.hpp"
#include "tracemodel/detail/flat_map.hpp"
#include "tracemodel/model/types.hpp"

TRACEMODEL_BEGIN_NAMESPACE

namespace detail {
/// Views equal when they are the same characters at the same address (a table's interned
/// strings: one address per distinct text), for maps keyed by a table's names.
struct same_view {
  std::size_t operator()(std::string_view v) const noexcept {
    return std::hash<const void*>{}(v.data()) ^ v.size();
  }
  bool operator()(std::string_view a, std::string_view b) const noexcept {
    return a.data() == b.data() && a.size() == b.size();
  }
};
}  // namespace detail

class string_table {
 public:
  string_table() { init(); }
  string_table(string_table&&) noexcept = default;
  string_table& operator=(string_table&&) noexcept = default;
  string_table(const string_table& o) : string_table() {
    for (std::size_t i = 1; i < o.views_.size(); ++i) intern(o.views_[i]);
  }
  string_table& operator=(const string_table& o) {
    if (this != &o) *this = string_table(o);
    return *this;
  }

  /// The id of `s`, adding it if it is new.
  name_id intern(std::string_view s) {
    if (s.empty()) return empty_name;
    if (views_.empty()) init();  // moved from
    // Readers and recorders intern the same few names over and over: a small cache keyed by
    // the length and the first and last bytes answers most calls without hashing the string.
    std::uint32_t& recent = recent_[recent_slot(s)];
    if (recent != 0 && recent < views_.size() && detail::same_text(views_[recent], s))
      return static_cast<name_id>(recent);
    const name_id id = intern_hashed(s);
    recent = static_cast<std::uint32_t>(id);
    return id;
  }

 private:
  void init() {
    views_.assign(1, std::string_view());
    hashes_.assign(1, 0);
    index_.assign(1024, 0);
    recent_.fill(0);
  }

  static std::size_t recent_slot(std::string_view s) noexcept {
    const std::size_t n = s.size();  // not 0
    const char* p = s.data();
    const std::uint64_t first = n >= 8 ? detail::load_u64(p) : detail::short_word(p, n);
    const std::uint64_t last = n >= 8 ? detail::load_u64(p + n - 8) : 0;
    return static_cast<std::size_t>(
        ((first ^ (last * 0x9e3779b97f4a7c15ULL) ^ n) * 0xbf58476d1ce4e5b9ULL) >>
        (64 - recent_bits));
  }

  name_id intern_hashed(std::string_view s) {
    const std::uint64_t h = detail::hash_bytes(s.data(), s.size());
    const auto h32 = static_cast<std::uint32_t>(h);
    std::size_t mask = index_.size() - 1;
    std::size_t i = h & mask;
    while (std::uint32_t id = index_[i]) {
      if (hashes_[id] == h32 && detail::same_text(views_[id], s)) return static_cast<name_id>(id);
      i = (i + 1) & mask;
    }
    if (views_.size() >= std::numeric_limits<std::uint32_t>::max() - 1)
      throw usage_error("tracemodel::string_table: more than 2^32 distinct strings");
    const auto id = static_cast<std::uint32_t>(views_.size());
    views_.push_back(store(s));
    hashes_.push_back(h32);
    index_[i] = id;
    if (views_.size() * 2 > index_.size()) grow_index();
    return static_cast<name_id>(id);
  }

 public:
  /// Looks `s` up without adding it: true (and `out` set) when it was interned.
  [[nodiscard]] bool find(std::string_view s, name_id& out) const noexcept {
    if (s.empty()) {
      out = empty_name;
      return true;
    }
    if (index_.empty()) return false;  // moved from
    const std::uint64_t h = detail::hash_bytes(s.data(), s.size());
    const auto h32 = static_cast<std::uint32_t>(h);
    std::size_t mask = index_.size() - 1;
    std::size_t i = h & mask;
    while (std::uint32_t id = index_[i]) {
      if (hashes_[id] == h32 && detail::same_text(views_[id], s)) {
        out = static_cast<name_id>(id);
        return true;
      }
      i = (i + 1) & mask;
    }
    return false;
  }

  [[nodiscard]] std::string_view view(name_id id) const noexcept {
    const auto i = static_cast<std::uint32_t>(id);
    TRACEMODEL_ASSERT(i < views_.size(), "name_id out of range");
    return views_[i];
  }
  [[nodiscard]] std::string_view operator[](name_id id) const noexcept { return view(id); }
  /// Number of distinct strings, the empty string included.
  [[nodiscard]] std::size_t size() const noexcept { return views_.size(); }
  /// Bytes held (characters, views, hashes and index), for memory reports.
  [[nodiscard]] std::size_t memory_bytes() const noexcept {
    return chunk_bytes_ + views_.capacity() * sizeof(std::string_view) + hashes_.capacity() * 4 +
           index_.capacity() * 4;
  }

 private:
  std::string_view store(std::string_view s) {
    if (s.size() > chunk_size / 4) {  // a large string gets a buffer of its own
      auto& buf = chunks_.emplace_back(std::make_unique<char[]>(s.size()));
      chunk_bytes_ += s.size();
      std::memcpy(buf.get(), s.data(), s.size());
      return {buf.get(), s.size()};
    }
    if (s.size() > chunk_room_) {
      chunk_pos_ = chunks_.emplace_back(std::make_unique<char[]>(chunk_size)).get();
      chunk_room_ = chunk_size;
      chunk_bytes_ += chunk_size;
    }
    std::memcpy(chunk_pos_, s.data(), s.size());
    std::string_view v(chunk_pos_, s.size());
    chunk_pos_ += s.size();
    chunk_room_ -= s.size();
    return v;
  }
  void grow_index() {
    std::vector<std::uint32_t> idx(index_.size() * 2, 0);
    const std::size_t mask = idx.size() - 1;
    for (std::uint32_t id = 1; id < views_.size(); ++id) {
      std::size_t i = detail::hash_bytes(views_[id].data(), views_[id].size()) & mask;
      while (idx[i]) i = (i + 1) & mask;
      idx[i] = id;
    }
    index_ = std::move(idx);
  }

  static constexpr std::size_t chunk_size = std::size_t{64} * 1024;
  std::vector<std::unique_ptr<char[]>> chunks_;
  char* chunk_pos_ = nullptr;
  std::size_t chunk_room_ = 0;
  std::size_t chunk_bytes_ = 0;
  std::vector<std::string_view> views_;
  std::vector<std::uint32_t> hashes_;
  std::vector<std::uint32_t> index_;
  static constexpr int recent_bits = 8;
  std::array<std::uint32_t, std::size_t{1} << recent_bits> recent_{};  ///< ids; 0: none
};

TRACEMODEL_END_NAMESPACE
