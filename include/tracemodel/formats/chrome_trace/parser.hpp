// tracemodel/formats/chrome_trace — the parser: the top level of a Chrome trace (an object with
// `traceEvents` and metadata, or a bare array of events), and the definition of `parse_text`.
// Included where the parser is compiled (parse.hpp says where).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "tracemodel/config.hpp"
#include "tracemodel/formats/chrome_trace/events_array.hpp"
#include "tracemodel/formats/chrome_trace/parse.hpp"
#include "tracemodel/formats/chrome_trace/simdjson_path.hpp"
#include "tracemodel/formats/json_scan.hpp"
#include "tracemodel/formats/trace_text.hpp"

TRACEMODEL_BEGIN_NAMESPACE
namespace detail::chrome_trace {

class text_parser {
 public:
  text_parser(std::span<char> buf, std::size_t len, const read_options& opt, trace_text* owner,
              record_sink& sink)
      : buf_(buf),
        len_(len),
        scan_(std::string_view(buf.data(), len)),
        sink_(sink),
        simdjson_(buf, len, opt.fast_paths),
        events_(buf, len, opt, owner, sink),
        text_(owner) {}

  void run() {
    std::size_t p = 0;
    text_.settle(0, [&] { return p = scan_.skip_space(0); });
    if (p >= len_) throw input_error("empty input: no JSON value", 0);
    if (buf_[p] == '[') {
      sink_.events_begin();
      const std::size_t end = events_.read_events(p);
      text_.all();
      check_trailing(end);
    } else if (buf_[p] == '{') {
      read_top_level(p);
    } else {
      throw input_error(
          std::string("not a trace: expected an object or an array, found '") + buf_[p] + "'", p);
    }
  }

 private:
  void check_trailing(std::size_t end) {
    const std::size_t q = scan_.skip_space(end);
    if (q < len_) throw input_error("unexpected data after the end of the JSON value", q);
  }

  void read_top_level(std::size_t p) {
    bool have_events = false;
    std::size_t q = 0;
    text_.settle(p, [&] { return q = scan_.skip_space(p + 1); });
    if (q < len_ && buf_[q] == '}') {
      text_.all();
      check_trailing(q + 1);
      throw input_error("not a trace: the object has no traceEvents", p);
    }
    std::size_t from = p + 1;  // after the '{' or the ','
    while (true) {
      // The member after `from`: its key, and its value's bounds (the events array's end is
      // found by reading it), read again with more text until every byte looked at was in place.
      std::string key;
      std::size_t v = 0;
      std::size_t v_end = 0;
      text_.settle(from, [&] {
        q = scan_.skip_space(from);
        if (q >= len_) throw input_error("unexpected end of input in the top-level object", q);
        if (buf_[q] != '"') throw input_error("expected a key in the top-level object", q);
        const std::size_t key_end = scan_.skip_string(q);
        key = simdjson_.unescape_key(q, key_end);
        const std::size_t c = scan_.skip_space(key_end);
        if (c >= len_ || buf_[c] != ':') throw input_error("expected ':' after a key", c);
        v = scan_.skip_space(c + 1);
        if (key == "traceEvents") {
          if (v >= len_) throw input_error("unexpected end of input: a value was expected", v);
          if (buf_[v] != '[') throw input_error("traceEvents: expected an array", v);
          return v;
        }
        v_end = scan_.skip_value(v);
        simdjson_.validate_standalone(std::string_view(buf_.data() + v, v_end - v), v);
        return scan_.skip_space(v_end);  // the separator, looked at below
      });
      if (key == "traceEvents") {
        // Read where it stands (one pass over the text): a base time that comes later, as
        // Kineto writes it, shifts the events afterwards.
        if (have_events) throw input_error("traceEvents appears twice", q);
        sink_.events_begin();
        v_end = events_.read_events(v);
        text_.all();  // the rest: the top level's last members (a few at most)
        have_events = true;
      } else {
        const std::string_view raw(buf_.data() + v, v_end - v);
        if (key == "baseTimeNanoseconds") {
          std::int64_t base = 0;
          if (!parse_int64(raw, base)) {
            std::int64_t ns = 0;  // a fractional or exponent form: accept if integral
            if (!parse_micros(raw, ns) || ns % 1000 != 0)
              throw input_error("baseTimeNanoseconds: expected an integer", v);
            base = ns / 1000;
          }
          sink_.base_time(base, v);
        } else if (key != "schemaVersion" && key != "displayTimeUnit") {
          sink_.metadata(key, raw);
        }
      }
      q = scan_.skip_space(v_end);
      if (q < len_ && buf_[q] == ',') {
        from = q + 1;
        continue;
      }
      if (q < len_ && buf_[q] == '}') break;
      throw input_error("expected ',' or '}' in the top-level object", q);
    }
    text_.all();
    check_trailing(q + 1);
    if (!have_events) throw input_error("not a trace: the object has no traceEvents", p);
  }

  std::span<char> buf_;
  std::size_t len_;
  json_scanner scan_;
  record_sink& sink_;
  simdjson_reader simdjson_;  // keys with escapes, top-level values
  events_reader events_;
  text_window text_;
};

TRACEMODEL_READER_API void parse_text(std::span<char> buf, std::size_t len, const read_options& opt,
                                      trace_text* owner, record_sink& sink) {
  text_parser(buf, len, opt, owner, sink).run();
}

}  // namespace detail::chrome_trace
TRACEMODEL_END_NAMESPACE
