// tracemodel/formats/chrome_trace — the simdjson path: the record parser for any record, and
// the one that names the errors.
//
// A batch of the events array (its elements between two separators) is parsed in place by
// simdjson's On-Demand API into records (records.hpp), as the direct path (direct_path.hpp)
// would have read them; integers, plain strings and op input lists are still read from the text
// where `fast_paths` allows. Errors are thrown as `input_error` at the byte offset of the
// problem, the first in file order.
#pragma once

#include <simdjson.h>

#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "tracemodel/config.hpp"
#include "tracemodel/formats/chrome_trace/direct_path.hpp"
#include "tracemodel/formats/chrome_trace/records.hpp"
#include "tracemodel/formats/chrome_trace/tokens.hpp"
#include "tracemodel/formats/json_scan.hpp"
#include "tracemodel/formats/trace_text.hpp"
#include "tracemodel/model/table.hpp"

TRACEMODEL_BEGIN_NAMESPACE
namespace detail::chrome_trace {

static_assert(text_padding >= simdjson::SIMDJSON_PADDING,
              "trace_text pads less than simdjson reads");

class simdjson_reader {
  using value_t = simdjson::ondemand::value;

 public:
  /// `buf`: the text (`len` bytes) and its padding; `fast_paths`: read_options::fast_paths.
  simdjson_reader(std::span<char> buf, std::size_t len, bool fast_paths) noexcept
      : buf_(buf),
        len_(len),
        scan_(std::string_view(buf.data(), len)),
        direct_(buf, len),
        fast_paths_(fast_paths) {}

  std::string unescape_key(std::size_t q, std::size_t key_end) {
    const std::string_view raw(buf_.data() + q, key_end - q);
    if (raw.find('\\') == std::string_view::npos) return std::string(raw.substr(1, raw.size() - 2));
    validate_standalone(raw, q);
    simdjson::dom::parser p;
    std::string padded(raw);
    simdjson::dom::element e;
    if (p.parse(padded).get(e)) throw input_error("invalid key", q);
    return std::string(std::string_view(e));
  }

  /// Validates a complete JSON value (top-level metadata) with simdjson.
  void validate_standalone(std::string_view raw, std::size_t offset) {
    simdjson::dom::parser p;
    simdjson::dom::element e;
    const simdjson::padded_string padded(raw);
    if (const auto err = p.parse(padded).get(e))
      throw input_error(std::string("invalid JSON value: ") + simdjson::error_message(err), offset);
  }

  /// Parses the elements between the separators at `open` and `close` in place into `b`: the
  /// two separators become '[' and ']' for the parse and are restored afterwards.
  void parse_batch(const bounds& where, batch& b, simdjson::ondemand::parser& parser) {
    b.clear();
    b.where = where;
    const std::size_t open = where.open, close = where.close;
    const char saved_open = buf_[open], saved_close = buf_[close];
    buf_[open] = '[';
    buf_[close] = ']';
    struct restore {
      std::span<char> b;
      std::size_t o, c;
      char so, sc;
      ~restore() {
        b[o] = so;
        b[c] = sc;
      }
    } guard{buf_, open, close, saved_open, saved_close};
    const simdjson::padded_string_view view(buf_.data() + open, close - open + 1,
                                            buf_.size() - open);
    simdjson::ondemand::document doc;
    if (const auto err = parser.iterate(view).get(doc)) fail(err, open);
    doc_ = &doc;
    struct forget {
      simdjson::ondemand::document*& d;
      ~forget() { d = nullptr; }
    } forget_doc{doc_};
    simdjson::ondemand::array arr;
    if (const auto err = doc.get_array().get(arr)) fail(err, open);
    for (auto item : arr) {
      value_t v;
      if (const auto err = item.get(v)) fail(err, location(doc, open));
      const std::size_t at = offset_of(v);
      simdjson::ondemand::object obj;
      if (const auto err = v.get_object().get(obj)) {
        if (err == simdjson::INCORRECT_TYPE)
          throw input_error("trace event: expected an object", at);
        fail(err, at);
      }
      read_event(obj, at, b);
    }
  }

