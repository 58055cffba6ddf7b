// tracemodel/formats — low-level helpers of the readers: a structural scanner and exact number
// parsing. Internal to the formats layer.
//
// The scanner finds where JSON values end (strings, escapes and nesting respected) without
// validating them; the readers validate what they read with simdjson. It lets a reader split a
// huge `traceEvents` array into batches that simdjson parses in place, so that memory stays at
// "the file and the table" instead of simdjson's index of the whole document.
#pragma once

#include <cstdint>
#include <limits>
#include <string_view>

#include "tracemodel/config.hpp"
#include "tracemodel/detail/assert.hpp"

TRACEMODEL_BEGIN_NAMESPACE
namespace detail {

constexpr bool is_json_space(char c) noexcept {
  return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

/// Structural scanning over a buffer. Positions are byte offsets.
class json_scanner {
 public:
  explicit json_scanner(std::string_view s) noexcept : s_(s) {}

  [[nodiscard]] std::size_t skip_space(std::size_t p) const noexcept {
    while (p < s_.size() && is_json_space(s_[p])) ++p;
    return p;
  }

  /// The position just after the value that starts at `p` (after whitespace), or throws
  /// input_error naming the offset when the input ends first or the value cannot start there.
  /// Nesting deeper than `max_depth` is an error (no recursion is involved either way).
  [[nodiscard]] std::size_t skip_value(std::size_t p, std::size_t max_depth = 1024) const {
    p = skip_space(p);
    if (p >= s_.size()) throw input_error("unexpected end of input: a value was expected", p);
    const char c = s_[p];
    if (c == '"') return skip_string(p);
    if (c == '{' || c == '[') {
      std::size_t depth = 0;
      for (std::size_t q = p; q < s_.size(); ++q) {
        const char d = s_[q];
        if (d == '"') {
          q = skip_string(q) - 1;
        } else if (d == '{' || d == '[') {
          if (++depth > max_depth)
            throw input_error("nesting deeper than " + std::to_string(max_depth) + " levels", q);
        } else if (d == '}' || d == ']') {
          if (depth == 0) throw input_error("unbalanced bracket", q);
          if (--depth == 0) return q + 1;
        }
      }
      throw input_error("unexpected end of input inside an object or array (truncated?)", s_.size());
    }
    // A scalar: runs until a structural character or whitespace.
    std::size_t q = p;
    while (q < s_.size() && !is_json_space(s_[q]) && s_[q] != ',' && s_[q] != '}' &&
           s_[q] != ']' && s_[q] != ':')
      ++q;
    if (q == p) throw input_error(std::string("unexpected character '") + c + "'", p);
    return q;
  }

  /// The position after the string literal that starts at `p` (a quote).
  [[nodiscard]] std::size_t skip_string(std::size_t p) const {
    for (std::size_t q = p + 1; q < s_.size(); ++q) {
      if (s_[q] == '\\') {
        ++q;
      } else if (s_[q] == '"') {
        return q + 1;
      }
    }
    throw input_error("unexpected end of input inside a string (truncated?)", s_.size());
  }

  [[nodiscard]] std::string_view text() const noexcept { return s_; }

 private:
  std::string_view s_;
};

/// Strict decimal integer token ("-12", "0"); false when it is not one or does not fit.
inline bool parse_int64(std::string_view t, std::int64_t& out) noexcept {
  if (t.empty()) return false;
  bool neg = false;
  std::size_t i = 0;
  if (t[0] == '-') {
    neg = true;
    i = 1;
  }
  if (i >= t.size()) return false;
  std::uint64_t v = 0;
  for (; i < t.size(); ++i) {
    const char c = t[i];
    if (c < '0' || c > '9') return false;
    const auto d = static_cast<std::uint64_t>(c - '0');
    if (v > (std::numeric_limits<std::uint64_t>::max() - d) / 10) return false;
    v = v * 10 + d;
  }
  const std::uint64_t lim = neg ? std::uint64_t{1} << 63 : (std::uint64_t{1} << 63) - 1;
  if (v > lim) return false;
  out = neg ? static_cast<std::int64_t>(0 - v) : static_cast<std::int64_t>(v);
  return true;
}

inline bool parse_uint64(std::string_view t, std::uint64_t& out) noexcept {
  if (t.empty()) return false;
  std::uint64_t v = 0;
  for (const char c : t) {
    if (c < '0' || c > '9') return false;
    const auto d = static_cast<std::uint64_t>(c - '0');
    if (v > (std::numeric_limits<std::uint64_t>::max() - d) / 10) return false;
    v = v * 10 + d;
  }
  out = v;
  return true;
}

__extension__ typedef unsigned __int128 uint128;  // NOLINT: GCC and Clang extension

/// A JSON number token in microseconds ("12", "12.3456", "1.2e3", "-0.5") as nanoseconds,
/// exactly when it has at most three decimals, else rounded half away from zero. False when
/// the token is not a number or the result does not fit in 64 bits.
inline bool parse_micros(std::string_view t, std::int64_t& ns) noexcept {
  std::size_t i = 0;
  bool neg = false;
  if (i < t.size() && t[i] == '-') {
    neg = true;
    ++i;
  }
  // Digits of the mantissa (integer and fraction), and the decimal exponent.
  uint128 mant = 0;
  int exp10 = 0;
  int digits = 0;
  bool any = false;
  // Digits past the 36th significant one are beyond any time stamp's precision: dropped.
  auto add_digit = [&](char c) {
    any = true;
    if (digits < 36) {
      mant = mant * 10 + static_cast<unsigned>(c - '0');
      if (mant != 0) ++digits;
      return true;
    }
    return false;
  };
  while (i < t.size() && t[i] >= '0' && t[i] <= '9') {
    if (!add_digit(t[i])) ++exp10;
    ++i;
  }
  if (i < t.size() && t[i] == '.') {
    ++i;
    bool frac = false;
    while (i < t.size() && t[i] >= '0' && t[i] <= '9') {
      if (add_digit(t[i])) --exp10;
      frac = true;
      ++i;
    }
    if (!frac) return false;
  }
  if (!any) return false;
  if (i < t.size() && (t[i] == 'e' || t[i] == 'E')) {
    ++i;
    bool eneg = false;
    if (i < t.size() && (t[i] == '+' || t[i] == '-')) eneg = t[i++] == '-';
    if (i >= t.size()) return false;
    int e = 0;
    while (i < t.size() && t[i] >= '0' && t[i] <= '9') {
      if (e < 100000) e = e * 10 + (t[i] - '0');
      ++i;
    }
    exp10 += eneg ? -e : e;
  }
  if (i != t.size()) return false;
  exp10 += 3;  // microseconds -> nanoseconds
  // Scale mant * 10^exp10 to an integer, rounding half away from zero.
  if (mant == 0) {
    ns = 0;
    return true;
  }
  if (exp10 > 0) {
    if (exp10 > 38) return false;
    for (int k = 0; k < exp10; ++k) {
      if (mant > (~static_cast<uint128>(0)) / 10) return false;
      mant *= 10;
    }
  } else if (exp10 < 0) {
    if (exp10 < -40) {
      mant = 0;
    } else {
      uint128 div = 1;
      for (int k = 0; k < -exp10; ++k) div *= 10;
      const uint128 q = mant / div, r = mant % div;
      mant = q + ((r * 2 >= div) ? 1 : 0);
    }
  }
  const uint128 limit = neg ? (static_cast<uint128>(1) << 63)
                                      : (static_cast<uint128>(1) << 63) - 1;
  if (mant > limit) return false;
  ns = neg ? static_cast<std::int64_t>(0 - static_cast<std::uint64_t>(mant))
           : static_cast<std::int64_t>(static_cast<std::uint64_t>(mant));
  return true;
}

}  // namespace detail
TRACEMODEL_END_NAMESPACE
