// tracemodel/formats/chrome_trace — the direct path: the record parser that reads records of
// the usual shape straight from the text.
//
// Most records of a trace have one shape: an object of plain keys whose values are plain
// strings, integers, decimal numbers and an `args` object of the same, op input lists and small
// arrays. The direct path reads such a record in one pass, every byte checked as JSON wants it
// (strings without escapes or control characters, UTF-8 checked where a byte is not ASCII,
// numbers by the grammar, literals, nesting). Anything else (an escape, a string id, a big
// integer, an error of any kind) makes it give up on the record with nothing kept; the simdjson
// path (simdjson_path.hpp) then reads that record, and names the error if there is one. The
// direct path is only ever a faster way to the same records. Its reads are `const`: two threads
// may parse different stretches of one text at once.
#pragma once

#include <simdjson.h>

#include <algorithm>
#include <cstdint>
#include <span>
#include <string_view>
#include <utility>

#include "tracemodel/config.hpp"
#include "tracemodel/formats/chrome_trace/dims_text.hpp"
#include "tracemodel/formats/chrome_trace/records.hpp"
#include "tracemodel/formats/chrome_trace/tokens.hpp"
#include "tracemodel/formats/json_scan.hpp"
#include "tracemodel/model/table.hpp"

TRACEMODEL_BEGIN_NAMESPACE
namespace detail::chrome_trace {

/// Where reading the events array stands: the next element starts at `p`, after the separator
/// at `before` ('[' or ','); after the last element, `before` is the array's ']'.
struct cursor {
  std::size_t before = 0, p = 0;
};
inline constexpr std::size_t no_limit = static_cast<std::size_t>(-1);
/// Why a run of the direct path stopped.
enum class run_end {
  limit,  ///< the next element starts at or after the limit
  last,   ///< the array's last element was read
  stuck,  ///< the direct path cannot read the element at the cursor
};

class direct_reader {
 public:
  /// `buf`: the text (`len` bytes) and its padding.
  direct_reader(std::span<char> buf, std::size_t len) noexcept
      : buf_(buf), len_(len), scan_(std::string_view(buf.data(), len)) {}

  /// A string at `p` (a quote) without escapes or control characters, in valid UTF-8: its
  /// contents and the position after it, or 0.
  std::size_t direct_string(std::size_t p, std::string_view& out) const noexcept {
    const char* s = buf_.data();
    std::size_t q = p + 1;
    bool high = false;
    while (true) {
      q = find_string_special(s, q, len_);
      if (q >= len_) return 0;
      const auto c = static_cast<unsigned char>(s[q]);
      if (c == '"') break;
      if (c < 0x80) return 0;  // a backslash or a control character
      high = true;
      ++q;
    }
    out = {s + p + 1, q - p - 1};
    if (high && !simdjson::validate_utf8(out.data(), out.size())) return 0;
    return q + 1;
  }

  /// The number-like token at `p` (empty when there is none).
  std::string_view number_token(std::size_t p) const noexcept {
    std::size_t q = p;
    while (q < len_ && is_number_char(buf_[q])) ++q;
    return {buf_.data() + p, q - p};
  }
  /// `true`, `false` or `null` at `p`: the position after it, or 0.
  std::size_t direct_literal(std::size_t p, raw_arg& a) const noexcept {
    const std::string_view rest(buf_.data() + p, len_ - p);
    if (rest.starts_with("true")) {
      a.kind = raw_arg::type::boolean;
      a.b = true;
      return p + 4;
    }
    if (rest.starts_with("false")) {
      a.kind = raw_arg::type::boolean;
      a.b = false;
      return p + 5;
    }
    if (rest.starts_with("null")) {
      a.kind = raw_arg::type::null;
      return p + 4;
    }
    return 0;
  }

