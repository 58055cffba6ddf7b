// libFuzzer target for a crash file's recovery (collect/crash_recover.hpp; preset `fuzz`, clang).
//
// Any bytes must either be rejected with tracemodel::input_error or recovered into a table whose
// events are what the counts say. Start it from a recorder's file in its corpus (the crash tests'
// child writes one); the crash tests cut and change such a file on every run (tests/crash).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include <tracemodel/collect/crash_recover.hpp>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const tracemodel::recovered_trace r =
        tracemodel::recover_crash_bytes(std::span(reinterpret_cast<const char*>(data), size));
    if (r.table.size() != r.counts.ops + r.counts.other) std::abort();
  } catch (const tracemodel::input_error&) {
  }
  return 0;
}
