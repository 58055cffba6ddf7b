// tracemodel/formats — every device-time analysis of a set of rank traces, in one call.
//
//   const tracemodel::gpu_report r = tracemodel::make_gpu_report({"run/"});   // ns
//
// The files are read in parallel (formats/ranks.hpp: rank detection, the thread cap, each table
// dropped once its results are taken). Per rank: the temporal breakdown, the overlap of
// communication and computation, the idle time breakdown, the kernels, the launches, the queues,
// the copies' bandwidth, the GPU's annotations and the timeline of steps and collectives; over
// the ranks: the kernel types and the spread of steps and collectives. A report's unit is in its
// type: `basic_gpu_report<nanoseconds>` here; hta/report.hpp makes HTA's, in its microseconds.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "tracemodel/algo/annotation_breakdown.hpp"
#include "tracemodel/algo/comm_comp_overlap.hpp"
#include "tracemodel/algo/device_time.hpp"
#include "tracemodel/algo/idle_time.hpp"
#include "tracemodel/algo/kernel_breakdown.hpp"
#include "tracemodel/algo/kernel_type_breakdown.hpp"
#include "tracemodel/algo/launch_stats.hpp"
#include "tracemodel/algo/measure.hpp"
#include "tracemodel/algo/queue_length.hpp"
#include "tracemodel/algo/rank_spread.hpp"
#include "tracemodel/algo/temporal_breakdown.hpp"
#include "tracemodel/config.hpp"
#include "tracemodel/formats/ranks.hpp"

TRACEMODEL_BEGIN_NAMESPACE

struct gpu_report_options : read_options {
  /// Keep each rank's series: a row per launch, the queue's and the copies' steps over time.
  /// Without them (their summaries stay; the launch rows are not made, and each series is
  /// dropped once summarized) the report's memory follows the ranks being read, not every rank:
  /// the series grow with the trace (about 72 bytes per launch).
  bool series = true;
  /// Ranks analysed at the same time (0: as many as threads read). Each holds its table and
  /// the scratch arrays of an analysis (about 1.5 tables in all), a rank being read about 1:
  /// with the default, one rank is analysed while the next ones are read.
  unsigned analysed_at_once = 1;
  /// Called with each rank's table once its results are taken, before it is dropped (on the
  /// thread that read it: several at once when ranks are read in parallel).
  std::function<void(std::int64_t rank, event_table& table)> each_rank;
};

/// One rank's results (in the unit of the report that holds them).
struct gpu_rank {
  std::int64_t rank = 0;
  temporal_breakdown_row temporal;
  std::optional<double> overlap;  ///< communication hidden behind computation, %
  row_list<idle_row> idle;
  row_list<kernel_row> kernels;  ///< by class, then name
  row_list<launch_row> launches;
  row_list<stream_queue> queues;
  row_list<memory_bandwidth_series> bandwidth;
  row_list<kernel_row> gpu_annotations;      ///< by name
  bool has_gpu_annotations = false;          ///< the trace has GPU annotations at all
  rank_timeline timeline;                    ///< steps and collectives (ns)
  std::array<std::int64_t, 8> class_sets{};  ///< time per set of kernel classes
  unsigned class_sets_seen = 0;  ///< the sets a sweep passed through (bit per set; HTA's rule)
  anomaly_counts repairs;        ///< what reading repaired
};

/// One rank's share of a report, made where the rank is read (a thread, another process, a
/// cluster's worker) and gathered with the other ranks' (`gather_gpu_report`); formats/
/// rank_parts.hpp sends it as bytes.
struct gpu_rank_part {
  std::string file;  ///< the file the rank was read from (named by errors of the gathering)
  gpu_rank result;   ///< the exact rules'; HTA's: without the last step
  // HTA's rules (hta/report.hpp): whether to drop the last step is known once every rank's
  // step names are.
  std::vector<std::string> steps;     ///< the rank's step names
  std::optional<gpu_rank> all_steps;  ///< with every step, when the rank names fewer than two
};

/// Every rank's results, and those across ranks, each time in `Unit` (`Unit::name`, and
/// `Unit::in_ns` nanoseconds each) but the timeline's and the spread's (ns).
template <class Unit>
struct basic_gpu_report {
  using unit = Unit;
  std::vector<gpu_rank> ranks;
  row_list<kernel_type_row> kernel_types;  ///< over the ranks
  rank_spread spread;                      ///< steps and collectives across ranks (ns)
  anomaly_counts repairs;                  ///< over the ranks
};
using gpu_report = basic_gpu_report<nanoseconds>;

