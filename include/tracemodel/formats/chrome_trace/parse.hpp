// tracemodel/formats/chrome_trace — the parser's interface: the options of a read, what the
// parser hands its records to (a `record_sink`), and the one call that parses a trace's text.
//
// The parser does not depend on the schema of the table being built: it turns the text into
// batches of records (records.hpp) and hands each batch to the sink, which builds the events
// (table_builder.hpp). It is compiled where this header's definitions are included: by default
// in every unit that reads a trace (header-only); with `TRACEMODEL_READER_COMPILED` defined to 1
// (CMake: link `tracemodel::reader`), once, in the library's own unit, and the units that read a
// trace include neither the parser nor simdjson. Define it for the whole program or not at all.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string_view>

#include "tracemodel/config.hpp"
#include "tracemodel/formats/chrome_trace/records.hpp"
#include "tracemodel/threads.hpp"

// TRACEMODEL_READER_API: how the reader's non-template functions are declared (inline when
// header-only). TRACEMODEL_READER_DEFINITIONS: whether this unit sees their definitions (always
// when header-only; in the library's own unit when compiled).
#if defined(TRACEMODEL_READER_COMPILED) && TRACEMODEL_READER_COMPILED
#define TRACEMODEL_READER_API
#ifndef TRACEMODEL_READER_DEFINITIONS
#define TRACEMODEL_READER_DEFINITIONS 0
#endif
#else
#define TRACEMODEL_READER_API inline
#undef TRACEMODEL_READER_DEFINITIONS
#define TRACEMODEL_READER_DEFINITIONS 1
#endif

TRACEMODEL_BEGIN_NAMESPACE

class trace_text;

struct read_options : thread_options {
  /// Called after each batch with (bytes read, total bytes) of the decompressed text.
  std::function<void(std::size_t, std::size_t)> progress;
  /// Bytes of the events array parsed before they are built (and between progress reports).
  std::size_t batch_bytes = std::size_t{128} << 10;
  /// Read on two threads (unless `threads` is 1; thread_options) when `traceEvents` has at
  /// least `parallel_threshold` bytes. With `fast_paths`, the array is cut into stretches of about
  /// `batch_bytes` at guessed element starts (after a line break: a one-line file reads on one
  /// thread); a second thread parses stretches while this one builds them into the table in
  /// order and parses too when the next is not ready. A stretch is used only where the serial
  /// read reaches exactly its guessed start: the table, the anomalies, the errors and their
  /// offsets are the serial read's. Without `fast_paths`, a second thread parses batches
  /// through simdjson ahead of this one (slower than the serial direct path on two cores).
  std::size_t parallel_threshold = std::size_t{8} << 20;
  /// Read records of the usual shape straight from the text (the direct path: one pass, every
  /// byte checked; a record it cannot read goes to simdjson), and op input lists, integers and
  /// plain strings from the text where simdjson reads the rest; false reads every value through
  /// simdjson (the same table, slower: tests and the fuzz target compare the two).
  bool fast_paths = true;
  /// Keep the order in which the file listed the events in `trace_info::file_order` (it costs
  /// 4 bytes an event, and only when the file was not in start order). Analyses that reproduce
  /// another tool's numbers quirk for quirk need it (HTA's frame: hta/read.hpp sets it).
  bool keep_file_order = false;
  /// Read a file (not a pipe; gzip inflated) this many bytes of text at a time as the parser
  /// goes, instead of whole before it, when the read is on one thread (a text of
  /// `parallel_threshold` bytes or more with two threads allowed is read whole, for the
  /// parallel read): with the text released behind the parser, reading holds the table and a
  /// few steps of text, not the whole file. 0: always read the whole file first.
  std::size_t stream_bytes = std::size_t{1} << 20;
};

namespace detail::chrome_trace {

/// What the parser hands over, in file order. Records refer to the text and to the batch, which
/// are valid during the call only.
class record_sink {
 public:
  record_sink() = default;
  record_sink(const record_sink&) = delete;
  record_sink& operator=(const record_sink&) = delete;
  /// `baseTimeNanoseconds` (at `at` in the text): before or after the events array.
  virtual void base_time(std::int64_t ns, std::size_t at) = 0;
  /// A top-level key other than `traceEvents`, `baseTimeNanoseconds`, `schemaVersion` and
  /// `displayTimeUnit`, with its value as JSON text.
  virtual void metadata(std::string_view key, std::string_view raw) = 0;
  /// The events array begins (times read from here on are relative to the base time so far);
  /// once per trace, before its first batch, an empty array included.
  virtual void events_begin() = 0;
  /// A batch of records.
  virtual void build(const batch_view& b) = 0;
  /// After the first batch of several: the rest of the array is about `scale` times what was
  /// built so far (room can be reserved).
  virtual void expect(double scale) = 0;

 protected:
  ~record_sink() = default;
};

/// Parses the Chrome trace in `buf` (`len` bytes of text, then at least `text_padding` bytes,
/// trace_text.hpp)
/// into `sink`; throws `input_error` for bad input, at the first problem in file order. `buf` is
/// written during the parse and restored. `owner`, when not null, is the text's owner, told to
/// release what lies before each batch built (trace_text::release_before).
TRACEMODEL_READER_API void parse_text(std::span<char> buf, std::size_t len, const read_options& opt,
                                      trace_text* owner, record_sink& sink);

}  // namespace detail::chrome_trace
TRACEMODEL_END_NAMESPACE
