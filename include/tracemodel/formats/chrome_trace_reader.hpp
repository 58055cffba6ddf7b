// tracemodel/formats — the Chrome-trace / Kineto reader.
//
//   tracemodel::event_table t = tracemodel::read_chrome_trace_file("trace.json.gz");
//
// Reads what real PyTorch versions write: Kineto traces (an object with `traceEvents`,
// `baseTimeNanoseconds`, metadata) and the older export (a bare array of complete events),
// integer or fractional microseconds, optional fields missing, gzip-compressed or not. Times
// are parsed from the number text, so `baseTimeNanoseconds + ts * 1000` is exact; what each
// record becomes is table_builder.hpp's to say.
//
// Components, under formats/chrome_trace/ (docs/formats.md has the whole picture):
//  * trace_text.hpp (formats/) loads a file's text, shared with the execution-trace reader;
//  * parse.hpp: the parser's interface (read_options, record_sink, parse_text); parser.hpp the
//    top level, events_array.hpp the events array (batches, two threads), direct_path.hpp and
//    simdjson_path.hpp the two record parsers, records.hpp what they produce;
//  * flow_binder.hpp binds flow records to events, op_inputs.hpp reads op inputs;
//  * table_builder.hpp builds the table of a schema from the records: the only template.
// The parser and the binder do not depend on the schema. With TRACEMODEL_READER_COMPILED (CMake:
// link `tracemodel::reader`) they are compiled once in the library's unit, and so is the builder
// for the default schema: a unit that includes this header then parses neither simdjson nor the
// parser.
//
// Bad input throws `input_error` whose `offset()` is the byte offset of the problem (in the
// decompressed text): empty or truncated input (gzip included), garbage, valid JSON that is not
// a trace, wrong types, numbers that are not finite or out of range, nesting deeper than 1024.
// Anomalies that real profilers produce are repaired and counted in `table.anomalies`: an event
// that ends before it starts (its end is set to its start), a duplicate flow start (the first
// wins), a flow end without a start or bound to nothing (dropped), an `E` without `B`.
#pragma once

#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "tracemodel/config.hpp"
#include "tracemodel/formats/chrome_trace/parse.hpp"
#include "tracemodel/formats/chrome_trace/table_builder.hpp"
#include "tracemodel/formats/trace_text.hpp"
#include "tracemodel/model/table.hpp"
#include "tracemodel/threads.hpp"

#if TRACEMODEL_READER_DEFINITIONS
#include "tracemodel/formats/chrome_trace/parser.hpp"
#endif

TRACEMODEL_BEGIN_NAMESPACE

namespace detail::chrome_trace {
/// Parses the text into `t` (which is empty).
template <class Schema>
void read_into(basic_event_table<Schema>& t, std::span<char> buf, std::size_t len,
               const read_options& opt, trace_text* owner) {
  table_builder<Schema> builder(t, len, opt);
  builder.keep_file_order(opt.keep_file_order);
  parse_text(buf, len, opt, owner, builder);
  builder.finish();
}
}  // namespace detail::chrome_trace

/// Reads a Chrome trace from `buf`: `len` bytes of text followed by at least `text_padding`
/// more (trace_text.hpp). `buf` is modified during the read and restored.
template <class Schema = default_schema>
basic_event_table<Schema> read_chrome_trace(std::span<char> buf, std::size_t len,
                                            const read_options& opt = {}) {
  if (buf.size() < len + text_padding)
    throw usage_error("read_chrome_trace: the buffer needs text_padding bytes after the text");
  basic_event_table<Schema> t;
  detail::chrome_trace::read_into(t, buf, len, opt, nullptr);
  return t;
}

/// Reads a Chrome trace from the first `len` bytes of `buf`, which grows by the padding the
/// parser needs if it lacks it.
template <class Schema = default_schema>
basic_event_table<Schema> read_chrome_trace(std::string& buf, std::size_t len,
                                            const read_options& opt = {}) {
  if (buf.size() < len + text_padding) buf.resize(len + text_padding, ' ');
  return read_chrome_trace<Schema>(std::span<char>(buf.data(), buf.size()), len, opt);
}

/// Reads a Chrome trace from a text it takes: the memory of the text is given back to the
/// operating system as the events are read (see trace_text::release_before), so the read
/// holds about the table and the unread rest of the text, not the whole text beside the table.
template <class Schema = default_schema>
basic_event_table<Schema> read_chrome_trace(trace_text text, const read_options& opt = {}) {
  basic_event_table<Schema> t;
  detail::chrome_trace::read_into(t, text.padded(), text.size(), opt, &text);
  return t;
}

/// Reads a Chrome trace from a string of JSON.
template <class Schema = default_schema>
basic_event_table<Schema> read_chrome_trace_string(std::string_view json,
                                                   const read_options& opt = {}) {
  trace_text text(json.size());
  if (!json.empty()) std::memcpy(text.data(), json.data(), json.size());
  text.set_size(json.size());
  return read_chrome_trace<Schema>(std::move(text), opt);
}

/// Reads a Chrome trace file, gzip-compressed or not (the text's memory is released as it is
/// read; a file read on one thread is read from the file, or inflated, as it is parsed,
/// `read_options::stream_bytes`).
template <class Schema = default_schema>
basic_event_table<Schema> read_chrome_trace_file(const std::string& path,
                                                 const read_options& opt = {}) {
  // A file read on one thread is read as it is parsed (read_options::stream_bytes).
  const std::size_t whole_from =
      detail::thread_budget(opt) > 1 ? opt.parallel_threshold : static_cast<std::size_t>(-1);
  try {
    trace_text text = stream_trace_text(path, opt.stream_bytes, opt, whole_from);
    basic_event_table<Schema> t;
    try {
      detail::chrome_trace::read_into(t, text.padded(), text.size(), opt, &text);
    } catch (const input_error&) {
      // The file's own error (a gzip stream cut short or corrupt further on, a file that
      // changed) comes first, as it does when the file is read whole before it is parsed.
      text.load_all();
      throw;
    }
    return t;
  } catch (const text_size_mismatch&) {  // a gzip file whose trailer did not give its size
    return read_chrome_trace<Schema>(load_trace_text(path, opt), opt);
  }
}

TRACEMODEL_END_NAMESPACE

#if defined(TRACEMODEL_READER_COMPILED) && TRACEMODEL_READER_COMPILED
// The builder for the default schema is compiled in the library's unit
// (src/chrome_trace_reader.cpp), with the parser and the flow binder.
TRACEMODEL_BEGIN_NAMESPACE
extern template class detail::chrome_trace::table_builder<default_schema>;
extern template void detail::chrome_trace::read_into<default_schema>(
    basic_event_table<default_schema>&, std::span<char>, std::size_t, const read_options&,
    trace_text*);
TRACEMODEL_END_NAMESPACE
#endif
