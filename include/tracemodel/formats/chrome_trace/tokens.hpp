// tracemodel/formats/chrome_trace — what both record parsers (the direct path and the simdjson
// path) agree on: the keys of a record, the shape of numbers they read from the text themselves,
// what a record needs to be complete, and where an op input list goes.
#pragma once

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string_view>
#include <system_error>

#include "tracemodel/config.hpp"
#include "tracemodel/formats/chrome_trace/records.hpp"
#include "tracemodel/formats/json_scan.hpp"

TRACEMODEL_BEGIN_NAMESPACE
namespace detail::chrome_trace {

/// A number's text starts as JSON wants it: an optional '-', then a digit, and no digit after
/// a leading zero (parse_micros checks the rest of the grammar).
inline bool is_json_number_start(std::string_view t) noexcept {
  std::size_t i = !t.empty() && t[0] == '-' ? 1 : 0;
  if (i >= t.size() || t[i] < '0' || t[i] > '9') return false;
  return !(t[i] == '0' && i + 1 < t.size() && t[i + 1] >= '0' && t[i + 1] <= '9');
}

/// The keys of a trace event that the model reads.
enum class event_key : std::uint8_t { other, ph, name, cat, pid, tid, ts, dur, s, bp, id, args };
inline event_key event_key_of(std::string_view k) noexcept {
  switch (k.size()) {
    case 1:
      return k[0] == 's' ? event_key::s : event_key::other;
    case 2:
      if (k == "ph") return event_key::ph;
      if (k == "ts") return event_key::ts;
      if (k == "id") return event_key::id;
      if (k == "bp") return event_key::bp;
      return event_key::other;
    case 3:
      if (k == "pid") return event_key::pid;
      if (k == "tid") return event_key::tid;
      if (k == "dur") return event_key::dur;
      if (k == "cat") return event_key::cat;
      return event_key::other;
    case 4:
      if (k == "name") return event_key::name;
      if (k == "args") return event_key::args;
      return event_key::other;
    default:
      return event_key::other;
  }
}
/// An integer token in int64 range, as simdjson would read it; false for anything else
/// (fractions, exponents, big unsigned values, malformed text, and "-0", whose type
/// simdjson decides): those go through simdjson.
inline bool plain_integer(std::string_view t, std::int64_t& out) noexcept {
  if (t.size() > 1 && t[0] == '-' && t[1] == '0') return false;
  return is_json_number_start(t) && parse_int64(t, out);
}
/// A string token without escapes, straight from the text (no copy into the parser's
/// string buffer); false when it has escapes or is not a complete string.
inline bool plain_string(std::string_view t, std::string_view& out) noexcept {
  if (t.size() < 2 || t.front() != '"' || t.back() != '"') return false;
  const std::string_view inner = t.substr(1, t.size() - 2);
  // A quote inside would have ended the token unless escaped: a backslash is all to look for.
  if (std::memchr(inner.data(), '\\', inner.size()) != nullptr) return false;
  out = inner;
  return true;
}

/// What a record as read lacks, or null when it has what its phase needs.
inline const char* incomplete(const fields& f) noexcept {
  if (!f.has_ph) return "trace event without \"ph\"";
  if (f.ph.size() != 1) return "trace event with an unknown \"ph\"";
  switch (f.ph[0]) {
    case 'X':
    case 'i':
    case 'I':
    case 'B':
    case 'E':
      if (!f.has_ts) return "trace event without \"ts\"";
      break;
    case 's':
    case 'f':
    case 't':
      if (!f.has_ts || !f.has_id) return "flow event without \"ts\" or \"id\"";
      break;
    default:
      break;
  }
  return nullptr;
}

/// The op input list an arg key names (`Input Dims`, `Input Strides`; `Input type`,
/// `Concrete Inputs`), or null.
inline dims_range* dims_list(std::string_view key, fields& f) noexcept {
  return key == "Input Dims" ? &f.dims : key == "Input Strides" ? &f.strides : nullptr;
}
inline string_range* string_list(std::string_view key, fields& f) noexcept {
  return key == "Input type" ? &f.types : key == "Concrete Inputs" ? &f.concrete : nullptr;
}
/// Points `r` at what `read` appends to `items` (a repeated key: the last wins); false when
/// `read` could not read the list.
template <class Range, class Items, class Read>
inline bool fill_list(Range& r, const Items& items, Read read) {
  r.first = static_cast<std::uint32_t>(items.size());
  if (!read()) return false;
  r.count = static_cast<std::uint32_t>(items.size()) - r.first;
  if constexpr (requires { r.present; }) r.present = true;
  return true;
}

constexpr bool is_number_char(char c) noexcept {
  return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E';
}

/// A JSON number with a fraction or an exponent: what simdjson reads as a double.
inline bool is_json_float(std::string_view t) noexcept {
  const std::size_t n = t.size();
  std::size_t i = n > 0 && t[0] == '-' ? 1 : 0;
  auto digits = [&] {
    const std::size_t from = i;
    while (i < n && t[i] >= '0' && t[i] <= '9') ++i;
    return i > from;
  };
  if (i < n && t[i] == '0') {
    ++i;
  } else if (i >= n || t[i] < '1' || t[i] > '9' || !digits()) {
    return false;
  }
  bool fraction_or_exponent = false;
  if (i < n && t[i] == '.') {
    ++i;
    if (!digits()) return false;
    fraction_or_exponent = true;
  }
  if (i < n && (t[i] == 'e' || t[i] == 'E')) {
    ++i;
    if (i < n && (t[i] == '+' || t[i] == '-')) ++i;
    if (!digits()) return false;
    fraction_or_exponent = true;
  }
  return i == n && fraction_or_exponent;
}
/// A decimal number as the nearest double (as simdjson reads it); false when it is not one,
/// or is out of range or below the normal range (simdjson decides those).
inline bool read_double(std::string_view t, double& d) noexcept {
  if (!is_json_float(t)) return false;
  const auto r = std::from_chars(t.data(), t.data() + t.size(), d);
  return r.ec == std::errc() && r.ptr == t.data() + t.size() && std::isfinite(d) &&
         (d == 0 || std::fabs(d) >= std::numeric_limits<double>::min());
}

}  // namespace detail::chrome_trace
TRACEMODEL_END_NAMESPACE
