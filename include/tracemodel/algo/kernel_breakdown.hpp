// tracemodel/algo — device time per kernel name, within each class.
//
//   auto rows = tracemodel::kernel_breakdown(table);                      // exact
//   auto hta = tracemodel::kernel_breakdown(table, tracemodel::hta_kernel_breakdown{});
//
// Per class (computation, communication, memory; synchronization is left out) and per name:
// count, sum, min, max, mean and sample standard deviation (0 for one kernel) of the durations.
// The `top` names of a class by summed time keep their rows; the others share one row named
// "others". Rows are ordered by class name, then name (as HTA orders them).
//  - `exact_kernel_breakdown` (default): the exact policy's intervals (device_time.hpp), and an
//    "others" row whose statistics are those of its kernels' durations.
//  - `hta_kernel_breakdown`: HTA's intervals and its rule (hta-analyses.md, 5.2), only when a
//    class has more than `top` names: names past the 80% quantile of the cumulative sums (taken
//    over rank positions) or past `top` become "others", and every row's statistics are then
//    those of the per-name totals (so a kept name has min = max = mean = sum, and "others"
//    holds the statistics of its names' totals).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tracemodel/algo/device_time.hpp"
#include "tracemodel/algo/hta_frame.hpp"
#include "tracemodel/config.hpp"
#include "tracemodel/model/table.hpp"

TRACEMODEL_BEGIN_NAMESPACE

struct kernel_row {
  std::string name;
  kernel_class cls = kernel_class::computation;
  std::uint64_t count = 0;
  std::int64_t sum = 0, min = 0, max = 0;
  double mean = 0, std = 0;
};

namespace detail {
/// Statistics of `v` into a row (std 0 for fewer than two values).
inline void fill_stats(kernel_row& r, std::span<const std::int64_t> v) {
  r.count = v.size();
  r.sum = 0;
  r.min = v.empty() ? 0 : v.front();
  r.max = r.min;
  for (const auto x : v) {
    r.sum += x;
    r.min = std::min(r.min, x);
    r.max = std::max(r.max, x);
  }
  r.mean = v.empty() ? 0 : static_cast<double>(r.sum) / static_cast<double>(v.size());
  r.std = 0;
  if (v.size() > 1) {
    double sq = 0;
    for (const auto x : v)
      sq += (static_cast<double>(x) - r.mean) * (static_cast<double>(x) - r.mean);
    r.std = std::sqrt(sq / static_cast<double>(v.size() - 1));
  }
}

/// Rows per name of (name, duration) pairs, the `top` names by summed time kept and the rest
/// one "others" row; `hta` chooses HTA's rule (see the header comment). Ordered by sum.
inline std::vector<kernel_row> name_rows(
    std::span<const std::pair<std::string_view, std::int64_t>> items, std::size_t top, bool hta) {
  // Names are mostly views of one interned string each: grouped by their characters' address
  // first, then the groups of equal text joined.
  std::unordered_map<std::string_view, scratch_vector<std::int64_t>, same_view, same_view>
      by_address;
  for (const auto& [name, d] : items) by_address[name].push_back(d);
  std::map<std::string_view, scratch_vector<std::int64_t>> by_name;
  for (auto& [view, durations] : by_address) {
    auto& v = by_name[view];
    if (v.empty())
      v = std::move(durations);
    else
      v.insert(v.end(), durations.begin(), durations.end());
  }
  std::vector<kernel_row> rows;
  for (const auto& [name, durations] : by_name) {
    kernel_row r;
    r.name = std::string(name);
    fill_stats(r, durations);
    rows.push_back(std::move(r));
  }
  std::stable_sort(rows.begin(), rows.end(),
                   [](const kernel_row& a, const kernel_row& b) { return a.sum > b.sum; });
  if (rows.size() <= top) return rows;
  std::vector<bool> other(rows.size(), false);
  for (std::size_t k = top; k < rows.size(); ++k) other[k] = true;
  if (hta) {  // past the 80% quantile of the cumulative sums, by rank position
    std::vector<double> cum(rows.size());
    double run = 0;
    for (std::size_t k = 0; k < rows.size(); ++k) cum[k] = run += static_cast<double>(rows[k].sum);
    const double h = 0.8 * static_cast<double>(rows.size() - 1);
    const auto lo = static_cast<std::size_t>(std::floor(h));
    const std::size_t hi = std::min(lo + 1, rows.size() - 1);
    const double q = cum[lo] + (h - static_cast<double>(lo)) * (cum[hi] - cum[lo]);
    for (std::size_t k = 0; k < rows.size(); ++k)
      if (cum[k] > q) other[k] = true;
  }
  std::vector<kernel_row> kept;
  scratch_vector<std::int64_t> other_values;  // HTA: the names' totals; else every duration
  for (std::size_t k = 0; k < rows.size(); ++k) {
    if (!other[k]) {
      if (hta) {
        const std::int64_t total = rows[k].sum;  // (the row's own sum is reset first)
        fill_stats(rows[k], std::span<const std::int64_t>(&total, 1));
      }
      kept.push_back(std::move(rows[k]));
    } else if (hta) {
      other_values.push_back(rows[k].sum);
    } else {
      const auto& v = by_name[rows[k].name];
      other_values.insert(other_values.end(), v.begin(), v.end());
    }
  }
  kernel_row others;
  others.name = "others";
  fill_stats(others, other_values);
  kept.push_back(std::move(others));
  return kept;
}

/// Rows per class and name of the intervals (each with `start`, `end` and `cls`; `name_of` gives
/// its name), ordered by class name, then name.
template <class Intervals, class NameOf>
std::vector<kernel_row> kernel_rows(const Intervals& iv, NameOf name_of, std::size_t top,
                                    bool hta) {
  std::vector<kernel_row> out;
  for (int c = 0; c < 3; ++c) {
    const auto cls = static_cast<kernel_class>(c);
    table_vector<std::pair<std::string_view, std::int64_t>> items;
    items.reserve(static_cast<std::size_t>(
        std::count_if(iv.begin(), iv.end(), [&](const auto& d) { return d.cls == cls; })));
    for (const auto& d : iv)
      if (d.cls == cls) items.emplace_back(name_of(d), d.end - d.start);
    for (kernel_row& r : name_rows(items, top, hta)) {
      r.cls = cls;
      out.push_back(std::move(r));
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const kernel_row& a, const kernel_row& b) {
    const std::string_view ca = to_string(a.cls), cb = to_string(b.cls);
    return ca != cb ? ca < cb : a.name < b.name;
  });
  return out;
}
}  // namespace detail

