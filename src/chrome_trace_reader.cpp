// The trace readers compiled once (CMake's `tracemodel::reader`): the Chrome-trace parser, its
// flow binder and its table builder for the default schema, the execution-trace reader and the
// device properties. Units of a program built with
// TRACEMODEL_READER_COMPILED=1 include the reader's declarations only (formats/chrome_trace/
// parse.hpp says how); header-only use, the default, needs none of this.
#define TRACEMODEL_READER_DEFINITIONS 1
#include <tracemodel/formats/chrome_trace_reader.hpp>
#include <tracemodel/formats/device_properties.hpp>
#include <tracemodel/formats/execution_trace.hpp>

TRACEMODEL_BEGIN_NAMESPACE
template class detail::chrome_trace::table_builder<default_schema>;
template void detail::chrome_trace::read_into<default_schema>(basic_event_table<default_schema>&,
                                                              std::span<char>, std::size_t,
                                                              const read_options&, trace_text*);
TRACEMODEL_END_NAMESPACE
