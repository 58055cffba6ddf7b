// tracemodel/algo — time per user annotation, on the GPU or on the CPU.
//
//   auto gpu = tracemodel::annotation_breakdown(table);                  // GPU annotations, ns
//   auto cpu = tracemodel::annotation_breakdown(table, {.on_gpu = false}); // record_function
//   auto hta = tracemodel::annotation_breakdown(table, tracemodel::hta_annotation_breakdown{});
//
// Per annotation name: count, sum, min, max, mean and sample standard deviation of the
// annotations' durations, the `top` names by summed time kept and the rest as "others", rows
// ordered by name. On the GPU: the `gpu_user_annotation` spans a device profiler draws over the
// work an annotation launched; on the CPU: the user annotations themselves (`record_function`,
// `ProfilerStep#N` among them).
//  - `exact_annotation_breakdown` (default): nanoseconds, every annotation of the table.
//  - `hta_annotation_breakdown`: HTA's (hta-analyses.md, 5.3): its frame's rows of category
//    `gpu_user_annotation` (or `user_annotation`), microseconds, its 1,000 names and its rule for
//    "others" (kernel_breakdown.hpp).
#pragma once

#include <algorithm>
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "tracemodel/algo/device_time.hpp"
#include "tracemodel/algo/hta_frame.hpp"
#include "tracemodel/algo/kernel_breakdown.hpp"
#include "tracemodel/config.hpp"
#include "tracemodel/model/table.hpp"

TRACEMODEL_BEGIN_NAMESPACE

namespace detail {
inline void by_name(std::vector<kernel_row>& rows) {
  std::stable_sort(rows.begin(), rows.end(),
                   [](const kernel_row& a, const kernel_row& b) { return a.name < b.name; });
}
}  // namespace detail

struct exact_annotation_breakdown {
  bool on_gpu = true;
  std::size_t top = 1000;

  template <class Schema>
  [[nodiscard]] std::vector<kernel_row> operator()(const basic_event_table<Schema>& t) const {
    if (on_gpu) return (*this)(t, device_view(t));
    std::vector<event_index> cpu;  // the host's annotations
    for (event_index i = 0; i < t.size(); ++i)
      if (t.events[i].instant_scope == 0 &&
          t.activity(t.events[i]) == activity_type::user_annotation)
        cpu.push_back(i);
    return rows_of(t, cpu);
  }
  /// The same with the GPU's annotations taken from a view made already.
  template <class Schema>
  [[nodiscard]] std::vector<kernel_row> operator()(const basic_event_table<Schema>& t,
                                                   const device_view& v) const {
    if (!on_gpu) return (*this)(t);
    return rows_of(t, v.gpu_annotations);
  }

 private:
  template <class Schema, class Events>
  std::vector<kernel_row> rows_of(const basic_event_table<Schema>& t, const Events& events) const {
    std::vector<std::pair<std::string_view, std::int64_t>> items;
    for (const event_index i : events) {
      const auto& e = t.events[i];
      const std::int64_t end = e.end_ns();
      if (end == no_end_ns) continue;
      items.emplace_back(t.name(e), end - e.start_ns);
    }
    std::vector<kernel_row> rows = detail::name_rows(items, top, false);
    detail::by_name(rows);
    return rows;
  }
};

struct hta_annotation_breakdown {
  bool on_gpu = true;  ///< HTA's `use_gpu_annotation`
  std::size_t top = 1000;
  bool drop_last_step = false;

  template <class Schema>
  [[nodiscard]] std::vector<kernel_row> operator()(const basic_event_table<Schema>& t) const {
    return (*this)(t, hta_frame(t, drop_last_step));
  }
  template <class Schema>
  [[nodiscard]] std::vector<kernel_row> operator()(
      [[maybe_unused]] const basic_event_table<Schema>& t, const hta_frame& f) const {
    const std::uint8_t want = on_gpu ? hta_flag::gpu_annotation : hta_flag::cpu_annotation;
    std::vector<std::pair<std::string_view, std::int64_t>> items;
    for (const hta_row& r : f.rows) {
      if ((r.flags & want) != 0) items.emplace_back(r.name, r.end - r.ts);
    }
    std::vector<kernel_row> rows = detail::name_rows(items, top, true);
    detail::by_name(rows);
    return rows;
  }
};

template <class Schema, class Policy = exact_annotation_breakdown>
[[nodiscard]] std::vector<kernel_row> annotation_breakdown(const basic_event_table<Schema>& t,
                                                           const Policy& policy = {}) {
  return policy(t);
}

TRACEMODEL_END_NAMESPACE