struct exact_kernel_breakdown {
  std::size_t top = 10;
  exact_device_time intervals{};

  template <class Schema>
  [[nodiscard]] std::vector<kernel_row> operator()(const basic_event_table<Schema>& t) const {
    return (*this)(t, device_view(t, intervals.classifier));
  }
  /// From a view made already (with the classifier of `intervals`).
  template <class Schema>
  [[nodiscard]] std::vector<kernel_row> operator()(const basic_event_table<Schema>& t,
                                                   const device_view& v) const {
    return detail::kernel_rows(
        v.work, [&](const device_work& w) { return t.strings.view(w.name); }, top, false);
  }
};

struct hta_kernel_breakdown {
  std::size_t top = 10;  ///< HTA's `num_kernels`
  bool drop_last_step = false;

  template <class Schema>
  [[nodiscard]] std::vector<kernel_row> operator()(const basic_event_table<Schema>& t) const {
    return (*this)(t, hta_frame(t, drop_last_step));
  }
  template <class Schema>
  [[nodiscard]] std::vector<kernel_row> operator()(const basic_event_table<Schema>& t,
                                                   const hta_frame& f) const {
    return from_intervals(t, hta_device_time::intervals(t, f));
  }
  /// From the frame's device intervals, made already (`hta_device_time::intervals`).
  template <class Schema>
  [[nodiscard]] std::vector<kernel_row> from_intervals(const basic_event_table<Schema>& t,
                                                       std::span<const device_interval> iv) const {
    return detail::kernel_rows(
        iv, [&](const device_interval& d) { return t.name(t.events[d.event]); }, top, true);
  }
};

template <class Schema, class Policy = exact_kernel_breakdown>
[[nodiscard]] std::vector<kernel_row> kernel_breakdown(const basic_event_table<Schema>& t,
                                                       const Policy& policy = {}) {
  return policy(t);
}

TRACEMODEL_END_NAMESPACE
