// libFuzzer target for the analysis of tables made from bytes (preset `fuzz`, clang): each input
// becomes a table (fuzz::table_of: ops, backward ops, wrappers, launches, device activities,
// flows, times out of order, missing and negative durations), which every way of analysing it
// must analyse exactly as the three public steps do (fuzz::same_every_way).
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "analyze_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (fuzz::same_every_way(fuzz::table_of(data, size)) == fuzz::analysis_outcome::differs)
    std::abort();
  return 0;
}