 private:
  /// Throws for a simdjson error, at the parser's position when it knows one.
  [[noreturn]] void fail(simdjson::error_code err, std::size_t offset) const {
    if (doc_ != nullptr) offset = std::max(offset, location(*doc_, offset));
    throw input_error(std::string("invalid JSON: ") + simdjson::error_message(err), offset);
  }
  /// A number simdjson refused: out of range when it is well formed (1e999), else invalid.
  [[noreturn]] void number_error(value_t& v, std::string_view what, std::size_t at) const {
    const std::string_view tok = token_of(v);
    std::int64_t ignored = 0;
    const bool well_formed =
        !tok.empty() && (tok[0] == '-' || (tok[0] >= '0' && tok[0] <= '9')) &&
        (parse_micros(tok, ignored) || tok.find_first_of("eE") != std::string_view::npos);
    throw input_error(
        std::string(what) + (well_formed ? ": number out of range" : ": invalid number"), at);
  }
  std::size_t location(simdjson::ondemand::document& doc, std::size_t fallback) const {
    const char* p = nullptr;
    if (doc.current_location().get(p) == simdjson::SUCCESS && p >= buf_.data() &&
        p < buf_.data() + len_)
      return static_cast<std::size_t>(p - buf_.data());
    return fallback;
  }
  std::size_t offset_of(value_t& v) const {
    const std::string_view tok = v.raw_json_token();
    if (tok.data() >= buf_.data() && tok.data() < buf_.data() + len_)
      return static_cast<std::size_t>(tok.data() - buf_.data());
    return 0;
  }

  /// A field's key: its text in the buffer when it has no escapes (no copy), else unescaped.
  std::string_view key_of(simdjson::ondemand::field& fld, std::size_t at) {
    const char* k = fld.key().raw();
    const char* end = buf_.data() + len_;
    const char* q = k;
    while (q < end && *q != '"' && *q != '\\') ++q;
    if (q < end && *q == '"') return {k, static_cast<std::size_t>(q - k)};
    std::string_view key;
    if (const auto err = fld.unescaped_key().get(key)) fail(err, at);
    return key;
  }

  /// is_null() reports a malformed literal ("nul", "nulx") as an error
  /// result; its implicit bool conversion would throw, so read it by value.
  static bool is_null_literal(value_t& v) {
    bool yes = false;
    return !v.is_null().get(yes) && yes;
  }

  template <class T>
  T get_or_fail(simdjson::simdjson_result<T> r, std::string_view what, std::size_t at) {
    T v{};
    if (const auto err = std::move(r).get(v)) {
      if (err == simdjson::INCORRECT_TYPE)
        throw input_error(std::string(what) + ": wrong type", at);
      fail(err, at);
    }
    return v;
  }

  /// A pid or tid: a number, or a string (made a string key when the event is built).
  key_value read_key(value_t v, std::string_view what) {
    key_value k;
    std::int64_t n = 0;
    if ((fast_paths_ && plain_integer(token_of(v), n)) ||
        v.get_int64().get(n) == simdjson::SUCCESS) {  // the usual case
      k.number = static_cast<std::uint64_t>(n);
      return k;
    }
    const std::size_t at = offset_of(v);
    simdjson::ondemand::json_type type;
    if (const auto err = v.type().get(type)) fail(err, at);
    if (type == simdjson::ondemand::json_type::string) {
      k.text = get_or_fail(v.get_string(), what, at);
      k.is_string = true;
      return k;
    }
    if (type != simdjson::ondemand::json_type::number)
      throw input_error(std::string(what) + ": expected a number or a string", at);
    // Not an int64 (tried above): an unsigned one above 2^63 still fits.
    if (v.get_uint64().get(k.number) == simdjson::SUCCESS) return k;
    throw input_error(std::string(what) + ": not an integer in range", at);
  }
  /// A pid or tid: read_key, and numbers that would read back as string keys (bit 62 set, bit
  /// 63 clear: 2^62 to 2^63 - 1, never an operating system's id) are an error.
  key_value read_track_key(value_t v, std::string_view what) {
    const key_value k = read_key(v, what);
    if (!k.is_string && basic_event_table<>::is_string_key(k.number))
      throw input_error(std::string(what) + ": numbers from 2^62 to 2^63 - 1 are not supported",
                        offset_of(v));
    return k;
  }

