// tracemodel/hta — HTA's kernel breakdown and user annotation breakdowns (docs/hta-rules.md,
// "Kernel breakdown" and "Annotations").
//
//   const auto kernels = tracemodel::hta::kernel_breakdown(frame);            // us
//   const auto gpu = tracemodel::hta::annotation_breakdown(frame);
//   const auto cpu = tracemodel::hta::annotation_breakdown(frame, {.on_gpu = false});
//
// algo/kernel_breakdown.hpp's rows on HTA's frame (its device intervals for kernels; its rows of
// category `gpu_user_annotation`, or `user_annotation`, for annotations), with HTA's rule for
// "others", only when there are more than `top` names: names past the `duration_ratio` quantile
// (80% by default) of the cumulative sums (taken over rank positions) or past `top` become
// "others" (but names that contain a pattern of the annotations' `allowlist`), and every row's
// statistics are then those of the per-name totals (so a kept name has min = max = mean = sum,
// and "others" holds the statistics of its names' totals).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tracemodel/algo/annotation_breakdown.hpp"
#include "tracemodel/algo/kernel_breakdown.hpp"
#include "tracemodel/algo/measure.hpp"
#include "tracemodel/config.hpp"
#include "tracemodel/hta/device_time.hpp"
#include "tracemodel/hta/frame.hpp"

TRACEMODEL_BEGIN_NAMESPACE
namespace hta {

namespace detail {
/// HTA's rows of (name, duration) pairs (see the header comment).
inline row_list<kernel_row> name_rows(
    std::span<const std::pair<std::string_view, std::int64_t>> items, std::size_t top,
    double ratio = 0.8, std::span<const std::string> allowlist = {}) {
  std::vector<tracemodel::detail::named_durations> groups =
      tracemodel::detail::durations_by_name(items);
  row_list<kernel_row> kept;
  if (groups.size() <= top) {
    for (auto& g : groups) kept.push_back(std::move(g.row));
    return kept;
  }
  std::vector<bool> other(groups.size(), false);
  for (std::size_t k = top; k < groups.size(); ++k) other[k] = true;
  std::vector<double> cum(groups.size());  // past the `ratio` quantile of the cumulative sums
  double run = 0;
  for (std::size_t k = 0; k < groups.size(); ++k)
    cum[k] = run += static_cast<double>(groups[k].row.sum);
  const double h = ratio * static_cast<double>(groups.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(h));
  const std::size_t hi = std::min(lo + 1, groups.size() - 1);
  const double q = cum[lo] + (h - static_cast<double>(lo)) * (cum[hi] - cum[lo]);
  for (std::size_t k = 0; k < groups.size(); ++k)
    if (cum[k] > q) other[k] = true;
  for (std::size_t k = 0; k < groups.size(); ++k)  // allowlisted names keep their rows
    for (const std::string& a : allowlist)
      if (groups[k].row.name.find(a) != std::string::npos) other[k] = false;
  tracemodel::detail::scratch_vector<std::int64_t> totals;  // of the names that become "others"
  for (std::size_t k = 0; k < groups.size(); ++k) {
    const std::int64_t total = groups[k].row.sum;
    if (other[k]) {
      totals.push_back(total);
      continue;
    }
    tracemodel::detail::kernel_stats(groups[k].row, std::span<const std::int64_t>(&total, 1));
    kept.push_back(std::move(groups[k].row));
  }
  kernel_row others;
  others.name = "others";
  tracemodel::detail::kernel_stats(others, totals);
  kept.push_back(std::move(others));
  return kept;
}
}  // namespace detail

struct kernel_breakdown_options {
  std::size_t top = 10;         ///< HTA's `num_kernels`
  double duration_ratio = 0.8;  ///< HTA's `duration_ratio`
};

/// HTA's kernel breakdown of `f` (see above).
[[nodiscard]] inline row_list<kernel_row> kernel_breakdown(const frame& f,
                                                           const kernel_breakdown_options& o = {}) {
  const row_list<device_interval> iv = device_intervals(f);
  std::vector<std::string_view> names(f.rows.size());  // by the interval's place in the frame
  std::size_t k = 0;
  for (const row& r : f.rows)
    if (r.stream != -1) names[k++] = r.name;
  const device_interval* first = iv.data();
  return tracemodel::detail::rows_per_class(
      iv, [&](const device_interval& d) { return names[static_cast<std::size_t>(&d - first)]; },
      [&](std::span<const std::pair<std::string_view, std::int64_t>> items) {
        return detail::name_rows(items, o.top, o.duration_ratio);
      });
}

struct annotation_breakdown_options {
  bool on_gpu = true;  ///< HTA's `use_gpu_annotation`
  std::size_t top = 1000;
  double duration_ratio = 0.8;
  std::vector<std::string> allowlist{};  ///< names containing one of these never become "others"
};

/// HTA's user annotation breakdown of `f` (see above).
[[nodiscard]] inline row_list<kernel_row> annotation_breakdown(
    const frame& f, const annotation_breakdown_options& o = {}) {
  const std::uint8_t want = o.on_gpu ? flag::gpu_annotation : flag::cpu_annotation;
  std::vector<std::pair<std::string_view, std::int64_t>> items;
  for (const row& r : f.rows)
    if ((r.flags & want) != 0) items.emplace_back(r.name, r.end - r.ts);
  row_list<kernel_row> rows = detail::name_rows(items, o.top, o.duration_ratio, o.allowlist);
  tracemodel::detail::by_name(rows);
  return rows;
}

}  // namespace hta
TRACEMODEL_END_NAMESPACE
