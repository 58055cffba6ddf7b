// tracemodel/formats — JSON string escaping, for the writers (no fmt, no zlib).
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "tracemodel/config.hpp"

TRACEMODEL_BEGIN_NAMESPACE
namespace detail {

/// The length of the well-formed UTF-8 sequence that `s` begins with (a byte of 0x80 or more
/// first): 2, 3 or 4, or 0 when it is not one (cut, overlong, a surrogate, beyond U+10FFFF).
inline std::size_t utf8_sequence_length(std::string_view s) noexcept {
  const auto c = static_cast<unsigned char>(s[0]);
  const std::size_t len = c >= 0xf0 ? (c <= 0xf4 ? 4 : 0) : c >= 0xe0 ? 3 : c >= 0xc2 ? 2 : 0;
  if (len == 0 || len > s.size()) return 0;
  for (std::size_t k = 1; k < len; ++k)
    if ((static_cast<unsigned char>(s[k]) & 0xc0) != 0x80) return 0;
  const auto c1 = static_cast<unsigned char>(s[1]);
  if (len == 3 && ((c == 0xe0 && c1 < 0xa0) || (c == 0xed && c1 >= 0xa0))) return 0;
  if (len == 4 && ((c == 0xf0 && c1 < 0x90) || (c == 0xf4 && c1 >= 0x90))) return 0;
  return len;
}

/// Whether `s` is well-formed UTF-8 (ASCII runs checked eight bytes at a time).
inline bool is_utf8(std::string_view s) noexcept {
  std::size_t i = 0;
  const std::size_t n = s.size();
  while (i < n) {
    if (i + 8 <= n) {
      std::uint64_t w;
      std::memcpy(&w, s.data() + i, 8);
      if ((w & 0x8080808080808080ull) == 0) {
        i += 8;
        continue;
      }
    }
    if (static_cast<unsigned char>(s[i]) < 0x80) {
      ++i;
      continue;
    }
    const std::size_t len = utf8_sequence_length(s.substr(i));
    if (len == 0) return false;
    i += len;
  }
  return true;
}

/// `s` with each byte that is not part of a well-formed UTF-8 sequence replaced by U+FFFD (what
/// the JSON writers write for it).
inline std::string to_utf8(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 8);
  std::size_t i = 0;
  while (i < s.size()) {
    const std::size_t len =
        static_cast<unsigned char>(s[i]) < 0x80 ? 1 : utf8_sequence_length(s.substr(i));
    if (len == 0) {
      out += "\xef\xbf\xbd";
      ++i;
    } else {
      out.append(s.substr(i, len));
      i += len;
    }
  }
  return out;
}

/// `s` as the contents of a JSON string literal (quotes, backslashes and control characters
/// escaped; bytes that are not UTF-8 become U+FFFD).
inline void append_json_escaped(std::string& out, std::string_view s) {
  static constexpr char hex[] = "0123456789abcdef";
  std::size_t i = 0;
  const std::size_t n = s.size();
  while (i < n) {
    // A run of printable ASCII other than '"' and '\\' is copied at once.
    std::size_t j = i;
    while (j < n) {
      const auto b = static_cast<unsigned char>(s[j]);
      if (b < 0x20 || b >= 0x80 || b == '"' || b == '\\') break;
      ++j;
    }
    out.append(s.data() + i, j - i);
    i = j;
    if (i == n) break;
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      if (c == '"' || c == '\\') {
        out += '\\';
        out += static_cast<char>(c);
      } else if (c < 0x20) {
        switch (c) {
          case '\n':
            out += "\\n";
            break;
          case '\t':
            out += "\\t";
            break;
          case '\r':
            out += "\\r";
            break;
          case '\b':
            out += "\\b";
            break;
          case '\f':
            out += "\\f";
            break;
          default:
            out += "\\u00";
            out += hex[c >> 4];
            out += hex[c & 15];
        }
      } else {
        out += static_cast<char>(c);
      }
      ++i;
      continue;
    }
    // A UTF-8 sequence: copy it if it is well formed, else write U+FFFD for this byte.
    if (const std::size_t len = utf8_sequence_length(s.substr(i)); len != 0) {
      out.append(s.substr(i, len));
      i += len;
    } else {
      out += "\xef\xbf\xbd";
      ++i;
    }
  }
}
}  // namespace detail
TRACEMODEL_END_NAMESPACE
