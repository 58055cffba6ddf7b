// tracemodel/formats — every device-time analysis of a set of rank traces, in one call.
//
//   tracemodel::gpu_report_options o;
//   o.hta = true;                                     // Holistic Trace Analysis's rules
//   const tracemodel::gpu_report r = tracemodel::make_gpu_report({"run/"}, o);
//
// The files are read in parallel (formats/ranks.hpp: rank detection, the thread cap, each table
// dropped once its results are taken). Per rank: the temporal breakdown, the overlap of
// communication and computation, the idle time breakdown, the kernels, the launches; over the
// ranks: the kernel types.
// Under `hta`, HTA drops the last profiler step when the ranks together name two or more steps,
// which is known only once every rank is read: each rank's results are taken both ways and the
// right ones kept.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tracemodel/algo/annotation_breakdown.hpp"
#include "tracemodel/algo/comm_comp_overlap.hpp"
#include "tracemodel/algo/device_time.hpp"
#include "tracemodel/algo/hta_frame.hpp"
#include "tracemodel/algo/idle_time.hpp"
#include "tracemodel/algo/kernel_breakdown.hpp"
#include "tracemodel/algo/kernel_type_breakdown.hpp"
#include "tracemodel/algo/launch_stats.hpp"
#include "tracemodel/algo/queue_length.hpp"
#include "tracemodel/algo/rank_spread.hpp"
#include "tracemodel/algo/temporal_breakdown.hpp"
#include "tracemodel/config.hpp"
#include "tracemodel/formats/ranks.hpp"

TRACEMODEL_BEGIN_NAMESPACE

