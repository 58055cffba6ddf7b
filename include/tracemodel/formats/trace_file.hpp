// tracemodel/formats — reading a trace file whatever its format: a Chrome trace (JSON) or a
// Perfetto trace (protobuf), gzip-compressed or not, told apart by its content rather than its
// name.
//
//   tracemodel::event_table t = tracemodel::read_trace_file("trace.pftrace");  // or .json(.gz)
//
// The first bytes decide (after inflating a gzip file): a Perfetto trace starts with its first
// packet's tag (formats/perfetto_reader.hpp: looks_like_perfetto), anything else is read as
// JSON (whose reader names what is wrong with a file that is neither). A pipe or other file
// that cannot be read twice is read whole first.
#pragma once

#include <sys/stat.h>
#include <zlib.h>

#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "tracemodel/config.hpp"
#include "tracemodel/formats/chrome_trace_reader.hpp"
#include "tracemodel/formats/export_view.hpp"
#include "tracemodel/formats/perfetto_reader.hpp"
#include "tracemodel/formats/trace_text.hpp"

TRACEMODEL_BEGIN_NAMESPACE

enum class trace_format : std::uint8_t { chrome_json, perfetto };

/// The format of the file at `path` by its first bytes (inflated when it is gzip); JSON when
/// it cannot be read (the JSON reader then says why).
inline trace_format sniff_trace_format(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr) return trace_format::chrome_json;
  std::array<char, 4096> head{};
  const int n = gzread(f, head.data(), static_cast<unsigned>(head.size()));
  gzclose(f);
  if (n <= 0) return trace_format::chrome_json;
  return looks_like_perfetto(std::string_view(head.data(), static_cast<std::size_t>(n)))
             ? trace_format::perfetto
             : trace_format::chrome_json;
}

/// Reads the trace at `path` (Chrome JSON or Perfetto, gzip or not; "-": standard input).
/// `counters`, when given, receives a Perfetto trace's counter tracks.
template <class Schema = default_schema>
basic_event_table<Schema> read_trace_file(const std::string& path, const read_options& opt = {},
                                          std::vector<counter_series>* counters = nullptr) {
  const std::string p = path == "-" ? "/dev/stdin" : path;
  struct stat st {};
  if (::stat(p.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {  // a pipe: read once, whole
    trace_text text = load_trace_text(p, opt);
    if (looks_like_perfetto(std::string_view(text.data(), text.size())))
      return read_perfetto_trace<Schema>(std::string_view(text.data(), text.size()), opt, counters);
    return read_chrome_trace<Schema>(std::move(text), opt);
  }
  if (sniff_trace_format(p) == trace_format::perfetto)
    return read_perfetto_trace_file<Schema>(p, opt, counters);
  return read_chrome_trace_file<Schema>(p, opt);
}

TRACEMODEL_END_NAMESPACE