  std::int64_t read_micros(value_t v, std::string_view what) {
    // The usual case first: a well-formed number that fits, parsed from its text once.
    const std::string_view text = token_of(v);
    std::int64_t ns = 0;
    if (is_json_number_start(text) && parse_micros(text, ns)) return ns;
    // Otherwise find out what is wrong, as simdjson sees it.
    const std::size_t at = offset_of(v);
    simdjson::ondemand::json_type type;
    if (const auto err = v.type().get(type)) fail(err, at);
    if (type != simdjson::ondemand::json_type::number)
      throw input_error(std::string(what) + ": expected a number", at);
    double check = 0;  // validates the number (and rejects out-of-range values)
    if (v.get_double().get(check)) number_error(v, what, at);
    if (!parse_micros(text, ns)) throw input_error(std::string(what) + ": number out of range", at);
    return ns;
  }
  /// A value's text without the whitespace after it (simdjson's stage 1 has validated the
  /// structure and the UTF-8 around it; what the token is, the caller checks).
  static std::string_view token_of(value_t& v) noexcept {
    std::string_view t = v.raw_json_token();
    while (!t.empty() && is_json_space(t.back())) t.remove_suffix(1);
    return t;
  }

  /// A string value; the offset is looked up only for the error.
  std::string_view string_or_fail(value_t& v, std::string_view what) {
    std::string_view out;
    if (fast_paths_ && plain_string(token_of(v), out)) return out;
    if (const auto err = v.get_string().get(out)) {
      if (err == simdjson::INCORRECT_TYPE)
        throw input_error(std::string(what) + ": wrong type", offset_of(v));
      fail(err, offset_of(v));
    }
    return out;
  }

  void read_event(simdjson::ondemand::object& obj, std::size_t at, batch& b) {
    fields& f = b.events.emplace_back();
    f.at = at;
    f.args_first = static_cast<std::uint32_t>(b.args.size());
    for (auto field_result : obj) {
      simdjson::ondemand::field field;
      if (const auto err = std::move(field_result).get(field)) fail(err, at);
      value_t& v = field.value();
      switch (event_key_of(key_of(field, at))) {
        case event_key::ph:
          f.ph = string_or_fail(v, "ph");
          f.has_ph = true;
          break;
        case event_key::name:
          f.name = string_or_fail(v, "name");
          break;
        case event_key::cat:
          f.cat = string_or_fail(v, "cat");
          break;
        case event_key::pid:
          f.pid = read_track_key(v, "pid");
          break;
        case event_key::tid:
          f.tid = read_track_key(v, "tid");
          break;
        case event_key::ts:
          f.ts = read_micros(v, "ts");
          f.has_ts = true;
          break;
        case event_key::dur:
          f.dur = read_micros(v, "dur");
          f.has_dur = true;
          break;
        case event_key::s:
          f.scope = string_or_fail(v, "s");
          break;
        case event_key::bp:
          f.bp = string_or_fail(v, "bp");
          break;
        case event_key::id:
          f.id = read_id(v);
          f.has_id = true;
          break;
        case event_key::args:
          read_args(v, f, b);
          break;
        case event_key::other:
          skip_value(v);  // tts, cname, ...: not part of the model, validated and dropped
          break;
      }
    }
    f.args_count = static_cast<std::uint32_t>(b.args.size()) - f.args_first;
    if (const char* problem = incomplete(f)) throw input_error(problem, at);
    // A metadata record's args are cut on the parsing side: the builder never scans text,
    // whose batch separators a parser thread may be rewriting meanwhile.
    if (f.ph[0] == 'M' && f.has_args)
      f.raw_args = {buf_.data() + f.args_at, scan_.skip_value(f.args_at) - f.args_at};
  }

  std::uint64_t read_id(value_t v) {
    const std::size_t at = offset_of(v);
    simdjson::ondemand::json_type type;
    if (const auto err = v.type().get(type)) fail(err, at);
    if (type == simdjson::ondemand::json_type::string) {
      const std::string_view s = get_or_fail(v.get_string(), "id", at);
      std::uint64_t u = 0;
      if (parse_uint64(s, u)) return u;
      // Perfetto reads string ids as hex.
      const std::string_view h = s.starts_with("0x") ? s.substr(2) : s;
      u = 0;
      if (h.empty() || h.size() > 16) throw input_error("id: not a number", at);
      for (char c : h) {
        const int d = c >= '0' && c <= '9'   ? c - '0'
                      : c >= 'a' && c <= 'f' ? c - 'a' + 10
                      : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                             : -1;
        if (d < 0) throw input_error("id: not a number", at);
        u = u * 16 + static_cast<std::uint64_t>(d);
      }
      return u;
    }
    return read_key(v, "id").number;  // strings were handled above
  }

