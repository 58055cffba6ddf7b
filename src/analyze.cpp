// The analysis compiled once (CMake's `tracemodel::analysis`): `analyze(t)` with the default
// policies on a table of the default schema. Units of a program built with
// TRACEMODEL_ANALYZE_COMPILED=1 take it from here instead of compiling the engine each.
#include <tracemodel/algo/analyze.hpp>

TRACEMODEL_BEGIN_NAMESPACE
template void detail::run_analysis<pytorch_tree, pytorch_links, pytorch_device_links, analysis,
                                   default_schema>(basic_event_table<default_schema>&, analysis&,
                                                   const thread_options&,
                                                   const detail::engine_options&);
TRACEMODEL_END_NAMESPACE
