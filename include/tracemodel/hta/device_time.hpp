// tracemodel/hta — HTA's device intervals (docs/hta-rules.md, "Device time"): the rows of its
// frame whose `stream` is not -1, a Triton `cpu_op` that carries `stream: 0` included, classed
// by name alone, in HTA's whole microseconds. The breakdowns of algo/ (temporal_breakdown.hpp,
// comm_comp_overlap.hpp, kernel_type_breakdown.hpp) take them as they take exact ones.
//
//   const tracemodel::hta::frame f(table, /*drop_last_step=*/false);
//   const auto b = tracemodel::temporal_breakdown(tracemodel::hta::device_intervals(f));  // us
#pragma once

#include <algorithm>
#include <cstddef>

#include "tracemodel/algo/device_time.hpp"
#include "tracemodel/algo/measure.hpp"
#include "tracemodel/config.hpp"
#include "tracemodel/hta/frame.hpp"

TRACEMODEL_BEGIN_NAMESPACE
namespace hta {

/// HTA's whole microseconds: the unit of its results (`basic_gpu_report<hta::microseconds>`).
struct microseconds {
  static constexpr std::string_view name = "us";
  static constexpr std::int64_t in_ns = 1000;
};

/// The device intervals of `f` (see above), in its order.
[[nodiscard]] inline row_list<device_interval> device_intervals(const frame& f) {
  row_list<device_interval> out;
  out.reserve(static_cast<std::size_t>(
      std::count_if(f.rows.begin(), f.rows.end(), [](const row& r) { return r.stream != -1; })));
  for (const row& r : f.rows)
    if (r.stream != -1) out.push_back({r.ts, r.end, r.cls, r.event, r.stream});
  return out;
}

}  // namespace hta
TRACEMODEL_END_NAMESPACE
