// tracemodel/algo — how long launches take and wait: each host call that launched device work,
// with the work it launched.
//
//   auto rows = tracemodel::launch_stats(table);                           // exact, ns
//   auto hta = tracemodel::launch_stats(table, tracemodel::hta_launch_stats{});
//
// One row per (call, device work) pair that share a correlation id: the call's duration, the
// work's duration, and the launch delay, from the end of the call to the start of the work.
// Rows come in the order of the calls, then of the work. Each row is flagged as HTA's plots
// flag them: a short kernel (the call took at most `runtime_cutoff` and longer than the work),
// a runtime outlier (the call took longer than `runtime_cutoff`), a delay outlier (the delay is
// longer than `delay_cutoff`).
//  - `exact_launch_stats` (default): every runtime or driver call (of any device API) that has a
//    device activity with its correlation id, as the host/device linker pairs them; nanoseconds;
//    the delay as it is (negative when the work started before the call returned).
//  - `hta_launch_stats`: HTA's (hta-analyses.md, section 7): only calls named
//    `cudaLaunchKernel`, `cudaLaunchKernelExC`, `cudaMemcpyAsync`, `cudaMemsetAsync` or MTIA's
//    `runFunction - job_prep_and_submit_for_execution` (so no `cuLaunchKernel`, no HIP), its
//    frame's rows (`stream == -1` the calls, `stream != -1` the work), microseconds, the delay
//    clamped at 0.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tracemodel/algo/device_time.hpp"
#include "tracemodel/algo/hta_frame.hpp"
#include "tracemodel/config.hpp"
#include "tracemodel/detail/flat_map.hpp"
#include "tracemodel/model/table.hpp"

TRACEMODEL_BEGIN_NAMESPACE

struct launch_row {
  std::uint64_t correlation = 0;
  std::int64_t cpu_duration = 0, gpu_duration = 0, launch_delay = 0;
  bool short_kernel = false, runtime_outlier = false, delay_outlier = false;
};

namespace detail {
inline void flag_launch(launch_row& r, std::int64_t runtime_cutoff, std::int64_t delay_cutoff) {
  r.short_kernel = r.cpu_duration <= runtime_cutoff && r.gpu_duration < r.cpu_duration;
  r.runtime_outlier = r.cpu_duration > runtime_cutoff;
  r.delay_outlier = r.launch_delay > delay_cutoff;
}
}  // namespace detail

struct exact_launch_stats {
  std::int64_t runtime_cutoff = 50'000;  ///< ns
  std::int64_t delay_cutoff = 100'000;   ///< ns

  template <class Schema>
  [[nodiscard]] table_vector<launch_row> operator()(const basic_event_table<Schema>& t) const {
    return (*this)(t, device_view(t));
  }
  template <class Schema>
  [[nodiscard]] table_vector<launch_row> operator()(
      [[maybe_unused]] const basic_event_table<Schema>& t, const device_view& v) const {
    // The work of each call, in table order: its first place in the view's work, then a chain.
    // When two calls share a correlation id each gets the id's work, so the chains are by id.
    constexpr std::uint32_t none = ~std::uint32_t{0};
    table_vector<std::uint32_t> next(v.work.size(), none);
    table_vector<std::uint32_t> head(v.repeated_calls ? 0 : v.calls.size(), none);
    detail::flat_map<std::uint32_t> first(v.repeated_calls ? v.work.size() : 0);
    for (std::size_t k = v.work.size(); k-- > 0;) {
      const device_work& w = v.work[k];
      if (w.call == no_event || !is_queued_work(w.activity)) continue;
      std::uint32_t* h = nullptr;
      if (v.repeated_calls)
        h = first.try_emplace(w.correlation, none).first;
      else
        h = &head[w.call_place];
      next[k] = *h;
      *h = static_cast<std::uint32_t>(k);
    }
    table_vector<launch_row> rows;
    if (!v.repeated_calls)  // then every piece of work with a call makes one row
      rows.reserve(static_cast<std::size_t>(std::count_if(
          v.work.begin(), v.work.end(),
          [](const device_work& w) { return w.call != no_event && is_queued_work(w.activity); })));
    for (std::size_t place = 0; place < v.calls.size(); ++place) {
      const launch_call& c = v.calls[place];
      std::uint32_t k = none;
      if (!v.repeated_calls)
        k = head[place];
      else if (const std::uint32_t* h = first.find(c.correlation))
        k = *h;
      for (; k != none; k = next[k]) {
        const device_work& w = v.work[k];
        launch_row r;
        r.correlation = c.correlation;
        r.cpu_duration = c.end - c.start;
        r.gpu_duration = w.end - w.start;
        r.launch_delay = w.start - c.end;
        detail::flag_launch(r, runtime_cutoff, delay_cutoff);
        rows.push_back(r);
      }
    }
    return rows;
  }
};

struct hta_launch_stats {
  std::int64_t runtime_cutoff = 50;  ///< us
  std::int64_t delay_cutoff = 100;   ///< us
  bool include_memory_events = true;
  bool drop_last_step = false;

  template <class Schema>
  [[nodiscard]] table_vector<launch_row> operator()(const basic_event_table<Schema>& t) const {
    return (*this)(t, hta_frame(t, drop_last_step));
  }
  template <class Schema>
  [[nodiscard]] table_vector<launch_row> operator()(
      [[maybe_unused]] const basic_event_table<Schema>& t, const hta_frame& f) const {
    auto named = [&](const hta_row& r) {
      return (r.flags & hta_flag::launch) != 0 ||
             (include_memory_events && (r.flags & hta_flag::launch_copy) != 0);
    };
    detail::scratch_vector<std::int64_t> launches;  // correlation ids of the named calls
    launches.reserve(static_cast<std::size_t>(std::count_if(f.rows.begin(), f.rows.end(), named)));
    for (const hta_row& r : f.rows)
      if (named(r)) launches.push_back(r.correlation);
    std::sort(launches.begin(), launches.end());
    auto launched = [&](std::int64_t c) {
      return std::binary_search(launches.begin(), launches.end(), c);
    };
    // The device rows of each launched correlation id, in the frame's order.
    detail::scratch_vector<std::pair<std::int64_t, const hta_row*>> gpu;
    for (const hta_row& r : f.rows)
      if (r.stream != -1 && launched(r.correlation)) gpu.emplace_back(r.correlation, &r);
    std::stable_sort(gpu.begin(), gpu.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    table_vector<launch_row> rows;
    rows.reserve(gpu.size());
    for (const hta_row& c : f.rows) {
      if (c.stream != -1 || !launched(c.correlation)) continue;
      const auto [from, to] = std::equal_range(
          gpu.begin(), gpu.end(), std::pair<std::int64_t, const hta_row*>{c.correlation, nullptr},
          [](const auto& a, const auto& b) { return a.first < b.first; });
      for (auto it = from; it != to; ++it) {
        const hta_row* g = it->second;
        launch_row r;
        r.correlation = static_cast<std::uint64_t>(c.correlation);
        r.cpu_duration = c.end - c.ts;
        r.gpu_duration = g->end - g->ts;
        r.launch_delay = std::max<std::int64_t>(0, g->ts - c.ts - (c.end - c.ts));
        detail::flag_launch(r, runtime_cutoff, delay_cutoff);
        rows.push_back(r);
      }
    }
    return rows;
  }
};

template <class Schema, class Policy = exact_launch_stats>
[[nodiscard]] table_vector<launch_row> launch_stats(const basic_event_table<Schema>& t,
                                                    const Policy& policy = {}) {
  return policy(t);
}

TRACEMODEL_END_NAMESPACE
