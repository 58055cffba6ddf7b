// The Chrome-trace reader for the default schema, instantiated once: the project's own programs
// (tests, examples, the `tracemodel` program) link this unit and take the reader from it
// (TRACEMODEL_READER_COMPILED makes formats/chrome_trace_reader.hpp declare the instantiation
// extern), instead of compiling the whole reader in each of their units. The library itself
// stays header-only: a program that does not define the macro compiles the reader where it
// uses it.
#include <tracemodel/formats/chrome_trace_reader.hpp>

TRACEMODEL_BEGIN_NAMESPACE
template class detail::chrome_reader<default_schema>;
TRACEMODEL_END_NAMESPACE
