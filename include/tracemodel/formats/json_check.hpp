// tracemodel/formats — whether a text is one well-formed JSON value (RFC 8259: its strings UTF-8
// with valid escapes and paired surrogates, its numbers in JSON's grammar, nesting 256 deep at
// most). For JSON that a reader keeps as text without parsing it (a Perfetto file's
// `legacy_json_value` and metadata values), so that the writers never copy a broken value into
// their output. Internal to the formats layer.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "tracemodel/config.hpp"
#include "tracemodel/formats/json_escape.hpp"

TRACEMODEL_BEGIN_NAMESPACE
namespace detail {

class json_checker {
 public:
  explicit json_checker(std::string_view s) noexcept : p_(s.data()), e_(s.data() + s.size()) {}

  [[nodiscard]] bool whole_value() {
    space();
    while (true) {  // a value, then what closes the containers it ends
      if (!value()) return false;
      while (true) {
        space();
        if (open_.empty()) return p_ == e_;
        if (p_ == e_) return false;
        const char close = open_.back() == '{' ? '}' : ']';
        if (*p_ == close) {
          ++p_;
          open_.pop_back();
          continue;
        }
        if (*p_ != ',') return false;
        ++p_;
        if (open_.back() == '{' && !key()) return false;
        break;
      }
    }
  }

 private:
  static constexpr std::size_t max_depth = 256;

  void space() noexcept {
    while (p_ != e_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t')) ++p_;
  }
  bool is(char c) const noexcept { return p_ != e_ && *p_ == c; }
  bool digits() noexcept {
    const char* from = p_;
    while (p_ != e_ && *p_ >= '0' && *p_ <= '9') ++p_;
    return p_ != from;
  }
  bool word(std::string_view w) noexcept {
    if (static_cast<std::size_t>(e_ - p_) < w.size() || std::string_view(p_, w.size()) != w)
      return false;
    p_ += w.size();
    return true;
  }
  /// `"key" :` of an object's member.
  bool key() {
    space();
    if (!is('"') || !string()) return false;
    space();
    if (!is(':')) return false;
    ++p_;
    return true;
  }
  /// A value; an array or object is opened (its first member's key read) and left open.
  bool value() {
    space();
    if (p_ == e_) return false;
    switch (*p_) {
      case '{':
      case '[': {
        if (open_.size() == max_depth) return false;
        const char open = *p_++;
        space();
        if (is(open == '{' ? '}' : ']')) {  // empty
          ++p_;
          return true;
        }
        open_.push_back(open);
        if (open == '{' && !key()) return false;
        return value();
      }
      case '"':
        return string();
      case 't':
        return word("true");
      case 'f':
        return word("false");
      case 'n':
        return word("null");
      default:
        return number();
    }
  }
  bool number() noexcept {
    if (is('-')) ++p_;
    if (is('0')) {
      ++p_;
    } else if (p_ == e_ || *p_ < '1' || *p_ > '9' || !digits()) {
      return false;
    }
    if (is('.')) {
      ++p_;
      if (!digits()) return false;
    }
    if (is('e') || is('E')) {
      ++p_;
      if (is('+') || is('-')) ++p_;
      if (!digits()) return false;
    }
    return true;
  }
  /// Four hex digits after `\u`: their value, or -1.
  long hex4() noexcept {
    if (e_ - p_ < 4) return -1;
    long v = 0;
    for (int k = 0; k < 4; ++k, ++p_) {
      const char c = *p_;
      const int d = c >= '0' && c <= '9'   ? c - '0'
                    : c >= 'a' && c <= 'f' ? c - 'a' + 10
                    : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                           : -1;
      if (d < 0) return -1;
      v = v * 16 + d;
    }
    return v;
  }
  bool string() noexcept {
    ++p_;  // the opening quote
    while (p_ != e_) {
      const auto c = static_cast<unsigned char>(*p_);
      if (c == '"') {
        ++p_;
        return true;
      }
      if (c < 0x20) return false;
      if (c == '\\') {
        if (++p_ == e_) return false;
        const char x = *p_++;
        if (x == 'u') {
          const long u = hex4();
          if (u < 0 || (u >= 0xdc00 && u <= 0xdfff)) return false;  // a low surrogate alone
          if (u >= 0xd800 && u <= 0xdbff) {  // a high one: its low one must follow
            if (e_ - p_ < 2 || p_[0] != '\\' || p_[1] != 'u') return false;
            p_ += 2;
            const long low = hex4();
            if (low < 0xdc00 || low > 0xdfff) return false;
          }
        } else if (std::string_view("\"\\/bfnrt").find(x) == std::string_view::npos) {
          return false;
        }
        continue;
      }
      if (c < 0x80) {
        ++p_;
        continue;
      }
      const std::size_t n =
          utf8_sequence_length(std::string_view(p_, static_cast<std::size_t>(e_ - p_)));
      if (n == 0) return false;
      p_ += n;
    }
    return false;
  }

  const char* p_;
  const char* e_;
  std::vector<char> open_;  ///< the arrays and objects open, innermost last
};

/// Whether `s` is one JSON value (whitespace around it allowed).
[[nodiscard]] inline bool is_json_value(std::string_view s) {
  return json_checker(s).whole_value();
}

/// `s` when it is one JSON value, else `s` as a JSON string (and `repaired` set).
[[nodiscard]] inline std::string json_value_or_string(std::string_view s, bool& repaired) {
  repaired = !is_json_value(s);
  if (!repaired) return std::string(s);
  std::string out(1, '"');
  append_json_escaped(out, s);
  out += '"';
  return out;
}

}  // namespace detail
TRACEMODEL_END_NAMESPACE
