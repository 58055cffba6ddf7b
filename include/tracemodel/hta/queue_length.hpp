// tracemodel/hta — HTA's queue length and memory bandwidth counters (docs/hta-rules.md, "Queue
// length" and "Memory bandwidth").
//
//   const auto q = tracemodel::hta::queue_length(frame);       // us
//   const auto bw = tracemodel::hta::memory_bandwidth(frame);
//
// Queue length: the calls named in HTA's list (CUDA runtime and driver launches and async copies
// and sets, HIP's, MTIA's) that have a partner, and the work whose correlation one of them has;
// streams keyed by stream alone; microseconds; the changes in the order pandas' sort leaves them
// (the calls' changes, then the work's, sorted by time with NumPy's introsort).
// Memory bandwidth: HTA's augmented counter: per memory kind, the running sum of the
// `memory bandwidth (GB/s)` the device profiler states for each copy or set while it runs (a
// duration of 0 counts as one unit), the ups and then the downs sorted by time with NumPy's
// unstable sort and summed in that order (as doubles: which side of 0 a sum's residue falls on
// decides whether the step is a sample of the summary).
#pragma once

#include <algorithm>
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "tracemodel/algo/measure.hpp"
#include "tracemodel/algo/queue_length.hpp"
#include "tracemodel/config.hpp"
#include "tracemodel/hta/frame.hpp"
#include "tracemodel/hta/numpy.hpp"

TRACEMODEL_BEGIN_NAMESPACE
namespace hta {

/// HTA's queue changes in the order its sort leaves them, each with its row of `f`.
[[nodiscard]] inline tracemodel::detail::scratch_vector<
    std::pair<tracemodel::detail::queue_change, std::size_t>>
queue_changes(const frame& f) {
  using change = std::pair<tracemodel::detail::queue_change, std::size_t>;
  auto launched = [](const row& r) {
    // HTA: index_correlation > 0 (a partner; the first record of a file is never one)
    return r.partner >= 0 && (r.flags & flag::queued) != 0;
  };
  const auto n = static_cast<std::size_t>(std::count_if(f.rows.begin(), f.rows.end(), launched));
  tracemodel::detail::scratch_vector<change> launches, starts;
  tracemodel::detail::scratch_vector<std::int64_t> ids;
  launches.reserve(2 * n);
  starts.reserve(n);
  ids.reserve(n);
  for (std::size_t k = 0; k < f.rows.size(); ++k) {
    const row& r = f.rows[k];
    if (!launched(r)) continue;
    const row& g = f.rows[static_cast<std::size_t>(r.partner)];
    launches.push_back({{-1, g.stream, r.ts, +1}, k});
    ids.push_back(r.correlation);
  }
  std::sort(ids.begin(), ids.end());
  for (std::size_t k = 0; k < f.rows.size(); ++k) {
    const row& r = f.rows[k];
    if (r.stream != -1 && std::binary_search(ids.begin(), ids.end(), r.correlation))
      starts.push_back({{-1, r.stream, r.ts, -1}, k});
  }
  launches.insert(launches.end(), starts.begin(), starts.end());  // HTA's concat order
  std::vector<std::int64_t> ts;                                   // (numpy_argsort's argument)
  ts.reserve(launches.size());
  for (const auto& c : launches) ts.push_back(c.first.ts);
  tracemodel::detail::scratch_vector<change> sorted;  // as pandas' sort_values
  sorted.reserve(launches.size());
  for (const std::size_t k : numpy_argsort(ts)) sorted.push_back(launches[k]);
  return sorted;
}

struct queue_length_options {
  std::int64_t full = 1024;
};

[[nodiscard]] inline row_list<stream_queue> queue_length(const frame& f,
                                                         const queue_length_options& o = {}) {
  const auto changes = queue_changes(f);
  tracemodel::detail::scratch_vector<tracemodel::detail::queue_change> sorted;
  sorted.reserve(changes.size());
  for (const auto& c : changes) sorted.push_back(c.first);
  return tracemodel::detail::queues_of(std::move(sorted), o.full);
}

[[nodiscard]] inline row_list<memory_bandwidth_series> memory_bandwidth(const frame& f) {
  std::vector<tracemodel::detail::bw_change> ups, downs;
  for (const row& r : f.rows) {
    if (r.stream == -1) continue;
    if (r.cls != kernel_class::memory) continue;
    const std::string_view n = r.name;
    const std::int64_t dur = r.end - r.ts == 0 ? 1 : r.end - r.ts;
    ups.push_back({r.ts, r.memory_bw, memory_kind(n)});
    downs.push_back({r.ts + dur, -r.memory_bw, memory_kind(n)});
  }
  ups.insert(ups.end(), downs.begin(), downs.end());  // HTA's concat order
  std::vector<std::int64_t> ts;                       // sorted as pandas' sort_values
  ts.reserve(ups.size());
  for (const auto& c : ups) ts.push_back(c.ts);
  std::vector<tracemodel::detail::bw_change> sorted;
  sorted.reserve(ups.size());
  for (const std::size_t k : numpy_argsort(ts)) sorted.push_back(std::move(ups[k]));
  return tracemodel::detail::bandwidth_in_order(sorted);
}

}  // namespace hta
TRACEMODEL_END_NAMESPACE
