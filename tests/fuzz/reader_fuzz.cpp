// libFuzzer target for the Chrome-trace reader (preset `fuzz`, clang).
//
// Any input must either be rejected with tracemodel::input_error or read into a table; a table
// that was read must write a trace that reads back and writes the same bytes again. Inputs it
// once failed on live in tests/data/fuzz/ and are replayed by the formats tests.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "reader_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (fuzz::check_reader(reinterpret_cast<const char*>(data), size) ==
      fuzz::reader_outcome::round_trip_differs)
    std::abort();
  return 0;
}
