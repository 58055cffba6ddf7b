// tracemodel/hta — HTA's CUDA kernel launch statistics (docs/hta-rules.md, "Launch statistics").
//
//   const auto rows = tracemodel::hta::launch_stats(frame);   // us
//
// algo/launch_stats.hpp's rows on HTA's frame: only calls named `cudaLaunchKernel`,
// `cudaLaunchKernelExC`, `cudaMemcpyAsync`, `cudaMemsetAsync` or MTIA's
// `runFunction - job_prep_and_submit_for_execution` (so no `cuLaunchKernel`, no HIP), the
// frame's rows with `stream == -1` the calls and those with another stream the work,
// microseconds, the delay clamped at 0.
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>

#include "tracemodel/algo/launch_stats.hpp"
#include "tracemodel/algo/measure.hpp"
#include "tracemodel/config.hpp"
#include "tracemodel/hta/frame.hpp"

TRACEMODEL_BEGIN_NAMESPACE
namespace hta {

struct launch_stats_options {
  std::int64_t runtime_cutoff = 50;  ///< us
  std::int64_t delay_cutoff = 100;   ///< us
  bool include_memory_events = true;
};

[[nodiscard]] inline row_list<launch_row> launch_stats(const frame& f,
                                                       const launch_stats_options& o = {}) {
  auto named = [&](const row& r) {
    return (r.flags & flag::launch) != 0 ||
           (o.include_memory_events && (r.flags & flag::launch_copy) != 0);
  };
  tracemodel::detail::scratch_vector<std::int64_t> launches;  // correlation ids of the calls
  launches.reserve(static_cast<std::size_t>(std::count_if(f.rows.begin(), f.rows.end(), named)));
  for (const row& r : f.rows)
    if (named(r)) launches.push_back(r.correlation);
  row_list<launch_row> rows;
  auto add = [&](const row& c, const row& g) {
    launch_row r;
    r.correlation = static_cast<std::uint64_t>(c.correlation);
    r.cpu_duration = c.end - c.ts;
    r.gpu_duration = g.end - g.ts;
    r.launch_delay = std::max<std::int64_t>(0, g.ts - c.ts - (c.end - c.ts));
    flag_launch(r, o.runtime_cutoff, o.delay_cutoff);
    rows.push_back(r);
  };
  // Each call joined with every device row of its correlation id, those in the frame's order.
  const auto [lo, hi] = std::minmax_element(launches.begin(), launches.end());
  if (!launches.empty() && *lo >= 0 &&
      static_cast<std::uint64_t>(*hi) < 4 * launches.size() + (std::uint64_t{1} << 20)) {
    // Ids as a profiler hands them out (small, dense): the device rows bucketed by id.
    const auto ids = static_cast<std::size_t>(*hi) + 1;
    tracemodel::detail::scratch_vector<std::uint32_t> first(ids + 1, 0);
    tracemodel::detail::scratch_vector<unsigned char> is_launched(ids, 0);
    for (const std::int64_t c : launches) is_launched[static_cast<std::size_t>(c)] = 1;
    auto launched = [&](std::int64_t c) {
      return c >= 0 && static_cast<std::size_t>(c) < ids &&
             is_launched[static_cast<std::size_t>(c)];
    };
    for (const row& r : f.rows)
      if (r.stream != -1 && launched(r.correlation))
        ++first[static_cast<std::size_t>(r.correlation) + 1];
    for (std::size_t k = 0; k < ids; ++k) first[k + 1] += first[k];
    tracemodel::detail::scratch_vector<const row*> gpu(first[ids]);
    tracemodel::detail::scratch_vector<std::uint32_t> fill(first.begin(), first.end() - 1);
    for (const row& r : f.rows)
      if (r.stream != -1 && launched(r.correlation))
        gpu[fill[static_cast<std::size_t>(r.correlation)]++] = &r;
    rows.reserve(gpu.size());
    for (const row& c : f.rows) {
      if (c.stream != -1 || !launched(c.correlation)) continue;
      const auto id = static_cast<std::size_t>(c.correlation);
      for (std::uint32_t k = first[id]; k < first[id + 1]; ++k) add(c, *gpu[k]);
    }
    return rows;
  }
  std::sort(launches.begin(), launches.end());
  auto launched = [&](std::int64_t c) {
    return std::binary_search(launches.begin(), launches.end(), c);
  };
  tracemodel::detail::scratch_vector<std::pair<std::int64_t, const row*>> gpu;
  for (const row& r : f.rows)
    if (r.stream != -1 && launched(r.correlation)) gpu.emplace_back(r.correlation, &r);
  std::stable_sort(gpu.begin(), gpu.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  rows.reserve(gpu.size());
  for (const row& c : f.rows) {
    if (c.stream != -1 || !launched(c.correlation)) continue;
    const auto [from, to] = std::equal_range(
        gpu.begin(), gpu.end(), std::pair<std::int64_t, const row*>{c.correlation, nullptr},
        [](const auto& a, const auto& b) { return a.first < b.first; });
    for (auto it = from; it != to; ++it) add(c, *it->second);
  }
  return rows;
}

}  // namespace hta
TRACEMODEL_END_NAMESPACE