  /// Checks the value at `p` (any JSON, 63 levels deep at most): the position after it, or 0.
  std::size_t direct_skip(std::size_t p) const noexcept {
    const char* s = buf_.data();
    std::uint64_t objects = 0;  // bit k: the container at depth k + 1 is an object
    int depth = 0;
    auto key = [&](std::size_t q) -> std::size_t {  // a key and its ':', at q
      std::string_view k;
      if (q >= len_ || s[q] != '"' || (q = direct_string(q, k)) == 0) return 0;
      q = scan_.skip_space(q);
      return q < len_ && s[q] == ':' ? scan_.skip_space(q + 1) : 0;
    };
    while (true) {
      if (p >= len_) return 0;
      const char c = s[p];
      bool closed = true;  // a whole value was read
      if (c == '{' || c == '[') {
        if (depth == 63) return 0;
        const bool object = c == '{';
        objects = (objects & ~(std::uint64_t{1} << depth)) |
                  (static_cast<std::uint64_t>(object) << depth);
        ++depth;
        p = scan_.skip_space(p + 1);
        if (p < len_ && s[p] == (object ? '}' : ']')) {
          --depth;
          ++p;
        } else {
          if (object && (p = key(p)) == 0) return 0;
          closed = false;
        }
      } else if (c == '"') {
        std::string_view text;
        if ((p = direct_string(p, text)) == 0) return 0;
      } else if (c == '-' || (c >= '0' && c <= '9')) {
        const std::string_view t = number_token(p);
        std::int64_t i = 0;
        double d = 0;
        if (!(is_json_number_start(t) && parse_int64(t, i)) && !read_double(t, d)) return 0;
        p += t.size();
      } else {
        raw_arg a;
        if ((p = direct_literal(p, a)) == 0) return 0;
      }
      if (!closed) continue;
      // After a value: close containers, or go on to the next element.
      while (true) {
        if (depth == 0) return p;
        p = scan_.skip_space(p);
        if (p >= len_) return 0;
        const bool object = (objects >> (depth - 1)) & 1;
        if (s[p] == (object ? '}' : ']')) {
          ++p;
          --depth;
          continue;
        }
        if (s[p] != ',') return 0;
        p = scan_.skip_space(p + 1);
        if (object && (p = key(p)) == 0) return 0;
        break;
      }
    }
  }

  /// A pid or tid: an integer (not one that would read back as a string key) or a string.
  std::size_t direct_track_key(std::size_t p, key_value& k) const noexcept {
    if (buf_[p] == '"') {
      k.is_string = true;
      return direct_string(p, k.text);
    }
    const std::string_view t = number_token(p);
    std::int64_t n = 0;
    if (!plain_integer(t, n) || basic_event_table<>::is_string_key(static_cast<std::uint64_t>(n)))
      return 0;
    k = {static_cast<std::uint64_t>(n), {}, false};
    return p + t.size();
  }

  /// The value of an arg other than the op input lists, at `p`.
  std::size_t direct_arg(std::size_t p, raw_arg& a) const noexcept {
    const char c = buf_[p];
    if (c == '"') {
      a.kind = raw_arg::type::string;
      return direct_string(p, a.text);
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
      const std::string_view t = number_token(p);
      if (plain_integer(t, a.i)) {
        a.kind = raw_arg::type::integer;
      } else if (read_double(t, a.f)) {
        a.kind = raw_arg::type::floating;
      } else {
        return 0;  // big integers, -0, malformed: simdjson decides
      }
      return p + t.size();
    }
    if (c == '[' || c == '{') {
      const std::size_t e = direct_skip(p);
      a.kind = raw_arg::type::json;
      a.text = {buf_.data() + p, e - p};
      return e;
    }
    return direct_literal(p, a);
  }

  /// The `args` object at `p` into `f` and `b`; the position after it, or 0.
  std::size_t direct_args(std::size_t p, fields& f, batch& b) {
    const char* s = buf_.data();
    if (s[p] != '{') return 0;
    f.args_at = p;
    f.has_args = true;
    p = scan_.skip_space(p + 1);
    if (p < len_ && s[p] == '}') return p + 1;
    while (true) {
      std::string_view key;
      if (p >= len_ || s[p] != '"' || (p = direct_string(p, key)) == 0) return 0;
      p = scan_.skip_space(p);
      if (p >= len_ || s[p] != ':') return 0;
      p = scan_.skip_space(p + 1);
      if (p >= len_) return 0;
      if (dims_range* d = dims_list(key, f)) {
        if (!fill_list(*d, b.dims, [&] { return (p = read_dims_text(p, b)) != 0; })) return 0;
      } else if (string_range* r = string_list(key, f)) {
        if (!fill_list(*r, b.strings, [&] { return (p = read_strings_text(p, b.strings)) != 0; }))
          return 0;
      } else {  // in place (a failure rolls the batch back)
        raw_arg& a = b.args.emplace_back();
        a.key = key;
        a.offset = p;
        if ((p = direct_arg(p, a)) == 0) return 0;
      }
      p = scan_.skip_space(p);
      if (p >= len_) return 0;
      if (s[p] == '}') return p + 1;
      if (s[p] != ',') return 0;
      p = scan_.skip_space(p + 1);
    }
  }

