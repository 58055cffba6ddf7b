// tracemodel/formats — low-level helpers of the readers: a structural scanner and exact number
// parsing. Internal to the formats layer.
//
// The scanner finds where JSON values end (strings, escapes and nesting respected) without
// validating them; the readers validate what they read with simdjson or their own direct path.
// It lets a reader split a huge `traceEvents` array into batches that simdjson parses in place,
// so that memory stays at "the file and the table" instead of simdjson's index of the whole
// document.
#pragma once

#include <charconv>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#if defined(__SSE2__) && !defined(TRACEMODEL_NO_SIMD)
#include <emmintrin.h>
#define TRACEMODEL_SCAN_SSE2 1
#else
#define TRACEMODEL_SCAN_SSE2 0
#endif

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
    if (c == '{' || c == '[') return skip_nested(p, max_depth);
    // A scalar: runs until a structural character or whitespace.
    std::size_t q = p;
    while (q < s_.size() && !is_json_space(s_[q]) && s_[q] != ',' && s_[q] != '}' && s_[q] != ']' &&
           s_[q] != ':')
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

  /// Bit i of each mask describes byte i of a 64-byte block.
  struct block_masks {
    std::uint64_t quote = 0, backslash = 0, open = 0, close = 0;
  };

  /// The masks of the 64 bytes at `at` (fewer at the end of the input: the rest reads as
  /// spaces).
  [[nodiscard]] block_masks classify(std::size_t at) const noexcept {
    const char* src = s_.data() + at;
    char tail[64];
    if (at + 64 > s_.size()) {
      const std::size_t n = s_.size() - at;
      for (std::size_t i = 0; i < 64; ++i) tail[i] = i < n ? src[i] : ' ';
      src = tail;
    }
    block_masks m;
#if TRACEMODEL_SCAN_SSE2
    // '[' and ']' are '{' and '}' without bit 5: one compare each after setting it.
    const __m128i quote = _mm_set1_epi8('"'), backslash = _mm_set1_epi8('\\'),
                  open = _mm_set1_epi8('{'), close = _mm_set1_epi8('}'), bit5 = _mm_set1_epi8(0x20);
    for (int k = 0; k < 4; ++k) {
      const __m128i v =
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + std::ptrdiff_t{16} * k));
      const __m128i f = _mm_or_si128(v, bit5);
      auto bits = [&](__m128i eq) {
        return static_cast<std::uint64_t>(static_cast<unsigned>(_mm_movemask_epi8(eq)) & 0xffffu)
               << (16 * k);
      };
      m.quote |= bits(_mm_cmpeq_epi8(v, quote));
      m.backslash |= bits(_mm_cmpeq_epi8(v, backslash));
      m.open |= bits(_mm_cmpeq_epi8(f, open));
      m.close |= bits(_mm_cmpeq_epi8(f, close));
    }
#else
    for (int i = 0; i < 64; ++i) {
      const std::uint64_t bit = std::uint64_t{1} << i;
      const char ch = src[i];
      if (ch == '"') m.quote |= bit;
      if (ch == '\\') m.backslash |= bit;
      if (ch == '{' || ch == '[') m.open |= bit;
      if (ch == '}' || ch == ']') m.close |= bit;
    }
#endif
    return m;
  }

  /// Bit i set when an odd number of bits at or below i are set in x.
  static constexpr std::uint64_t prefix_xor(std::uint64_t x) noexcept {
    x ^= x << 1;
    x ^= x << 2;
    x ^= x << 4;
    x ^= x << 8;
    x ^= x << 16;
    x ^= x << 32;
    return x;
  }

 private:
  /// The end of the object or array at `p`, 64 bytes at a time: quotes, backslashes and
  /// brackets become bit masks, strings a prefix-xor of the quotes, and only the brackets
  /// outside strings are visited one by one. Blocks with a backslash (rare in traces) are
  /// walked byte by byte.
  [[nodiscard]] std::size_t skip_nested(std::size_t p, std::size_t max_depth) const {
    std::size_t depth = 0;
    bool in_string = false;  // at the start of the next block
    bool escaped = false;    // the next block's first byte is escaped
    for (std::size_t at = p; at < s_.size(); at += 64) {
      const block_masks m = classify(at);
      if (m.backslash != 0 || escaped) {
        // Byte by byte, with the same state.
        const std::size_t end = std::min(at + 64, s_.size());
        for (std::size_t q = at; q < end; ++q) {
          const char d = s_[q];
          if (escaped) {
            escaped = false;
          } else if (in_string) {
            if (d == '\\')
              escaped = true;
            else if (d == '"')
              in_string = false;
          } else if (d == '"') {
            in_string = true;
          } else if (d == '{' || d == '[') {
            if (++depth > max_depth) throw too_deep(max_depth, q);
          } else if (d == '}' || d == ']') {
            if (depth == 0) throw input_error("unbalanced bracket", q);
            if (--depth == 0) return q + 1;
          }
        }
        continue;
      }
      // Inside a string: from an opening quote (included) to its closing quote (excluded).
      std::uint64_t strings = prefix_xor(m.quote);
      if (in_string) strings = ~strings;
      in_string = (strings >> 63) != 0;
      std::uint64_t brackets = (m.open | m.close) & ~strings;
      while (brackets != 0) {
        const int i = __builtin_ctzll(brackets);
        brackets &= brackets - 1;
        const std::size_t q = at + static_cast<std::size_t>(i);
        if ((m.open >> i) & 1) {
          if (++depth > max_depth) throw too_deep(max_depth, q);
        } else {
          if (depth == 0) throw input_error("unbalanced bracket", q);
          if (--depth == 0) return q + 1;
        }
      }
    }
    if (in_string || escaped)
      throw input_error("unexpected end of input inside a string (truncated?)", s_.size());
    throw input_error("unexpected end of input inside an object or array (truncated?)", s_.size());
  }

  static input_error too_deep(std::size_t max_depth, std::size_t at) {
    return input_error("nesting deeper than " + std::to_string(max_depth) + " levels", at);
  }

 public:
  [[nodiscard]] std::string_view text() const noexcept { return s_; }

 private:
  std::string_view s_;
};