struct gpu_report_options : read_options {
  bool hta = false;  ///< Holistic Trace Analysis's rules (else exact)
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

/// One rank's results.
struct gpu_rank {
  std::int64_t rank = 0;
  temporal_breakdown_row temporal;
  std::optional<double> overlap;  ///< communication hidden behind computation, %
  std::vector<idle_row> idle;
  std::vector<kernel_row> kernels;  ///< by class, then name
  table_vector<launch_row> launches;
  std::vector<stream_queue> queues;
  std::vector<memory_bandwidth_series> bandwidth;
  std::vector<kernel_row> gpu_annotations;   ///< by name
  bool has_gpu_annotations = false;          ///< HTA answers nothing without the category
  rank_timeline timeline;                    ///< steps and collectives (ns)
  std::array<std::int64_t, 8> class_sets{};  ///< time per set of kernel classes
  anomaly_counts repairs;                    ///< what reading repaired
};

struct gpu_report {
  bool hta = false;
  std::string_view unit;  ///< of every time: "ns" or "us"
  std::vector<gpu_rank> ranks;
  std::vector<kernel_type_row> kernel_types;  ///< over the ranks
  rank_spread spread;                         ///< steps and collectives across ranks (ns)
  anomaly_counts repairs;                     ///< over the ranks
};

namespace detail {
/// What both policies share once the intervals and the per-stream analyses are taken.
template <class Schema>
void gpu_rank_rest(gpu_rank& r, const basic_event_table<Schema>& t,
                   std::span<const device_interval> iv) {
  r.temporal = temporal_breakdown(iv);
  r.overlap = comm_comp_overlap(iv);
  r.class_sets = class_overlap_times(iv);
  r.repairs = t.anomalies;
}
/// Without the series: no launch rows, and the steps over time dropped as soon as their
/// summaries are taken (before the next analysis), so that they do not pile up.
inline void drop_series(gpu_rank& r) {
  // (`= {}` would pick the initializer-list assignment: emptied, the memory kept)
  for (stream_queue& q : r.queues) table_vector<queue_step>().swap(q.steps);
  for (memory_bandwidth_series& m : r.bandwidth)
    std::vector<std::pair<std::int64_t, double>>().swap(m.steps);
}
/// One rank under the exact rules: one view of the device work, shared by every analysis.
template <class Schema>
gpu_rank gpu_rank_of(const basic_event_table<Schema>& t, bool series) {
  gpu_rank r;
  const device_view v(t);
  const auto iv = exact_device_time::intervals(t, v);
  r.idle = exact_idle_time{}(t, v);
  const exact_kernel_breakdown kernels;  // (a temporary here crashes g++ 12)
  r.kernels = kernels(t, v);
  if (series) r.launches = exact_launch_stats{}(t, v);
  r.queues = exact_queue_length{}(t, v);
  r.bandwidth = exact_memory_bandwidth{}(t, v);
  if (!series) drop_series(r);
  r.gpu_annotations = exact_annotation_breakdown{}(t, v);
  r.has_gpu_annotations = !v.gpu_annotations.empty();
  r.timeline = rank_timeline_of(t, v);
  gpu_rank_rest(r, t, iv);
  return r;
}
/// One rank under HTA's rules, from its frame.
template <class Schema>
gpu_rank gpu_rank_of(const basic_event_table<Schema>& t, const hta_frame& f, bool series) {
  gpu_rank r;
  const auto iv = hta_device_time::intervals(t, f);
  r.idle = hta_idle_time{}(t, f);
  const hta_kernel_breakdown kernels;
  r.kernels = kernels.from_intervals(t, iv);
  if (series) r.launches = hta_launch_stats{}(t, f);
  r.queues = hta_queue_length{}(t, f);
  r.bandwidth = hta_memory_bandwidth{}(t, f);
  if (!series) drop_series(r);
  r.gpu_annotations = hta_annotation_breakdown{}(t, f);
  const device_view v(t);  // the timeline across ranks is exact under both rules
  r.has_gpu_annotations = !v.gpu_annotations.empty();
  r.timeline = rank_timeline_of(t, v);
  gpu_rank_rest(r, t, iv);
  return r;
}
}  // namespace detail

/// Reads `paths` (files or folders of one rank each) and analyses every rank.
[[nodiscard]] inline gpu_report make_gpu_report(const std::vector<std::string>& paths,
                                                const gpu_report_options& o = {}) {
  const std::vector<std::string> files = trace_files(paths);
  if (files.empty()) throw input_error("no trace files in the paths given");
  struct both {
    gpu_rank kept[2];  // HTA: all steps, the last one dropped
    std::vector<std::string> steps;
  };
  read_options ro = o;
  ro.keep_file_order = ro.keep_file_order || o.hta;  // HTA's frame is in file order
  auto ranks = for_each_rank(
      files, ro,
      [&](std::int64_t rank, event_table& t) {
        both b;
        if (o.hta) {
          // HTA drops the last step when the ranks together name two or more: known now if this
          // rank names two, else both ways are taken and the choice made once every rank is read.
          b.steps = hta_step_names(t);
          // The whole frame is given back before the filtered one is analysed.
          std::optional<hta_frame> all(std::in_place, t);
          if (b.steps.size() < 2) b.kept[0] = detail::gpu_rank_of(t, *all, o.series);
          const hta_frame f = all->without_last_step();
          all.reset();
          b.kept[1] = detail::gpu_rank_of(t, f, o.series);
        } else {
          b.kept[0] = detail::gpu_rank_of(t, o.series);
        }
        b.kept[0].rank = b.kept[1].rank = rank;
        if (o.each_rank) o.each_rank(rank, t);
        return b;
      },
      o.analysed_at_once);
  std::vector<std::string> steps;
  for (const auto& [rank, b] : ranks) steps.insert(steps.end(), b.steps.begin(), b.steps.end());
  std::sort(steps.begin(), steps.end());
  const bool drop = std::unique(steps.begin(), steps.end()) - steps.begin() >= 2;
  gpu_report out;
  out.hta = o.hta;
  out.unit = o.hta ? hta_device_time::unit_name : exact_device_time::unit_name;
  std::array<std::int64_t, 8> sets{};
  for (auto& [rank, b] : ranks) {
    gpu_rank& r = b.kept[drop ? 1 : 0];
    for (std::size_t k = 1; k < 8; ++k) sets[k] += r.class_sets[k];
    out.repairs += r.repairs;
    out.ranks.push_back(std::move(r));
  }
  out.kernel_types = kernel_type_rows(sets);
  std::vector<std::pair<std::int64_t, rank_timeline>> timelines;
  for (const gpu_rank& r : out.ranks) timelines.emplace_back(r.rank, r.timeline);
  out.spread = spread_across_ranks(timelines);
  return out;
}

TRACEMODEL_END_NAMESPACE
