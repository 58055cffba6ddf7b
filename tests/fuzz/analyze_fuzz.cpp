// libFuzzer target for the analysis of whatever a trace file holds (preset `fuzz`, clang).
//
// Any input the reader accepts is analysed every way `analyze` offers (one thread or two, the
// replay row by row or in chunks, PyTorch's ties or HTA's) and must give exactly what the three
// public steps give; the analysed table then goes through tensor identities, key averages,
// PyTorch's patterns and the writer (see analyze_check.hpp). Inputs it fails on go to
// tests/data/fuzz-analyze/, which the concurrency tests replay (with the reader's inputs in
// tests/data/fuzz/).
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "analyze_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (fuzz::check_analysis(reinterpret_cast<const char*>(data), size) ==
      fuzz::analysis_outcome::differs)
    std::abort();
  return 0;
}
