// tracemodel/algo — how long launches take and wait: each host call that launched device work,
// with the work it launched.
//
//   auto rows = tracemodel::launch_stats(table);                                 // ns
//   auto strict = tracemodel::launch_stats(table, {.runtime_cutoff = 20'000});
//
// One row per (call, device work) pair that share a correlation id: the call's duration, the
// work's duration, and the launch delay, from the end of the call to the start of the work (as
// it is: negative when the work started before the call returned). Rows come in the order of
// the calls, then of the work. Each row is flagged as launch plots flag them: a short kernel
// (the call took at most `runtime_cutoff` and longer than the work), a runtime outlier (the
// call took longer than `runtime_cutoff`), a delay outlier (the delay is longer than
// `delay_cutoff`). The calls are every runtime or driver call (of any device API) that has a
// kernel, copy or set with its correlation id, as the host/device linker pairs them.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tracemodel/algo/device_time.hpp"
#include "tracemodel/algo/measure.hpp"
#include "tracemodel/config.hpp"
#include "tracemodel/detail/flat_map.hpp"
#include "tracemodel/model/table.hpp"

TRACEMODEL_BEGIN_NAMESPACE

struct launch_row {
  std::uint64_t correlation = 0;
  std::int64_t cpu_duration = 0, gpu_duration = 0, launch_delay = 0;
  bool short_kernel = false, runtime_outlier = false, delay_outlier = false;
};

/// Sets a row's flags from its times and the cutoffs (one unit for all).
inline void flag_launch(launch_row& r, std::int64_t runtime_cutoff, std::int64_t delay_cutoff) {
  r.short_kernel = r.cpu_duration <= runtime_cutoff && r.gpu_duration < r.cpu_duration;
  r.runtime_outlier = r.cpu_duration > runtime_cutoff;
  r.delay_outlier = r.launch_delay > delay_cutoff;
}

struct launch_stats_options {
  std::int64_t runtime_cutoff = 50'000;  ///< ns
  std::int64_t delay_cutoff = 100'000;   ///< ns
};

/// The launches of a view made already.
[[nodiscard]] inline row_list<launch_row> launch_stats(const device_view& v,
                                                       const launch_stats_options& o = {}) {
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
  row_list<launch_row> rows;
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
      flag_launch(r, o.runtime_cutoff, o.delay_cutoff);
      rows.push_back(r);
    }
  }
  return rows;
}
/// The launch statistics of `t` (see above).
template <class Schema>
[[nodiscard]] row_list<launch_row> launch_stats(const basic_event_table<Schema>& t,
                                                const launch_stats_options& o = {}) {
  return launch_stats(device_view(t), o);
}

TRACEMODEL_END_NAMESPACE
