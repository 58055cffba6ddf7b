// tracemodel/algo — time per user annotation, on the GPU or on the CPU.
//
//   auto gpu = tracemodel::annotation_breakdown(table);                    // GPU annotations, ns
//   auto cpu = tracemodel::annotation_breakdown(table, {.on_gpu = false});  // record_function
//
// Per annotation name: count, sum, min, max, mean and sample standard deviation of the
// annotations' durations, the `top` names by summed time kept and the rest as "others"
// (kernel_breakdown.hpp), rows ordered by name. On the GPU: the `gpu_user_annotation` spans a
// device profiler draws over the work an annotation launched; on the CPU: the user annotations
// themselves (`record_function`, `ProfilerStep#N` among them). Every annotation of the table,
// nanoseconds.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "tracemodel/algo/device_time.hpp"
#include "tracemodel/algo/kernel_breakdown.hpp"
#include "tracemodel/algo/measure.hpp"
#include "tracemodel/config.hpp"
#include "tracemodel/model/table.hpp"

TRACEMODEL_BEGIN_NAMESPACE

namespace detail {
inline void by_name(row_list<kernel_row>& rows) {
  std::stable_sort(rows.begin(), rows.end(),
                   [](const kernel_row& a, const kernel_row& b) { return a.name < b.name; });
}
/// The rows of annotations `events` of `t` (see above).
template <class Schema, class Events>
row_list<kernel_row> annotation_rows(const basic_event_table<Schema>& t, const Events& events,
                                     std::size_t top) {
  std::vector<std::pair<std::string_view, std::int64_t>> items;
  for (const event_index i : events) {
    const auto& e = t.events[i];
    const std::int64_t end = e.end_ns();
    if (end == no_end_ns) continue;
    items.emplace_back(t.name(e), end - e.start_ns);
  }
  row_list<kernel_row> rows = top_names(durations_by_name(items), top);
  by_name(rows);
  return rows;
}
}  // namespace detail

struct annotation_breakdown_options {
  bool on_gpu = true;  ///< the GPU's annotations (else the CPU's)
  std::size_t top = 1000;
};

/// The breakdown, the GPU's annotations taken from a view made already.
template <class Schema>
[[nodiscard]] row_list<kernel_row> annotation_breakdown(const basic_event_table<Schema>& t,
                                                        const device_view& v,
                                                        const annotation_breakdown_options& o) {
  if (o.on_gpu) return detail::annotation_rows(t, v.gpu_annotations, o.top);
  std::vector<event_index> cpu;  // the host's annotations
  for (event_index i = 0; i < t.size(); ++i)
    if (t.events[i].instant_scope == 0 && t.activity(t.events[i]) == activity_type::user_annotation)
      cpu.push_back(i);
  return detail::annotation_rows(t, cpu, o.top);
}
/// The annotation breakdown of `t` (see above).
template <class Schema>
[[nodiscard]] row_list<kernel_row> annotation_breakdown(
    const basic_event_table<Schema>& t, const annotation_breakdown_options& o = {}) {
  if (!o.on_gpu) return annotation_breakdown(t, device_view{}, o);
  return annotation_breakdown(t, device_view(t), o);
}

TRACEMODEL_END_NAMESPACE