  /// How much of a batch was read: what to cut it back to.
  struct batch_mark {
    std::size_t events, args, dims, ints, strings;
  };
  static batch_mark mark_of(const batch& b) noexcept {
    return {b.events.size(), b.args.size(), b.dims.size(), b.ints.size(), b.strings.size()};
  }
  static void roll_back(batch& b, const batch_mark& m) {
    b.events.resize(m.events);
    b.args.resize(m.args);
    b.dims.resize(m.dims);
    b.ints.resize(m.ints);
    b.strings.resize(m.strings);
  }

  /// The record at `p` (a '{') into `b` when the direct path can read it: the position after
  /// it, or 0 with `b` as it was.
  TRACEMODEL_FLATTEN std::size_t direct_event(std::size_t p, batch& b) {
    const char* s = buf_.data();
    // The text is read once, front to back, from memory: loading it was about a tenth of the
    // parse's samples. Asking for the lines a few records ahead took 4-5% off a serial read.
    TRACEMODEL_PREFETCH(s + p + 1024);
    TRACEMODEL_PREFETCH(s + p + 1088);
    const batch_mark m = mark_of(b);
    auto bail = [&] {
      roll_back(b, m);
      return std::size_t{0};
    };
    fields& f = b.events.emplace_back();
    f.at = p;
    f.args_first = static_cast<std::uint32_t>(m.args);
    std::size_t args_end = 0;
    p = scan_.skip_space(p + 1);
    while (true) {
      if (p >= len_ || s[p] != '"') return bail();
      auto [k, q] = known_event_key(p);
      if (q == 0) {
        std::string_view key;
        if ((p = direct_string(p, key)) == 0) return bail();
        k = event_key_of(key);
        p = scan_.skip_space(p);
        if (p >= len_ || s[p] != ':') return bail();
        q = p + 1;
      }
      p = scan_.skip_space(q);
      if (p >= len_) return bail();
      const bool string_value = s[p] == '"';
      switch (k) {
        case event_key::ph:
          p = string_value ? direct_string(p, f.ph) : 0;
          f.has_ph = true;
          break;
        case event_key::name:
          p = string_value ? direct_string(p, f.name) : 0;
          break;
        case event_key::cat:
          p = string_value ? direct_string(p, f.cat) : 0;
          break;
        case event_key::s:
          p = string_value ? direct_string(p, f.scope) : 0;
          break;
        case event_key::bp:
          p = string_value ? direct_string(p, f.bp) : 0;
          break;
        case event_key::pid:
          p = direct_track_key(p, f.pid);
          break;
        case event_key::tid:
          p = direct_track_key(p, f.tid);
          break;
        case event_key::ts:
        case event_key::dur: {
          const std::string_view t = number_token(p);
          const bool ts = k == event_key::ts;
          if (!is_json_number_start(t) || !parse_micros(t, ts ? f.ts : f.dur)) return bail();
          (ts ? f.has_ts : f.has_dur) = true;
          p += t.size();
          break;
        }
        case event_key::id: {
          const std::string_view t = number_token(p);
          std::int64_t n = 0;
          if (!plain_integer(t, n)) return bail();  // string and big ids: simdjson
          f.id = static_cast<std::uint64_t>(n);
          f.has_id = true;
          p += t.size();
          break;
        }
        case event_key::args:
          p = direct_args(p, f, b);
          args_end = p;
          break;
        case event_key::other:
          p = direct_skip(p);
          break;
      }
      if (p == 0) return bail();
      p = scan_.skip_space(p);
      if (p >= len_) return bail();
      if (s[p] == '}') break;
      if (s[p] != ',') return bail();
      p = scan_.skip_space(p + 1);
    }
    f.args_count = static_cast<std::uint32_t>(b.args.size() - m.args);
    if (incomplete(f) != nullptr) return bail();
    if (f.ph[0] == 'M' && f.has_args) f.raw_args = {s + f.args_at, args_end - f.args_at};
    return p + 1;
  }

