// tracemodel/formats/chrome_trace — the records of a Chrome trace as the reader's parsers read
// them, before any event is built: what the parsers (the direct path, simdjson) hand to the table
// builder, batch by batch. Nothing here depends on the schema of the table being built.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "tracemodel/config.hpp"
#include "tracemodel/detail/big_allocator.hpp"
#include "tracemodel/detail/stream_array.hpp"

TRACEMODEL_BEGIN_NAMESPACE
namespace detail {

/// One arg of an event, read before the event's kind is known (categories may come last).
struct raw_arg {
  enum class type : std::uint8_t {
    integer,
    unsigned_integer,
    floating,
    boolean,
    string,
    null,
    json
  };
  raw_arg() noexcept {}  // NOLINT(modernize-use-equals-default): see `chrome_trace::fields`
  std::string_view key;
  type kind = type::null;
  std::int64_t i = 0;
  std::uint64_t u = 0;
  double f = 0;
  bool b = false;
  std::string_view text;  ///< string contents, or raw JSON for arrays and objects
  std::size_t offset = 0;
};

/// Parsed `Input Dims` / `Input Strides`: entries depth first, lists followed by their elements.
struct dims_entry {
  bool list = false;
  std::uint32_t count = 0;  ///< list: elements; leaf: dims
  std::uint32_t first = 0;  ///< leaf: offset in the ints
};

namespace chrome_trace {

// ---- records as read -------------------------------------------------------------------------
/// A pid or tid as read: numbers stay numbers; strings become string keys when the event is
/// built (the producer does not touch the table).
struct key_value {
  std::uint64_t number = 0;
  std::string_view text;
  bool is_string = false;
};
/// Op inputs as read: `count` entries of the batch's `dims` from `first`.
struct dims_range {
  std::uint32_t first = 0, count = 0;
  bool present = false;
};
struct string_range {
  std::uint32_t first = 0, count = 0;
};
/// One record as read.
struct fields {
  // Provided, so that a new record (`emplace_back()`) gets its members' initializers alone:
  // value-initializing an aggregate clears all of it first, which GCC does with `rep stos`
  // (tens of cycles to start; about 2.5% of a read's samples, at 264 bytes a record).
  fields() noexcept {}  // NOLINT(modernize-use-equals-default): `= default` would clear
  std::string_view ph, name, cat, scope, bp;
  bool has_ph = false, has_ts = false, has_dur = false, has_id = false;
  key_value pid, tid;
  std::int64_t ts = 0, dur = 0;
  std::uint64_t id = 0;
  std::size_t at = 0;       ///< where the record starts
  std::size_t args_at = 0;  ///< where `args` starts
  bool has_args = false;
  std::string_view raw_args = "{}";  ///< metadata records: the `args` object as JSON text
  std::uint32_t args_first = 0, args_count = 0;  ///< in the batch's `args`
  dims_range dims, strides;
  string_range types, concrete;  ///< in the batch's `strings`
  /// A begin (`B`) or end (`E`) of a slice a format names (Perfetto's, whose ends close a slice
  /// of a track rather than the innermost of a thread): the end closes the begin of the same
  /// number. 0: none (a JSON record); no_slice: an end without its begin.
  std::uint32_t slice = 0;
};
inline constexpr std::uint32_t no_slice = 0xffffffffu;
/// A batch's place: the separators around it ('[' or ',' before, ',' or ']' after).
struct bounds {
  std::size_t open = 0, close = 0;
  bool last = false;
};

/// A parsed batch: its records and what they refer to. String views point into the text or
/// into the string buffer of the simdjson parser that read it (unescaped strings), which stays
/// with the batch until it is built.
struct batch {
  // Their allocator keeps the blocks of these arrays for the next read (big_allocator.hpp).
  scratch_vector<fields> events;
  scratch_vector<raw_arg> args;
  scratch_vector<dims_entry> dims;  ///< Input Dims and Input Strides entries
  scratch_vector<std::int64_t> ints;
  scratch_vector<std::string_view> strings;  ///< Input type and Concrete Inputs items
  bounds where;
  void clear() {
    events.clear();
    args.clear();
    dims.clear();
    ints.clear();
    strings.clear();
  }
};
/// What the table is built from: a batch's arrays, where they lie.
struct batch_view {
  std::span<const fields> events;
  std::span<const raw_arg> args;
  std::span<const dims_entry> dims;
  std::span<const std::int64_t> ints;
  std::span<const std::string_view> strings;
};
inline batch_view view_of(const batch& b) noexcept {
  return {b.events, b.args, b.dims, b.ints, b.strings};
}

/// A batch parsed on the other thread, copied into arrays of the building thread's with
/// streaming stores (stream_copy). Writing the parsed records straight into arrays
/// that the building thread reads made every cache line travel between the two cores twice
/// per batch (the builder had read the line, the parser wrote it again); the parser thread
/// parsed 1.6 times slower than with arrays of its own. It now parses into its own batch,
/// which stays in its cache, and streams the result out without reading the target lines.
struct published {
  stream_array<fields> events;
  stream_array<raw_arg> args;
  stream_array<dims_entry> dims;
  stream_array<std::int64_t> ints;
  stream_array<std::string_view> strings;
  void assign(const batch& b) {
    events.assign(b.events.data(), b.events.size());
    args.assign(b.args.data(), b.args.size());
    dims.assign(b.dims.data(), b.dims.size());
    ints.assign(b.ints.data(), b.ints.size());
    strings.assign(b.strings.data(), b.strings.size());
    stream_fence();
  }
  batch_view view() const noexcept {
    return {events.span(), args.span(), dims.span(), ints.span(), strings.span()};
  }
};

/// The dims of one input list as the consumer reads them.
struct dims_view {
  std::span<const dims_entry> entries;
  const std::int64_t* ints = nullptr;
  bool present = false;
};

}  // namespace chrome_trace
}  // namespace detail
TRACEMODEL_END_NAMESPACE