  void skip_value(value_t v, int depth = 0) {
    const std::size_t at = offset_of(v);
    if (depth > 1024) throw input_error("nesting deeper than 1024 levels", at);
    simdjson::ondemand::json_type type;
    if (const auto err = v.type().get(type)) fail(err, at);
    switch (type) {
      case simdjson::ondemand::json_type::object: {
        simdjson::ondemand::object o = get_or_fail(v.get_object(), "object", at);
        for (auto fld : o) {
          value_t x;
          if (const auto err = fld.value().get(x)) fail(err, at);
          skip_value(x, depth + 1);
        }
        break;
      }
      case simdjson::ondemand::json_type::array: {
        simdjson::ondemand::array a = get_or_fail(v.get_array(), "array", at);
        for (auto el : a) {
          value_t x;
          if (const auto err = el.get(x)) fail(err, at);
          skip_value(x, depth + 1);
        }
        break;
      }
      case simdjson::ondemand::json_type::number: {
        double d = 0;
        if (v.get_double().get(d)) {
          std::uint64_t u = 0;  // big unsigned integers are fine
          if (v.get_uint64().get(u) == simdjson::SUCCESS) break;
          number_error(v, "value", at);
        }
        break;
      }
      case simdjson::ondemand::json_type::string:
        (void)get_or_fail(v.get_string(), "string", at);
        break;
      case simdjson::ondemand::json_type::boolean:
        (void)get_or_fail(v.get_bool(), "boolean", at);
        break;
      case simdjson::ondemand::json_type::null:
        if (!is_null_literal(v)) throw input_error("invalid literal", at);
        break;
    }
  }

  void read_args(value_t v, fields& f, batch& b) {
    const std::size_t at = offset_of(v);
    simdjson::ondemand::json_type type;
    if (const auto err = v.type().get(type)) fail(err, at);
    if (type != simdjson::ondemand::json_type::object)
      throw input_error("args: expected an object", at);
    f.args_at = at;
    f.has_args = true;
    simdjson::ondemand::object o = get_or_fail(v.get_object(), "args", at);
    for (auto fld_result : o) {
      simdjson::ondemand::field fld;
      if (const auto err = std::move(fld_result).get(fld)) fail(err, at);
      raw_arg a;
      a.key = key_of(fld, at);
      value_t& x = fld.value();
      a.offset = offset_of(x);
      if (dims_range* r = dims_list(a.key, f)) {
        fill_list(*r, b.dims, [&] {
          if (!fast_paths_ || direct_.read_dims_text(a.offset, b) == 0) read_dims(x, b, 0);
          return true;
        });
        continue;
      }
      if (string_range* r = string_list(a.key, f)) {
        fill_list(*r, b.strings, [&] {
          if (!fast_paths_ || direct_.read_strings_text(a.offset, b.strings) == 0)
            read_strings(x, b.strings, a.offset);
          return true;
        });
        continue;
      }
      if (fast_paths_) {  // integers and plain strings, the usual args, from the text
        const std::string_view tok = token_of(x);
        if (plain_integer(tok, a.i)) {
          a.kind = raw_arg::type::integer;
          b.args.push_back(a);
          continue;
        }
        if (plain_string(tok, a.text)) {
          a.kind = raw_arg::type::string;
          b.args.push_back(a);
          continue;
        }
      }
      simdjson::ondemand::json_type xt;
      if (const auto err = x.type().get(xt)) fail(err, a.offset);
      switch (xt) {
        case simdjson::ondemand::json_type::number: {
          simdjson::ondemand::number_type nt;
          if (x.get_number_type().get(nt)) number_error(x, "args." + std::string(a.key), a.offset);
          if (nt == simdjson::ondemand::number_type::signed_integer &&
              x.get_int64().get(a.i) == simdjson::SUCCESS) {
            a.kind = raw_arg::type::integer;
          } else if (nt == simdjson::ondemand::number_type::unsigned_integer &&
                     x.get_uint64().get(a.u) == simdjson::SUCCESS) {
            a.kind = raw_arg::type::unsigned_integer;
          } else {  // fractions, exponents, and integers beyond 64 bits: the nearest double
            a.kind = raw_arg::type::floating;
            double d = 0;
            if (x.get_double().get(d)) number_error(x, "args." + std::string(a.key), a.offset);
            a.f = d;
          }
          break;
        }
        case simdjson::ondemand::json_type::string:
          a.kind = raw_arg::type::string;
          a.text = get_or_fail(x.get_string(), a.key, a.offset);
          break;
        case simdjson::ondemand::json_type::boolean:
          a.kind = raw_arg::type::boolean;
          a.b = get_or_fail(x.get_bool(), a.key, a.offset);
          break;
        case simdjson::ondemand::json_type::null:
          if (!is_null_literal(x)) throw input_error("invalid literal", a.offset);
          a.kind = raw_arg::type::null;
          break;
        default: {  // arrays and objects: validated, kept as raw JSON
          const std::size_t e = scan_.skip_value(a.offset);
          a.kind = raw_arg::type::json;
          a.text = std::string_view(buf_.data() + a.offset, e - a.offset);
          skip_value(x);
          break;
        }
      }
      b.args.push_back(a);
    }
  }

