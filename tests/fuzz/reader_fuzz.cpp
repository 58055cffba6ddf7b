// libFuzzer target for the Chrome-trace reader (preset `fuzz`, clang).
//
// Any input must either be rejected with tracemodel::input_error or read into a table; a table
// that was read must write a trace that reads back and writes the same bytes again.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include <tracemodel/formats/chrome_trace_reader.hpp>
#include <tracemodel/formats/chrome_trace_writer.hpp>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string buf(reinterpret_cast<const char*>(data), size);
  tracemodel::read_options opt;
  opt.batch_bytes = 256;  // many batches even for small inputs
  tracemodel::event_table t;
  try {
    t = tracemodel::read_chrome_trace(buf, size, opt);
  } catch (const tracemodel::input_error&) {
    return 0;
  }
  const std::string a = tracemodel::chrome_trace_string(t);
  std::string copy = a;
  const std::string b =
      tracemodel::chrome_trace_string(tracemodel::read_chrome_trace(copy, copy.size(), opt));
  if (a != b) std::abort();  // the round trip must be exact
  return 0;
}