namespace detail {
/// What every report's rank shares once its intervals and per-stream analyses are taken.
template <class Schema>
void gpu_rank_rest(gpu_rank& r, const basic_event_table<Schema>& t,
                   std::span<const device_interval> iv, bool class_sets = true) {
  r.temporal = temporal_breakdown(iv);
  r.overlap = comm_comp_overlap(iv);
  if (class_sets) r.class_sets = class_overlap_times(iv);
  r.repairs = t.anomalies;
}
/// Without the series: no launch rows, and the steps over time dropped as soon as their
/// summaries are taken (before the next analysis), so that they do not pile up.
inline void drop_series(gpu_rank& r) {
  // (`= {}` would pick the initializer-list assignment: emptied, the memory kept)
  for (stream_queue& q : r.queues) row_list<queue_step>().swap(q.steps);
  for (memory_bandwidth_series& m : r.bandwidth) row_list<bandwidth_step>().swap(m.steps);
}
/// The parts in rank order (a stable sort); input_error naming both files when two hold one
/// rank.
inline void sort_parts(std::vector<gpu_rank_part>& parts) {
  if (parts.empty()) throw input_error("no trace files in the paths given");
  std::stable_sort(parts.begin(), parts.end(), [](const gpu_rank_part& a, const gpu_rank_part& b) {
    return a.result.rank < b.result.rank;
  });
  for (std::size_t k = 1; k < parts.size(); ++k)
    if (parts[k - 1].result.rank == parts[k].result.rank)
      throw input_error("rank " + std::to_string(parts[k].result.rank) +
                        " is in two files: " + parts[k - 1].file + " and " + parts[k].file);
}
/// The results across ranks, from each rank's (moved in).
template <class Report>
void gather_ranks(Report& out, std::vector<gpu_rank> ranks) {
  std::array<std::int64_t, 8> sets{};
  for (gpu_rank& r : ranks) {
    for (std::size_t k = 1; k < 8; ++k) sets[k] += r.class_sets[k];
    out.repairs += r.repairs;
    out.ranks.push_back(std::move(r));
  }
  out.kernel_types = kernel_type_rows(sets);
  std::vector<std::pair<std::int64_t, rank_timeline>> timelines;
  for (const gpu_rank& r : out.ranks) timelines.emplace_back(r.rank, r.timeline);
  out.spread = spread_across_ranks(timelines);
}
}  // namespace detail

/// One rank's results: one view of the device work, shared by every analysis.
template <class Schema>
[[nodiscard]] gpu_rank gpu_rank_of(const basic_event_table<Schema>& t, bool series = true) {
  gpu_rank r;
  const device_view v(t);
  const row_list<device_interval> iv = device_intervals(v);
  r.idle = idle_time_breakdown(v);
  r.kernels = kernel_breakdown(t, v, {});
  if (series) r.launches = launch_stats(v);
  r.queues = queue_length(v);
  r.bandwidth = memory_bandwidth(t, v);
  if (!series) detail::drop_series(r);
  r.gpu_annotations = annotation_breakdown(t, v, {});
  r.has_gpu_annotations = !v.gpu_annotations.empty();
  r.timeline = rank_timeline_of(t, v);
  detail::gpu_rank_rest(r, t, iv);
  return r;
}

/// A rank's part of the report, from its table (`o.each_rank` called with it).
template <class Schema>
[[nodiscard]] gpu_rank_part gpu_rank_part_of(std::int64_t rank, basic_event_table<Schema>& t,
                                             const gpu_report_options& o = {}) {
  gpu_rank_part p;
  p.result = gpu_rank_of(t, o.series);
  p.result.rank = rank;
  if (o.each_rank) o.each_rank(rank, t);
  return p;
}

/// Reads one file and makes its part: the rank found as formats/ranks.hpp finds it, `place`
/// being the file's place in its list. input_error names the file.
[[nodiscard]] inline gpu_rank_part read_gpu_rank_part(const std::string& file, std::int64_t place,
                                                      const gpu_report_options& o = {}) {
  gpu_rank_part p = read_rank(file, place, o, [&](std::int64_t rank, event_table& t) {
    return gpu_rank_part_of(rank, t, o);
  });
  p.file = file;
  return p;
}

/// The report of the ranks whose parts these are (in any order).
[[nodiscard]] inline gpu_report gather_gpu_report(std::vector<gpu_rank_part> parts) {
  detail::sort_parts(parts);
  std::vector<gpu_rank> each;
  each.reserve(parts.size());
  for (gpu_rank_part& p : parts) each.push_back(std::move(p.result));
  gpu_report out;
  detail::gather_ranks(out, std::move(each));
  return out;
}

/// Reads `paths` (files or folders of one rank each) and analyses every rank.
[[nodiscard]] inline gpu_report make_gpu_report(const std::vector<std::string>& paths,
                                                const gpu_report_options& o = {}) {
  const std::vector<std::string> files = trace_files(paths);
  if (files.empty()) throw input_error("no trace files in the paths given");
  auto ranks = for_each_rank(
      files, o, [&](std::int64_t rank, event_table& t) { return gpu_rank_part_of(rank, t, o); },
      o.analysed_at_once);
  std::vector<gpu_rank_part> parts;
  parts.reserve(ranks.size());
  for (auto& [rank, p] : ranks) parts.push_back(std::move(p));
  return gather_gpu_report(std::move(parts));
}

TRACEMODEL_END_NAMESPACE
