// The property the reader's fuzz target checks, shared with the regression test that replays
// the inputs the fuzzer once failed on (tests/data/fuzz/).
#pragma once

#include <cstddef>
#include <string>

#include <tracemodel/formats/chrome_trace_reader.hpp>
#include <tracemodel/formats/chrome_trace_writer.hpp>

namespace fuzz {

enum class reader_outcome { rejected, round_trip_exact, round_trip_differs };

/// Reads `data`: it must be rejected with input_error, or read into a table that writes a
/// trace which reads back and writes the same bytes again; reading every value through
/// simdjson (no fast paths, no direct path) on the two-thread pipeline must give the same table,
/// or reject it too; the two-thread read through the direct path (stretches cut at guessed
/// element starts) must give the same table or the same error at the same offset. Anything
/// else escapes as an exception or a crash.
inline reader_outcome check_reader(const char* data, std::size_t size) {
  std::string buf(data, size);
  tracemodel::read_options opt;
  opt.batch_bytes = 256;  // many batches even for small inputs
  opt.threads = 1;
  tracemodel::event_table t;
  // Stretches parsed on two threads: the serial read's outcome, exactly.
  std::string serial_outcome, chunked_outcome;
  {
    tracemodel::read_options chunked = opt;
    chunked.threads = 2;
    chunked.parallel_threshold = 0;
    auto outcome_of = [&](const tracemodel::read_options& o) {
      std::string text(data, size);
      try {
        return tracemodel::chrome_trace_string(tracemodel::read_chrome_trace(text, size, o));
      } catch (const tracemodel::input_error& e) {
        return std::string(e.what()) + " @" + std::to_string(e.offset());
      }
    };
    serial_outcome = outcome_of(opt);
    chunked_outcome = outcome_of(chunked);
  }
  if (chunked_outcome != serial_outcome) return reader_outcome::round_trip_differs;
  // Every value through simdjson (no direct path), and the two-thread pipeline: the same
  // table, or the same rejection.
  tracemodel::read_options slow = opt;
  slow.fast_paths = false;
  slow.threads = 2;
  slow.parallel_threshold = 0;
  std::string again(data, size);
  try {
    t = tracemodel::read_chrome_trace(buf, size, opt);
  } catch (const tracemodel::input_error&) {
    // Rejected the other way too. (Not always with the same message: with several faults,
    // which one is named first depends on where batches start, and the direct path starts one
    // at each record it hands to simdjson.)
    try {
      (void)tracemodel::read_chrome_trace(again, size, slow);
    } catch (const tracemodel::input_error&) {
      return reader_outcome::rejected;
    }
    return reader_outcome::round_trip_differs;
  }
  const std::string a = tracemodel::chrome_trace_string(t);
  if (tracemodel::chrome_trace_string(tracemodel::read_chrome_trace(again, size, slow)) != a)
    return reader_outcome::round_trip_differs;
  std::string copy = a;
  const std::string b =
      tracemodel::chrome_trace_string(tracemodel::read_chrome_trace(copy, copy.size(), opt));
  return a == b ? reader_outcome::round_trip_exact : reader_outcome::round_trip_differs;
}

}  // namespace fuzz