  /// The record key whose opening quote is at `p` and the position after the colon that follows
  /// it, read as one word when it is one of the keys `event_key` names and the colon follows the
  /// closing quote at once (as every writer puts them); {other, 0} when it is not. Both quotes
  /// are in the patterns, so a match is the whole key. Reads 8 bytes from `p`, within the
  /// padding; a match that runs past the text's end (a text cut inside a key, padding that
  /// happens to complete it) leaves a position past the end, which the caller rejects.
  std::pair<event_key, std::size_t> known_event_key(std::size_t p) const noexcept {
    static constexpr auto word = [](std::string_view t) {
      std::uint64_t w = 0;
      for (std::size_t i = 0; i < t.size(); ++i)
        w |= std::uint64_t{static_cast<unsigned char>(t[i])} << (8 * i);
      return w;
    };
    struct pattern {
      std::uint64_t w, mask;
      std::size_t size;
      event_key k;
    };
    static constexpr auto make = [](std::string_view t, event_key k) {
      return pattern{word(t),
                     t.size() == 8 ? ~std::uint64_t{0} : (std::uint64_t{1} << (8 * t.size())) - 1,
                     t.size(), k};
    };
    // In the order the writers put them (ph, cat, name, pid, tid, ts, dur, args).
    static constexpr pattern patterns[] = {
        make("\"ph\":", event_key::ph),     make("\"cat\":", event_key::cat),
        make("\"name\":", event_key::name), make("\"pid\":", event_key::pid),
        make("\"tid\":", event_key::tid),   make("\"ts\":", event_key::ts),
        make("\"dur\":", event_key::dur),   make("\"args\":", event_key::args),
        make("\"id\":", event_key::id),     make("\"s\":", event_key::s),
        make("\"bp\":", event_key::bp)};
    const std::uint64_t w = load_u64(buf_.data() + p);
    for (const pattern& c : patterns)
      if ((w & c.mask) == c.w) return {c.k, p + c.size};
    return {event_key::other, 0};
  }

  // Fast paths for the op input lists, which are most of a Kineto trace's values: read from the
  // text without a simdjson value per element (simdjson stage 1 has validated the batch's
  // strings and UTF-8). Anything unusual returns false with nothing added, and simdjson reads
  // the value instead (and names the error, if there is one).

  /// `Input Dims` / `Input Strides` when they are arrays of entries that hold integers or
  /// entries (dims_text.hpp): the position after the array, or 0 with nothing added.
  std::size_t read_dims_text(std::size_t p, batch& out) const {
    return chrome_trace::read_dims_text(buf_.data(), len_, p, out);
  }

  /// `Input type` / `Concrete Inputs` when they are arrays of plain strings (direct_string):
  /// the position after the array, or 0 with nothing added.
  std::size_t read_strings_text(std::size_t p,
                                detail::scratch_vector<std::string_view>& out) const {
    const std::size_t n0 = out.size();
    auto bail = [&] {
      out.resize(n0);
      return std::size_t{0};
    };
    if (p >= len_ || buf_[p] != '[') return 0;
    p = scan_.skip_space(p + 1);
    if (p < len_ && buf_[p] == ']') return p + 1;
    while (true) {
      if (p >= len_ || buf_[p] != '"') return bail();
      p = direct_string(p, out.emplace_back());
      if (p == 0) return bail();
      p = scan_.skip_space(p);
      if (p < len_ && buf_[p] == ']') return p + 1;
      if (p >= len_ || buf_[p] != ',') return bail();
      p = scan_.skip_space(p + 1);
    }
  }

  // ---- the events array through the direct path
  // --------------------------------------------------
  /// Reads elements through the direct path into `b`, from the one at `at.p`, while they start
  /// before `limit`; `at` follows. Touches nothing but `b` and `at` (a parsing thread runs it).
  run_end direct_run(cursor& at, std::size_t limit, batch& b) {
    while (true) {
      if (at.p >= limit) return run_end::limit;
      const batch_mark m = mark_of(b);
      const std::size_t e = at.p < len_ && buf_[at.p] == '{' ? direct_event(at.p, b) : 0;
      if (e == 0) return run_end::stuck;
      const std::size_t sep = scan_.skip_space(e);
      if (sep < len_ && buf_[sep] == ']') {
        at = {sep, sep + 1};
        return run_end::last;
      }
      std::size_t next = 0;
      if (!(sep < len_ && buf_[sep] == ',' && (next = scan_.skip_space(sep + 1)) < len_ &&
            buf_[next] != ']')) {
        roll_back(b, m);  // malformed after the element: simdjson's to name
        return run_end::stuck;
      }
      at = {sep, next};
    }
  }

 private:
  std::span<char> buf_;
  std::size_t len_;
  json_scanner scan_;
};

}  // namespace detail::chrome_trace
TRACEMODEL_END_NAMESPACE
