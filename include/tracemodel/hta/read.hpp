// tracemodel/hta — reading traces as HTA's loader needs them: its frame is in the order the file
// listed the events, so the reader keeps that order (`read_options::keep_file_order`). Every
// read of this layer goes through here.
//
//   tracemodel::event_table t = tracemodel::hta::read_trace_file("rank-0.json.gz");
//   auto rows = tracemodel::hta::read_ranks({"run/"}, {}, [](std::int64_t rank, auto& t) {...});
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tracemodel/config.hpp"
#include "tracemodel/formats/chrome_trace_reader.hpp"
#include "tracemodel/formats/ranks.hpp"
#include "tracemodel/formats/trace_file.hpp"

TRACEMODEL_BEGIN_NAMESPACE
namespace hta {

/// `o` with the file's order kept.
[[nodiscard]] inline tracemodel::read_options reading(tracemodel::read_options o = {}) {
  o.keep_file_order = true;
  return o;
}

/// A trace read as HTA's loader needs it (`path` "-": standard input; Chrome JSON or Perfetto).
[[nodiscard]] inline event_table read_trace_file(const std::string& path,
                                                 const tracemodel::read_options& o = {}) {
  return tracemodel::read_trace_file(path, reading(o));
}

/// `for_each_rank` (formats/ranks.hpp) over the trace files of `paths`, each read as above.
template <class Fn>
[[nodiscard]] auto read_ranks(const std::vector<std::string>& paths,
                              const tracemodel::read_options& o, Fn fn, unsigned at_once = 0) {
  return for_each_rank(trace_files(paths), reading(o), std::move(fn), at_once);
}

}  // namespace hta
TRACEMODEL_END_NAMESPACE
