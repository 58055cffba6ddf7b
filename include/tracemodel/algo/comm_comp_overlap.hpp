// tracemodel/algo — how much of a rank's communication hides behind computation.
//
//   const std::optional<double> pct = tracemodel::comm_comp_overlap(table);
//   const auto same = tracemodel::comm_comp_overlap(tracemodel::device_intervals(table));
//
// The merged communication time during which computation also runs, as a percentage of the
// merged communication time, rounded to two decimals; empty when the rank has no
// communication.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "tracemodel/algo/device_time.hpp"
#include "tracemodel/algo/temporal_breakdown.hpp"
#include "tracemodel/config.hpp"

TRACEMODEL_BEGIN_NAMESPACE

/// The time two sets of merged spans overlap (each set sorted and disjoint).
[[nodiscard]] inline std::int64_t overlap_of(std::span<const span> a,
                                             std::span<const span> b) noexcept {
  std::int64_t total = 0;
  std::size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const std::int64_t lo = std::max(a[i].start, b[j].start);
    const std::int64_t hi = std::min(a[i].end, b[j].end);
    if (hi > lo) total += hi - lo;
    (a[i].end < b[j].end ? i : j) += 1;
  }
  return total;
}

[[nodiscard]] inline std::optional<double> comm_comp_overlap(std::span<const device_interval> iv) {
  auto of = [&](kernel_class c) {
    return merge_intervals(iv, [c](const device_interval& d) { return d.cls == c; });
  };
  const auto comm = of(kernel_class::communication);
  const auto comp = of(kernel_class::computation);
  std::int64_t comm_time = 0;
  for (const span& s : comm) comm_time += s.end - s.start;
  if (comm.empty() || comm_time == 0) return std::nullopt;
  return detail::percent_of(overlap_of(comm, comp), comm_time, 2);
}

/// The overlap of `t`'s device intervals.
template <class Schema>
[[nodiscard]] std::optional<double> comm_comp_overlap(const basic_event_table<Schema>& t,
                                                      const device_time_options& o = {}) {
  return comm_comp_overlap(device_intervals(t, o));
}

TRACEMODEL_END_NAMESPACE
