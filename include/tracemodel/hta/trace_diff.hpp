// tracemodel/hta — HTA's `compare_traces` (docs/hta-rules.md, "Trace diff").
//
//   const tracemodel::hta::frame f(table);                        // without the last-step filter
//   const auto totals = tracemodel::hta::step_totals_of(f);       // us
//
// algo/trace_diff.hpp's totals on HTA's frame, as HTA's trace diff reads it: whole
// microseconds as it rounds them, the host the rows with `stream == -1` and the device those
// with any other stream; the step of a host row (and of a `cpu_op` with `stream == 0`) the
// `ProfilerStep` whose [start, end) holds its start (the last in the frame's order when several
// do), of a device row its correlation partner's, other rows in none. The comparison itself
// (`compare_totals`, `ops_diff`) is algo/'s.
#pragma once

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <optional>
#include <vector>

#include "tracemodel/algo/trace_diff.hpp"
#include "tracemodel/config.hpp"
#include "tracemodel/hta/frame.hpp"

TRACEMODEL_BEGIN_NAMESPACE
namespace hta {

/// The step numbers the frame names, in order.
[[nodiscard]] inline std::vector<std::int64_t> trace_steps(const frame& f) {
  std::vector<std::int64_t> out;
  for (const row& r : f.rows)
    if (const auto n = tracemodel::detail::step_number(r.name)) out.push_back(*n);
  return tracemodel::detail::sorted_unique(std::move(out));
}

/// Each row's step as HTA assigns it (empty for -1 and NaN).
[[nodiscard]] inline std::vector<std::optional<std::int64_t>> iteration_of_rows(const frame& f) {
  struct step {
    std::int64_t ts, end, number;
  };
  std::vector<step> steps;  // in frame order
  for (const row& r : f.rows)
    if (const auto n = tracemodel::detail::step_number(r.name)) steps.push_back({r.ts, r.end, *n});
  std::vector<std::optional<std::int64_t>> out(f.rows.size());  // -1 and NaN: none
  // HTA asks every step; the last in the frame that holds `ts` wins. When no two steps
  // overlap, at most one holds it: found by a binary search over the steps by start.
  std::vector<step> by_start = steps;
  std::stable_sort(by_start.begin(), by_start.end(),
                   [](const step& a, const step& b) { return a.ts < b.ts; });
  bool disjoint = true;
  for (std::size_t k = 0; k + 1 < by_start.size(); ++k)
    disjoint = disjoint && by_start[k].end <= by_start[k + 1].ts;
  auto host_step = [&](std::int64_t ts) -> std::optional<std::int64_t> {
    std::optional<std::int64_t> found;
    if (disjoint) {
      auto it = std::upper_bound(by_start.begin(), by_start.end(), ts,
                                 [](std::int64_t x, const step& s) { return x < s.ts; });
      if (it != by_start.begin() && ts < std::prev(it)->end) found = std::prev(it)->number;
      return found;
    }
    for (const step& s : steps)
      if (s.ts <= ts && ts < s.end) found = s.number;
    return found;
  };
  for (std::size_t k = 0; k < f.rows.size(); ++k) {
    const row& r = f.rows[k];
    if (r.stream < 0 || (r.stream == 0 && r.cat == "cpu_op")) out[k] = host_step(r.ts);
  }
  for (std::size_t k = 0; k < f.rows.size(); ++k) {
    const row& r = f.rows[k];
    if (r.stream > 0 && r.partner >= 0) out[k] = out[static_cast<std::size_t>(r.partner)];
  }
  return out;
}

/// Every step's totals and the whole frame's (see above).
[[nodiscard]] inline step_totals step_totals_of(const frame& f, bool short_names = false) {
  const std::vector<std::optional<std::int64_t>> it = iteration_of_rows(f);
  tracemodel::detail::totals_maker make(short_names);
  for (std::size_t k = 0; k < f.rows.size(); ++k) {
    const row& r = f.rows[k];
    make.add(r.name, r.end - r.ts, it[k], r.stream == -1);
  }
  return std::move(make.out);
}

/// A side's totals: the rows of `t`'s frame that `s` selects.
template <class Schema>
[[nodiscard]] op_totals op_totals_of(const basic_event_table<Schema>& t,
                                     const diff_selection& s = {}) {
  return step_totals_of(frame(t), s.short_names).select(s);
}

}  // namespace hta
TRACEMODEL_END_NAMESPACE