/// The first position at or after `q`, before `len`, of a byte that ends or interrupts a plain
/// string: a quote, a backslash, a control character, or a byte of 0x80 and above (UTF-8 to
/// check); `len` when there is none. Reads up to 15 bytes past `len`: the readers' texts are
/// padded.
inline std::size_t find_string_special(const char* s, std::size_t q, std::size_t len) noexcept {
#if TRACEMODEL_SCAN_SSE2
  const __m128i quote = _mm_set1_epi8('"'), backslash = _mm_set1_epi8('\\'),
                space = _mm_set1_epi8(0x20);
  for (; q < len; q += 16) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + q));
    // Signed compare: bytes of 0x80 and above are negative, so below 0x20 as well.
    const __m128i hit =
        _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)),
                     _mm_cmplt_epi8(v, space));
    const auto m = static_cast<unsigned>(_mm_movemask_epi8(hit));
    if (m != 0) {
      const std::size_t at = q + static_cast<std::size_t>(__builtin_ctz(m));
      return at < len ? at : len;
    }
  }
  return len;
#else
  for (; q < len; ++q) {
    const auto c = static_cast<unsigned char>(s[q]);
    if (c == '"' || c == '\\' || c < 0x20 || c >= 0x80) return q;
  }
  return len;
#endif
}

/// Strict decimal integer token ("-12", "0"); false when it is not one or does not fit.
inline bool parse_int64(std::string_view t, std::int64_t& out) noexcept {
  const char* const end = t.data() + t.size();
  std::int64_t v = 0;
  const auto r = std::from_chars(t.data(), end, v);
  if (r.ec != std::errc{} || r.ptr != end) return false;  // (out unchanged)
  out = v;
  return true;
}

/// Strict decimal unsigned integer token ("12"); false when it is not one or does not fit.
inline bool parse_uint64(std::string_view t, std::uint64_t& out) noexcept {
  const char* const end = t.data() + t.size();
  std::uint64_t v = 0;
  const auto r = std::from_chars(t.data(), end, v);
  if (r.ec != std::errc{} || r.ptr != end) return false;  // (out unchanged)
  out = v;
  return true;
}

__extension__ typedef unsigned __int128 uint128;  // NOLINT: GCC and Clang extension

/// parse_micros for any token (digits beyond 64 bits, exponents, rounding).
inline bool parse_micros_general(std::string_view t, std::int64_t& ns) noexcept {
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
  const uint128 limit = neg ? (static_cast<uint128>(1) << 63) : (static_cast<uint128>(1) << 63) - 1;
  if (mant > limit) return false;
  ns = neg ? static_cast<std::int64_t>(0 - static_cast<std::uint64_t>(mant))
           : static_cast<std::int64_t>(static_cast<std::uint64_t>(mant));
  return true;
}

/// A JSON number token in microseconds ("12", "12.3456", "1.2e3", "-0.5") as nanoseconds,
/// exactly when it has at most three decimals, else rounded half away from zero. False when
/// the token is not a number or the result does not fit in 64 bits.
inline bool parse_micros(std::string_view t, std::int64_t& ns) noexcept {
  // What traces hold: up to 15 integer digits and up to three decimals, exact in 64 bits
  // without rounding. Anything else takes the general path.
  const std::size_t n = t.size();
  std::size_t i = n > 0 && t[0] == '-' ? 1 : 0;
  const std::size_t int_from = i;
  std::uint64_t v = 0;
  while (i < n && i - int_from < 16 && t[i] >= '0' && t[i] <= '9')
    v = v * 10 + static_cast<unsigned>(t[i++] - '0');
  const std::size_t int_digits = i - int_from;
  if (int_digits == 0 || int_digits > 15) return parse_micros_general(t, ns);
  std::uint64_t frac = 0;
  std::size_t frac_digits = 0;
  if (i < n && t[i] == '.') {
    ++i;
    while (i < n && frac_digits < 4 && t[i] >= '0' && t[i] <= '9') {
      frac = frac * 10 + static_cast<unsigned>(t[i++] - '0');
      ++frac_digits;
    }
    if (frac_digits == 0 || frac_digits > 3) return parse_micros_general(t, ns);
  }
  if (i != n) return parse_micros_general(t, ns);
  static constexpr std::uint64_t scale[] = {1000, 100, 10, 1};
  const std::uint64_t u = v * 1000 + frac * scale[frac_digits];
  ns = t[0] == '-' ? -static_cast<std::int64_t>(u) : static_cast<std::int64_t>(u);
  return true;
}

}  // namespace detail
TRACEMODEL_END_NAMESPACE