  void read_dims(value_t v, batch& out, int depth) {
    const std::size_t at = offset_of(v);
    if (depth > 64) throw input_error("Input Dims: nested too deeply", at);
    simdjson::ondemand::array a;
    if (v.get_array().get(a)) throw input_error("Input Dims/Strides: expected an array", at);
    if (depth == 0) {
      for (auto el : a) {
        value_t x;
        if (const auto err = el.get(x)) fail(err, at);
        read_dims(x, out, 1);
      }
      return;
    }
    // An entry: an array of numbers (a tensor's dims) or of arrays (a list).
    const std::size_t self = out.dims.size();
    out.dims.push_back({false, 0, static_cast<std::uint32_t>(out.ints.size())});
    for (auto el : a) {
      value_t x;
      if (const auto err = el.get(x)) fail(err, at);
      std::int64_t n = 0;
      if (!out.dims[self].list && x.get_int64().get(n) == simdjson::SUCCESS) {  // the usual case
        out.ints.push_back(n);
        ++out.dims[self].count;
        continue;
      }
      simdjson::ondemand::json_type type;
      if (const auto err = x.type().get(type)) fail(err, at);
      if (type == simdjson::ondemand::json_type::array) {
        if (!out.dims[self].list && out.dims[self].count > 0)
          throw input_error("Input Dims: mixed numbers and lists", offset_of(x));
        out.dims[self].list = true;
        ++out.dims[self].count;
        read_dims(x, out, depth + 1);
      } else if (type == simdjson::ondemand::json_type::number) {
        if (out.dims[self].list)
          throw input_error("Input Dims: mixed numbers and lists", offset_of(x));
        out.ints.push_back(get_or_fail(x.get_int64(), "Input Dims", offset_of(x)));
        ++out.dims[self].count;
      } else {
        throw input_error("Input Dims/Strides: expected numbers or arrays", offset_of(x));
      }
    }
  }

  void read_strings(value_t v, detail::scratch_vector<std::string_view>& out, std::size_t at) {
    simdjson::ondemand::array a;
    if (v.get_array().get(a))
      throw input_error("Input type/Concrete Inputs: expected an array", at);
    for (auto el : a) {
      value_t x;
      if (const auto err = el.get(x)) fail(err, at);
      simdjson::ondemand::json_type type;
      if (const auto err = x.type().get(type)) fail(err, at);
      if (type == simdjson::ondemand::json_type::string) {
        out.emplace_back(get_or_fail(x.get_string(), "string", offset_of(x)));
      } else {  // numbers or others in Concrete Inputs: their JSON text
        const std::size_t s = offset_of(x);
        const std::size_t e = scan_.skip_value(s);
        skip_value(x);
        out.emplace_back(buf_.data() + s, e - s);
      }
    }
  }

  std::span<char> buf_;
  std::size_t len_;
  json_scanner scan_;
  direct_reader direct_;  // op input lists and strings read from the text
  bool fast_paths_;
  simdjson::ondemand::document* doc_ = nullptr;  // the batch being parsed
};

}  // namespace detail::chrome_trace
TRACEMODEL_END_NAMESPACE
