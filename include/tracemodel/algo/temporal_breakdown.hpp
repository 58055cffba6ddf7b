// tracemodel/algo — the temporal breakdown of one rank's device time.
//
//   const tracemodel::temporal_breakdown_row b = tracemodel::temporal_breakdown(table);  // ns
//   const auto same = tracemodel::temporal_breakdown(tracemodel::device_intervals(table));
//
// Over the merged device intervals of the rank (every stream and device together), from the
// first start to the last end (`kernel_time`): `idle` is the gaps between them, `compute` the
// merged time of computation intervals, and `non_compute` the rest, the time when only
// communication, copies, sets or synchronization run (computation wins where they overlap).
// A rank without device work gives zeros. From a table, nanoseconds; from intervals, their
// unit. The percentages are rounded to two decimals (as Python's round() rounds).
#pragma once

#include <charconv>
#include <cstdint>
#include <cstdio>
#include <span>
#include <vector>

#include "tracemodel/algo/device_time.hpp"
#include "tracemodel/config.hpp"

TRACEMODEL_BEGIN_NAMESPACE

struct temporal_breakdown_row {
  std::int64_t idle = 0, compute = 0, non_compute = 0, kernel_time = 0;
  double idle_pctg = 0, compute_pctg = 0, non_compute_pctg = 0;
  bool any = false;  ///< the rank has device work
};

namespace detail {
/// `x` rounded to `digits` decimals as Python's round() does (from the double's exact value,
/// ties to even).
[[nodiscard]] inline double round_decimals(double x, int digits) {
  char buf[64];
  const int n = std::snprintf(buf, sizeof buf, "%.*f", digits, x);
  double d = 0;
  std::from_chars(buf, buf + n, d);
  return d;
}
[[nodiscard]] inline double percent_of(std::int64_t x, std::int64_t whole, int digits) {
  return round_decimals(100.0 * static_cast<double>(x) / static_cast<double>(whole), digits);
}
}  // namespace detail

[[nodiscard]] inline temporal_breakdown_row temporal_breakdown(
    std::span<const device_interval> iv) {
  temporal_breakdown_row r;
  const auto all = merge_intervals(iv, [](const device_interval&) { return true; });
  if (all.empty()) return r;
  r.any = true;
  std::int64_t busy = 0, compute = 0;
  for (const span& s : all) busy += s.end - s.start;
  for (const span& s : merge_intervals(
           iv, [](const device_interval& d) { return d.cls == kernel_class::computation; }))
    compute += s.end - s.start;
  r.kernel_time = all.back().end - all.front().start;
  r.idle = r.kernel_time - busy;
  r.compute = compute;
  r.non_compute = r.kernel_time - compute - r.idle;
  if (r.kernel_time != 0) {
    r.idle_pctg = detail::percent_of(r.idle, r.kernel_time, 2);
    r.compute_pctg = detail::percent_of(r.compute, r.kernel_time, 2);
    r.non_compute_pctg = detail::percent_of(r.non_compute, r.kernel_time, 2);
  }
  return r;
}

/// The breakdown of `t`'s device intervals.
template <class Schema>
[[nodiscard]] temporal_breakdown_row temporal_breakdown(const basic_event_table<Schema>& t,
                                                        const device_time_options& o = {}) {
  return temporal_breakdown(device_intervals(t, o));
}

TRACEMODEL_END_NAMESPACE
