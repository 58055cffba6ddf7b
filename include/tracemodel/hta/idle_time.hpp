// tracemodel/hta — HTA's idle time breakdown (docs/hta-rules.md, "Idle time").
//
//   const auto rows = tracemodel::hta::idle_time_breakdown(frame);   // us
//
// algo/idle_time.hpp's rule on HTA's frame: the rows of its idle categories (kernels, copies,
// sets, MTIA's events) with a stream, streams keyed by stream alone, whole microseconds, the
// launching call the row's correlation partner, the threshold 30 (us, HTA's
// `consecutive_kernel_delay`), and the ratio and statistics rounded to two decimals, as HTA
// prints them.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <vector>

#include "tracemodel/algo/idle_time.hpp"
#include "tracemodel/algo/measure.hpp"
#include "tracemodel/algo/temporal_breakdown.hpp"
#include "tracemodel/config.hpp"
#include "tracemodel/hta/frame.hpp"

TRACEMODEL_BEGIN_NAMESPACE
namespace hta {

struct idle_time_options {
  std::int64_t threshold = 30;  ///< us (HTA's `consecutive_kernel_delay`)
};

[[nodiscard]] inline row_list<idle_row> idle_time_breakdown(const frame& f,
                                                            const idle_time_options& o = {}) {
  auto counted = [](const row& r) { return r.stream != -1 && (r.flags & flag::idle_cat) != 0; };
  std::vector<stream_work> work;
  work.reserve(static_cast<std::size_t>(std::count_if(f.rows.begin(), f.rows.end(), counted)));
  for (const row& r : f.rows) {
    if (!counted(r)) continue;
    stream_work w{-1, r.stream, r.ts, r.end, std::nullopt};
    if (r.partner != -1) w.launched = f.rows[static_cast<std::size_t>(r.partner)].ts;
    work.push_back(w);
  }
  row_list<idle_row> rows = tracemodel::idle_time_breakdown(work, o.threshold);
  for (idle_row& r : rows) {  // HTA rounds what it prints to two decimals
    if (r.ratio) r.ratio = tracemodel::detail::round_decimals(*r.ratio, 2);
    for (double* x : {&r.stats.mean, &r.stats.std, &r.stats.min, &r.stats.q25, &r.stats.q50,
                      &r.stats.q75, &r.stats.max})
      if (!std::isnan(*x)) *x = tracemodel::detail::round_decimals(*x, 2);
  }
  return rows;
}

}  // namespace hta
TRACEMODEL_END_NAMESPACE
