// tracemodel/algo — device time per kernel name, within each class.
//
//   auto rows = tracemodel::kernel_breakdown(table);                    // ns, the top 10 names
//   auto more = tracemodel::kernel_breakdown(table, {.top = 50});
//
// Per class (computation, communication, memory; synchronization is left out) and per name:
// count, sum, min, max, mean and sample standard deviation (0 for one kernel) of the durations.
// The `top` names of a class by summed time keep their rows; the others share one row named
// "others", whose statistics are those of its kernels' durations. Rows are ordered by class
// name, then name. The building blocks (`detail::durations_by_name`, `detail::kernel_stats`,
// `detail::rows_per_class`) serve other rules of which names are kept.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tracemodel/algo/device_time.hpp"
#include "tracemodel/algo/measure.hpp"
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
inline void kernel_stats(kernel_row& r, std::span<const std::int64_t> v) {
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

/// The durations of each name, and the row of their statistics.
struct named_durations {
  kernel_row row;
  scratch_vector<std::int64_t> durations;
};

/// (name, duration) pairs grouped by name, largest summed time first (equal sums by name).
inline std::vector<named_durations> durations_by_name(
    std::span<const std::pair<std::string_view, std::int64_t>> items) {
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
  std::vector<named_durations> out;
  out.reserve(by_name.size());
  for (auto& [name, durations] : by_name) {
    named_durations& g = out.emplace_back();
    g.row.name = std::string(name);
    kernel_stats(g.row, durations);
    g.durations = std::move(durations);
  }
  std::stable_sort(out.begin(), out.end(), [](const named_durations& a, const named_durations& b) {
    return a.row.sum > b.row.sum;
  });
  return out;
}

/// The rows of the first `top` names, and an "others" row of every duration of the rest when
/// there are more.
inline row_list<kernel_row> top_names(std::vector<named_durations> groups, std::size_t top) {
  row_list<kernel_row> kept;
  if (groups.size() <= top) {
    for (named_durations& g : groups) kept.push_back(std::move(g.row));
    return kept;
  }
  scratch_vector<std::int64_t> other_values;
  for (std::size_t k = 0; k < groups.size(); ++k) {
    if (k < top)
      kept.push_back(std::move(groups[k].row));
    else
      other_values.insert(other_values.end(), groups[k].durations.begin(),
                          groups[k].durations.end());
  }
  kernel_row others;
  others.name = "others";
  kernel_stats(others, other_values);
  kept.push_back(std::move(others));
  return kept;
}

/// Rows per class of the intervals (each with `start`, `end` and `cls`; `name_of` gives its
/// name), each class's rows made by `rows_of(items)` from its (name, duration) pairs, ordered by
/// class name, then name.
template <class Intervals, class NameOf, class RowsOf>
row_list<kernel_row> rows_per_class(const Intervals& iv, NameOf name_of, RowsOf rows_of) {
  row_list<kernel_row> out;
  for (int c = 0; c < 3; ++c) {
    const auto cls = static_cast<kernel_class>(c);
    table_vector<std::pair<std::string_view, std::int64_t>> items;
    items.reserve(static_cast<std::size_t>(
        std::count_if(iv.begin(), iv.end(), [&](const auto& d) { return d.cls == cls; })));
    for (const auto& d : iv)
      if (d.cls == cls) items.emplace_back(name_of(d), d.end - d.start);
    for (kernel_row& r :
         rows_of(std::span<const std::pair<std::string_view, std::int64_t>>(items))) {
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

struct kernel_breakdown_options {
  std::size_t top = 10;  ///< names of each class with a row of their own
  kernel_classifier classifier{};
};

/// The breakdown of a view made already (its classes are its classifier's).
template <class Schema>
[[nodiscard]] row_list<kernel_row> kernel_breakdown(const basic_event_table<Schema>& t,
                                                    const device_view& v,
                                                    const kernel_breakdown_options& o) {
  return detail::rows_per_class(
      v.work, [&](const device_work& w) { return t.strings.view(w.name); },
      [&](std::span<const std::pair<std::string_view, std::int64_t>> items) {
        return detail::top_names(detail::durations_by_name(items), o.top);
      });
}
/// The kernel breakdown of `t` (see above).
template <class Schema>
[[nodiscard]] row_list<kernel_row> kernel_breakdown(const basic_event_table<Schema>& t,
                                                    const kernel_breakdown_options& o = {}) {
  return kernel_breakdown(t, device_view(t, o.classifier), o);
}

TRACEMODEL_END_NAMESPACE
