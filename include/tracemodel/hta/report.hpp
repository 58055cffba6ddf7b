// tracemodel/hta — every device-time analysis of a set of rank traces under HTA's rules, in one
// call: formats/gpu_report.hpp's report, in HTA's whole microseconds.
//
//   const tracemodel::hta::gpu_report r = tracemodel::hta::make_gpu_report({"run/"});
//
// Each rank is read in the file's order (hta/read.hpp) and analysed on its frame (hta/frame.hpp);
// the timeline of steps and collectives stays exact (ns). HTA drops the last profiler step when
// the ranks together name two or more steps, which is known only once every rank is read: each
// rank's results are taken both ways (the whole frame first, then the filtered one, each given
// back before the next is made) and the right ones kept.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "tracemodel/algo/device_time.hpp"
#include "tracemodel/algo/rank_spread.hpp"
#include "tracemodel/config.hpp"
#include "tracemodel/formats/gpu_report.hpp"
#include "tracemodel/hta/device_time.hpp"
#include "tracemodel/hta/frame.hpp"
#include "tracemodel/hta/idle_time.hpp"
#include "tracemodel/hta/kernel_breakdown.hpp"
#include "tracemodel/hta/kernel_type_breakdown.hpp"
#include "tracemodel/hta/launch_stats.hpp"
#include "tracemodel/hta/queue_length.hpp"
#include "tracemodel/hta/read.hpp"
#include "tracemodel/threads.hpp"

TRACEMODEL_BEGIN_NAMESPACE
namespace hta {

using gpu_report = basic_gpu_report<microseconds>;

/// One rank's results under HTA's rules, from its frame. With `threads` allowing two, the
/// analyses run in two groups of about equal work, the second (queues, bandwidth, the
/// timeline) on another thread; the results are the same either way.
template <class Schema>
[[nodiscard]] gpu_rank gpu_rank_of(const basic_event_table<Schema>& t, const frame& f,
                                   bool series = true, const thread_options& threads = {1, {}}) {
  gpu_rank r;
  auto second = [&] {  // (each group writes members of its own)
    r.queues = queue_length(f);
    r.bandwidth = memory_bandwidth(f);
    if (!series) tracemodel::detail::drop_series(r);  // (the steps, once summarized)
    const device_view v(t);  // the timeline across ranks is exact under both rules
    r.has_gpu_annotations = !v.gpu_annotations.empty();
    r.timeline = rank_timeline_of(t, v);
  };
  tracemodel::detail::worker other;
  if (tracemodel::detail::thread_budget(threads) > 1) try {
      other = tracemodel::detail::worker(threads, second);
    } catch (const std::system_error&) {  // no thread to be had: both groups here
    }
  const bool apart = other.running();
  const row_list<device_interval> iv = device_intervals(f);
  r.idle = idle_time_breakdown(f);
  r.kernels = kernel_breakdown(f);
  if (series) r.launches = launch_stats(f);
  r.gpu_annotations = annotation_breakdown(f);
  tracemodel::detail::gpu_rank_rest(r, t, iv, /*class_sets=*/false);
  const class_sets sets = class_sets_of(iv);
  r.class_sets = sets.time;
  r.class_sets_seen = sets.seen;
  if (apart)
    other.join();
  else
    second();
  return r;
}

/// A rank's part of the report, from its table (see above: both ways when the rank names
/// fewer than two steps); `o.each_rank` called with it. `threads`: as `gpu_rank_of` takes them.
template <class Schema>
[[nodiscard]] gpu_rank_part gpu_rank_part_of(std::int64_t rank, basic_event_table<Schema>& t,
                                             const gpu_report_options& o,
                                             const thread_options& threads = {1, {}}) {
  gpu_rank_part p;
  // Known now if this rank names two steps, else both ways are taken.
  p.steps = step_names(t);
  std::optional<frame> all(std::in_place, t);
  if (p.steps.size() < 2) p.all_steps = gpu_rank_of(t, *all, o.series, threads);
  const frame filtered = std::move(*all).without_last_step();
  all.reset();
  p.result = gpu_rank_of(t, filtered, o.series, threads);
  p.result.rank = rank;
  if (p.all_steps) p.all_steps->rank = rank;
  if (o.each_rank) o.each_rank(rank, t);
  return p;
}

/// Reads one file in the file's order and makes its part (its analyses on as many threads as
/// `o` allows); input_error names the file.
[[nodiscard]] inline gpu_rank_part read_gpu_rank_part(const std::string& file, std::int64_t place,
                                                      const gpu_report_options& o = {}) {
  const thread_options threads{tracemodel::detail::thread_budget(o), o.start_thread};
  gpu_rank_part p = read_rank(file, place, reading(o), [&](std::int64_t rank, event_table& t) {
    return hta::gpu_rank_part_of(rank, t, o, threads);
  });
  p.file = file;
  return p;
}

/// The report of the ranks whose parts these are (in any order): the last step dropped when
/// the ranks together name two or more steps.
[[nodiscard]] inline gpu_report gather_gpu_report(std::vector<gpu_rank_part> parts) {
  tracemodel::detail::sort_parts(parts);
  std::vector<std::string> steps;
  for (const gpu_rank_part& p : parts) steps.insert(steps.end(), p.steps.begin(), p.steps.end());
  std::sort(steps.begin(), steps.end());
  const bool drop = std::unique(steps.begin(), steps.end()) - steps.begin() >= 2;
  std::vector<gpu_rank> each;
  each.reserve(parts.size());
  for (gpu_rank_part& p : parts) {
    if (!drop && !p.all_steps)  // (a part that names two steps says so itself)
      throw input_error("rank part of " + p.file + ": its steps and its results disagree");
    each.push_back(std::move(drop ? p.result : *p.all_steps));
  }
  gpu_report out;
  tracemodel::detail::gather_ranks(out, std::move(each));
  class_sets sum;
  for (const gpu_rank& r : out.ranks) sum += {r.class_sets, r.class_sets_seen};
  out.kernel_types = kernel_type_rows(sum);
  return out;
}

/// Reads `paths` (files or folders of one rank each) and analyses every rank (see above).
[[nodiscard]] inline gpu_report make_gpu_report(const std::vector<std::string>& paths,
                                                const gpu_report_options& o = {}) {
  const std::size_t files = trace_files(paths).size();
  // One rank read at a time on two threads: its analyses take both.
  const thread_options split{files > 1 ? 1u : tracemodel::detail::thread_budget(o), o.start_thread};
  auto ranks = read_ranks(
      paths, o,
      [&](std::int64_t rank, event_table& t) { return hta::gpu_rank_part_of(rank, t, o, split); },
      o.analysed_at_once);
  std::vector<gpu_rank_part> parts;
  parts.reserve(ranks.size());
  for (auto& [rank, p] : ranks) parts.push_back(std::move(p));
  return hta::gather_gpu_report(std::move(parts));
}

/// A rank's queue and bandwidth series in nanoseconds (HTA's microseconds times 1000), for what
/// takes times in ns (formats/counter_tracks.hpp).
[[nodiscard]] inline std::pair<row_list<stream_queue>, row_list<memory_bandwidth_series>>
series_in_ns(const gpu_rank& r) {
  std::pair<row_list<stream_queue>, row_list<memory_bandwidth_series>> out{r.queues, r.bandwidth};
  for (stream_queue& q : out.first)
    for (queue_step& s : q.steps) s.ts *= microseconds::in_ns;
  for (memory_bandwidth_series& m : out.second)
    for (bandwidth_step& s : m.steps) s.ts *= microseconds::in_ns;
  return out;
}

}  // namespace hta
TRACEMODEL_END_NAMESPACE
