// tracemodel._core: Holistic Trace Analysis's analyses on ranks read once (tracemodel.hta's
// classes call these with their parameters).
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <tracemodel/algo/analyze.hpp>
#include <tracemodel/algo/annotation_breakdown.hpp>
#include <tracemodel/algo/comm_comp_overlap.hpp>
#include <tracemodel/algo/idle_time.hpp>
#include <tracemodel/algo/kernel_breakdown.hpp>
#include <tracemodel/algo/kernel_type_breakdown.hpp>
#include <tracemodel/algo/launch_stats.hpp>
#include <tracemodel/algo/queue_length.hpp>
#include <tracemodel/algo/temporal_breakdown.hpp>
#include <tracemodel/formats/chrome_trace_writer.hpp>
#include <tracemodel/formats/critical_path_overlay.hpp>
#include <tracemodel/formats/event_positions.hpp>
#include <tracemodel/formats/export_view.hpp>
#include <tracemodel/hta/critical_path.hpp>
#include <tracemodel/hta/device_time.hpp>
#include <tracemodel/hta/idle_time.hpp>
#include <tracemodel/hta/kernel_breakdown.hpp>
#include <tracemodel/hta/kernel_type_breakdown.hpp>
#include <tracemodel/hta/launch_stats.hpp>
#include <tracemodel/hta/queue_length.hpp>
#include <tracemodel/hta/read.hpp>
#include <tracemodel/hta/trace_diff.hpp>
#include <tracemodel/hta/tree.hpp>

#include "binding.hpp"

namespace tracemodel_py {
namespace {

namespace hta = tracemodel::hta;

struct hta_rank {
  std::int64_t rank = 0;
  std::string path;
  tmod::event_table table;
  hta::frame frame;
  /// HTA's event ids: each event's position in the file's `traceEvents` array, found on first
  /// use (formats/event_positions.hpp); the table's indices when they cannot be matched.
  [[nodiscard]] std::span<const std::int64_t> ids() const {
    if (!ids_) {
      const py::gil_scoped_release unlocked;
      ids_ = tmod::event_positions(path, table);
    }
    return *ids_;
  }
  [[nodiscard]] std::int64_t id(tmod::event_index e) const {
    const auto all = ids();
    return all.empty() ? static_cast<std::int64_t>(e) : all[e];
  }

 private:
  mutable std::optional<std::vector<std::int64_t>> ids_;
};

/// The ranks of a trace folder or file list, each read once and framed as HTA's loader frames
/// them: the last profiler step dropped (with its kernels) when the ranks together name two or
/// more steps and `include_last_step` is false; with it, only kernels whose launch is not in the
/// trace go. `filter` false: no filter at all (HTA's LabeledTrace).
struct hta_trace {
  std::vector<std::unique_ptr<hta_rank>> ranks;  // by rank
  std::int64_t min_ts = 0;                       // over the ranks, us (HTA's alignment)
  tmod::anomaly_counts repairs;

  /// `drop_last`: whether to drop the last step, when decided by ranks read elsewhere (a
  /// cluster's other workers); `first_place`: the place of the first file in the whole list.
  hta_trace(const std::vector<std::pair<std::int64_t, std::string>>& files, bool include_last_step,
            bool filter, std::optional<bool> drop_last = std::nullopt,
            std::int64_t first_place = 0) {
    const py::gil_scoped_release unlocked;
    // A file's rank: the one given, else its `distributedInfo.rank`, else the number of a
    // `rank-N` in its name, else its place in the list (formats/ranks.hpp's rule).
    for (std::size_t k = 0; k < files.size(); ++k) {
      const std::int64_t given = files[k].first;
      const std::string& path = files[k].second;
      auto r = std::make_unique<hta_rank>();
      r->path = path;
      r->table = about_file(path, [&] { return hta::read_trace_file(path); });
      std::optional<std::int64_t> rank;
      if (given >= 0) rank = given;
      if (!rank) rank = tmod::distributed_rank(r->table);
      if (!rank) rank = tmod::rank_in_name(path);
      r->rank = rank.value_or(first_place + static_cast<std::int64_t>(k));
      for (const auto& other : ranks)
        if (other->rank == r->rank)
          throw trace_error{
              "two files of rank " + std::to_string(r->rank) + ": " + other->path + " and " + path,
              path, -1};
      ranks.push_back(std::move(r));
    }
    std::sort(ranks.begin(), ranks.end(),
              [](const auto& a, const auto& b) { return a->rank < b->rank; });
    for (const auto& r : ranks)
      for (std::string& s : hta::step_names(r->table)) step_names.insert(std::move(s));
    const bool drop = drop_last ? *drop_last : filter && step_names.size() >= 2;
    min_ts = std::numeric_limits<std::int64_t>::max();
    for (auto& r : ranks) {
      repairs += r->table.anomalies;
      hta::frame f(r->table);
      if (drop) {
        if (include_last_step) f.last_step = std::numeric_limits<std::int64_t>::max();
        f = std::move(f).without_last_step();
      }
      r->frame = std::move(f);
      for (const hta::row& x : r->frame.rows) min_ts = std::min(min_ts, x.ts);
    }
    if (min_ts == std::numeric_limits<std::int64_t>::max()) min_ts = 0;
    // HTA's symbol table: every name and category of every rank, first seen first.
    for (const auto& r : ranks)
      for (const hta::row& x : r->frame.rows)
        for (const std::string_view s : {x.name, x.cat})
          if (symbol_ids.try_emplace(s, static_cast<std::int64_t>(symbols.size())).second)
            symbols.push_back(s);
  }
  std::set<std::string> step_names;       // of every rank
  std::vector<std::string_view> symbols;  // (views into the ranks' tables)
  std::unordered_map<std::string_view, std::int64_t> symbol_ids;
  [[nodiscard]] std::int64_t symbol(std::string_view s) const { return symbol_ids.at(s); }

  [[nodiscard]] std::vector<const hta_rank*> select(
      const std::optional<std::vector<std::int64_t>>& want) const {
    std::vector<const hta_rank*> out;
    for (const auto& r : ranks)
      if (!want || std::find(want->begin(), want->end(), r->rank) != want->end())
        out.push_back(r.get());
    return out;
  }
  [[nodiscard]] const hta_rank& one(std::int64_t rank) const {
    for (const auto& r : ranks)
      if (r->rank == rank) return *r;
    throw tmod::usage_error("no rank " + std::to_string(rank) + " in the trace");
  }
};

using rank_list = std::optional<std::vector<std::int64_t>>;

py::dict temporal(const hta_trace& h, const rank_list& want, bool exact) {
  std::vector<std::int64_t> rank;
  std::vector<double> idle, compute, non, kernel, ip, cp, np;
  const double unit = exact ? 1e-3 : 1.0;
  for (const hta_rank* r : h.select(want)) {
    const tmod::temporal_breakdown_row b =
        tmod::temporal_breakdown(exact ? tmod::device_intervals(tmod::device_view(r->table))
                                       : hta::device_intervals(r->frame));
    rank.push_back(r->rank);
    idle.push_back(static_cast<double>(b.idle) * unit);
    compute.push_back(static_cast<double>(b.compute) * unit);
    non.push_back(static_cast<double>(b.non_compute) * unit);
    kernel.push_back(static_cast<double>(b.kernel_time) * unit);
    ip.push_back(b.any ? b.idle_pctg : NAN);
    cp.push_back(b.any ? b.compute_pctg : NAN);
    np.push_back(b.any ? b.non_compute_pctg : NAN);
  }
  py::dict d;
  d["rank"] = numbers<std::int64_t>(rank);
  d["idle_time(us)"] = numbers<double>(idle);
  d["compute_time(us)"] = numbers<double>(compute);
  d["non_compute_time(us)"] = numbers<double>(non);
  d["kernel_time(us)"] = numbers<double>(kernel);
  d["idle_time_pctg"] = numbers<double>(ip);
  d["compute_time_pctg"] = numbers<double>(cp);
  d["non_compute_time_pctg"] = numbers<double>(np);
  return d;
}

/// Times of the exact rules are ns, shown in us (with their fraction); HTA's are whole us.
double unit_of(bool exact) { return exact ? 1e-3 : 1.0; }
tmod::interval_stats scaled(tmod::interval_stats s, double unit) {
  for (double* x : {&s.mean, &s.std, &s.min, &s.q25, &s.q50, &s.q75, &s.max}) *x *= unit;
  return s;
}
/// A rank's device intervals by either rules.
tmod::row_list<tmod::device_interval> intervals(const hta_rank& r, bool exact) {
  return exact ? tmod::device_intervals(tmod::device_view(r.table))
               : hta::device_intervals(r.frame);
}

py::dict idle(const hta_trace& h, const rank_list& want, std::int64_t threshold, bool exact) {
  std::vector<std::int64_t> rank, stream;
  std::vector<double> time, ratio;
  text_column cat;
  stats_columns st;
  const double unit = unit_of(exact);
  for (const hta_rank* r : h.select(want)) {
    const auto rows =
        exact ? tmod::idle_time_breakdown(tmod::device_view(r->table), {threshold * 1000})
              : hta::idle_time_breakdown(r->frame, {threshold});
    for (const tmod::idle_row& i : rows) {
      rank.push_back(r->rank);
      stream.push_back(i.stream);
      cat.push(tmod::idle_category_names[static_cast<int>(i.category)]);
      time.push_back(static_cast<double>(i.idle_time) * unit);
      ratio.push_back(i.ratio.value_or(NAN));
      st.push(scaled(i.stats, unit));
    }
  }
  py::dict d;
  d["rank"] = numbers<std::int64_t>(rank);
  d["stream"] = numbers<std::int64_t>(stream);
  d["idle_category"] = cat.take();
  d["idle_time"] = numbers<double>(time);
  d["idle_time_ratio"] = numbers<double>(ratio);
  st.into(d);
  return d;
}

/// The time of each set of kernel classes: one rank's (HTA's sets also say which the sweep
/// passed through); summed over ranks, the kernel types' rows.
hta::class_sets class_sets_of_rank(const hta_rank& r, bool include_memory, bool exact) {
  tmod::row_list<tmod::device_interval> iv = intervals(r, exact);
  if (!include_memory)
    std::erase_if(
        iv, [](const tmod::device_interval& d) { return d.cls == tmod::kernel_class::memory; });
  if (!exact) return hta::class_sets_of(iv);
  hta::class_sets out;
  out.time = tmod::class_overlap_times(iv);
  return out;
}

py::dict kernel_type_columns(const hta::class_sets& sets, bool exact) {
  text_column type;
  std::vector<double> sum, pct;
  for (const tmod::kernel_type_row& k :
       exact ? tmod::kernel_type_rows(sets.time) : hta::kernel_type_rows(sets)) {
    type.push(k.kernel_type);
    sum.push_back(static_cast<double>(k.sum) * unit_of(exact));
    pct.push_back(k.percentage);
  }
  py::dict types;
  types["kernel_type"] = type.take();
  types["sum"] = numbers<double>(sum);
  types["percentage"] = numbers<double>(pct);
  return types;
}

/// Each rank's class sets: [(times of the 8 sets, the sets seen)].
py::list class_sets(const hta_trace& h, bool include_memory, bool exact) {
  py::list out;
  for (const hta_rank* r : h.select(std::nullopt)) {
    const hta::class_sets s = class_sets_of_rank(*r, include_memory, exact);
    out.append(py::make_tuple(std::vector<std::int64_t>(s.time.begin(), s.time.end()), s.seen));
  }
  return out;
}

/// The kernel types of class sets summed over ranks.
py::dict kernel_types(const std::vector<std::int64_t>& times, unsigned seen, bool exact) {
  hta::class_sets s;
  for (std::size_t k = 0; k < s.time.size() && k < times.size(); ++k) s.time[k] = times[k];
  s.seen = seen;
  return kernel_type_columns(s, exact);
}

py::tuple kernels(const hta_trace& h, std::size_t top, double ratio, bool include_memory,
                  bool exact) {
  hta::class_sets sets;
  name_rows rows;
  rows.unit = unit_of(exact);
  for (const hta_rank* r : h.select(std::nullopt)) {
    sets += class_sets_of_rank(*r, include_memory, exact);
    const auto kernel_rows =
        exact ? tmod::kernel_breakdown(r->table, tmod::device_view(r->table), {.top = top})
              : hta::kernel_breakdown(r->frame, {top, ratio});
    for (const tmod::kernel_row& k : kernel_rows)
      if (include_memory || k.cls != tmod::kernel_class::memory) rows.push(r->rank, k, true);
  }
  return py::make_tuple(kernel_type_columns(sets, exact), rows.take(true));
}

py::dict annotations(const hta_trace& h, bool on_gpu, std::size_t top, double ratio, bool exact,
                     const std::vector<std::string>& allowlist) {
  name_rows rows;
  rows.unit = unit_of(exact);
  for (const hta_rank* r : h.select(std::nullopt)) {
    const auto found = exact ? tmod::annotation_breakdown(r->table, {on_gpu, top})
                             : hta::annotation_breakdown(r->frame, {on_gpu, top, ratio, allowlist});
    for (const tmod::kernel_row& k : found) rows.push(r->rank, k, false);
  }
  return rows.take(false);
}

py::dict overlap(const hta_trace& h, bool exact) {
  std::vector<std::int64_t> rank;
  std::vector<double> pct;
  for (const hta_rank* r : h.select(std::nullopt)) {
    rank.push_back(r->rank);
    pct.push_back(tmod::comm_comp_overlap(intervals(*r, exact)).value_or(NAN));
  }
  py::dict d;
  d["rank"] = numbers<std::int64_t>(rank);
  d["comp_comm_overlap_pctg"] = numbers<double>(pct);
  return d;
}

py::dict launches(const hta_trace& h, const rank_list& want, bool include_memory, bool exact) {
  py::dict out;
  const double unit = unit_of(exact);
  for (const hta_rank* r : h.select(want)) {
    hta::launch_stats_options o;
    o.include_memory_events = include_memory;
    std::vector<std::int64_t> corr;
    std::vector<double> cpu, gpu, delay;
    const auto rows =
        exact ? tmod::launch_stats(tmod::device_view(r->table)) : hta::launch_stats(r->frame, o);
    for (const tmod::launch_row& l : rows) {
      corr.push_back(static_cast<std::int64_t>(l.correlation));
      cpu.push_back(static_cast<double>(l.cpu_duration) * unit);
      gpu.push_back(static_cast<double>(l.gpu_duration) * unit);
      delay.push_back(static_cast<double>(l.launch_delay) * unit);
    }
    py::dict d;
    d["correlation"] = numbers<std::int64_t>(corr);
    d["cpu_duration"] = numbers<double>(cpu);
    d["gpu_duration"] = numbers<double>(gpu);
    d["launch_delay"] = numbers<double>(delay);
    out[py::int_(r->rank)] = d;
  }
  return out;
}

/// A series' time: HTA's from the first event of all ranks (us); the exact rules' from the
/// rank's base time, in us with the fraction.
double series_ts(const hta_trace& h, const hta_rank& r, std::int64_t ts, bool exact) {
  return exact ? static_cast<double>(ts - r.table.info.base_time_ns) * 1e-3
               : static_cast<double>(ts - h.min_ts);
}

/// Queue lengths: (series columns, summary columns with the time at the full mark per stream).
py::tuple queues(const hta_trace& h, const rank_list& want, std::int64_t full, bool exact) {
  std::vector<std::int64_t> rank, stream, len, s_rank, s_stream;
  std::vector<double> ts, full_time;
  stats_columns st;
  const double unit = unit_of(exact);
  for (const hta_rank* r : h.select(want)) {
    const auto found = exact ? tmod::queue_length(tmod::device_view(r->table), {full})
                             : hta::queue_length(r->frame, {full});
    for (const tmod::stream_queue& q : found) {
      for (const tmod::queue_step& s : q.steps) {
        rank.push_back(r->rank);
        stream.push_back(q.stream);
        ts.push_back(series_ts(h, *r, s.ts, exact));
        len.push_back(s.length);
      }
      s_rank.push_back(r->rank);
      s_stream.push_back(q.stream);
      st.push(q.summary);
      full_time.push_back(static_cast<double>(q.time_full) * unit);
    }
  }
  py::dict series, summary;
  series["rank"] = numbers<std::int64_t>(rank);
  series["stream"] = numbers<std::int64_t>(stream);
  series["ts"] = numbers<double>(ts);
  series["queue_length"] = numbers<std::int64_t>(len);
  summary["rank"] = numbers<std::int64_t>(s_rank);
  summary["stream"] = numbers<std::int64_t>(s_stream);
  st.into(summary);
  summary["time_full"] = numbers<double>(full_time);
  return py::make_tuple(series, summary);
}

py::tuple bandwidth(const hta_trace& h, const rank_list& want, bool exact) {
  std::vector<std::int64_t> rank, s_rank;
  std::vector<double> ts, gbps;
  text_column name, s_name;
  stats_columns st;
  for (const hta_rank* r : h.select(want)) {
    const auto found = exact ? tmod::memory_bandwidth(r->table, tmod::device_view(r->table))
                             : hta::memory_bandwidth(r->frame);
    for (const tmod::memory_bandwidth_series& m : found) {
      for (const tmod::bandwidth_step& s : m.steps) {
        rank.push_back(r->rank);
        name.push(m.kind);
        ts.push_back(series_ts(h, *r, s.ts, exact));
        gbps.push_back(s.gbps);
      }
      s_rank.push_back(r->rank);
      s_name.push(m.kind);
      st.push(m.summary);
    }
  }
  py::dict series, summary;
  series["rank"] = numbers<std::int64_t>(rank);
  series["ts"] = numbers<double>(ts);
  series["name"] = name.take();
  series["memory_bw_gbps"] = numbers<double>(gbps);
  summary["rank"] = numbers<std::int64_t>(s_rank);
  summary["name"] = s_name.take();
  st.into(summary);
  return py::make_tuple(series, summary);
}

/// One rank's frame as HTA's DataFrame holds it, names and categories as ids of `symbols`.
py::dict frame_columns(const hta_trace& h, std::int64_t rank) {
  const hta_rank& r = h.one(rank);
  const hta::frame& f = r.frame;
  const std::size_t n = f.rows.size();
  std::vector<std::int64_t> index(n), ts(n), dur(n), end(n), name(n), cat(n), pid(n), tid(n),
      stream(n), corr(n), index_corr(n), iteration(n);
  std::vector<double> bw(n);
  auto id_of = [&](std::string_view s) { return h.symbol(s); };
  const std::vector<std::optional<std::int64_t>> it = hta::iteration_of_rows(f);
  for (std::size_t k = 0; k < n; ++k) {
    const hta::row& x = f.rows[k];
    const event& e = r.table.events[x.event];
    index[k] = r.id(x.event);
    ts[k] = x.ts - h.min_ts;
    dur[k] = x.end - x.ts;
    end[k] = x.end;  // (HTA's `end` is not shifted by the alignment)
    name[k] = id_of(x.name);
    cat[k] = id_of(x.cat);
    pid[k] = tmod::event_table::is_string_key(static_cast<std::uint64_t>(e.pid)) ? -1 : e.pid;
    tid[k] = tmod::event_table::is_string_key(e.tid) ? -1 : static_cast<std::int64_t>(e.tid);
    stream[k] = x.stream;
    corr[k] = x.correlation;
    index_corr[k] = x.partner >= 0        ? r.id(f.rows[static_cast<std::size_t>(x.partner)].event)
                    : x.correlation == -1 ? -1
                                          : 0;
    iteration[k] = it[k].value_or(-1);
    bw[k] = x.memory_bw;
  }
  py::dict d;
  d["index"] = numbers<std::int64_t>(index);
  d["ts"] = numbers<std::int64_t>(ts);
  d["dur"] = numbers<std::int64_t>(dur);
  d["end"] = numbers<std::int64_t>(end);
  d["name"] = numbers<std::int64_t>(name);
  d["cat"] = numbers<std::int64_t>(cat);
  d["pid"] = numbers<std::int64_t>(pid);
  d["tid"] = numbers<std::int64_t>(tid);
  d["stream"] = numbers<std::int64_t>(stream);
  d["correlation"] = numbers<std::int64_t>(corr);
  d["index_correlation"] = numbers<std::int64_t>(index_corr);
  d["iteration"] = numbers<std::int64_t>(iteration);
  d["memory_bw_gbps"] = numbers<double>(bw);
  return d;
}

/// The steps whose ProfilerStep rows are in the frames, in order.
std::vector<std::int64_t> steps(const hta_trace& h) {
  std::set<std::int64_t> out;
  for (const auto& r : h.ranks)
    for (const std::int64_t s : hta::trace_steps(r->frame)) out.insert(s);
  return {out.begin(), out.end()};
}

/// One rank's totals per name for HTA's trace diff: {step: (names, counts, durations) per
/// device side}.
py::dict op_totals(const hta_trace& h, std::int64_t rank, std::optional<std::int64_t> iteration,
                   const std::string& device, bool short_names) {
  const tmod::step_totals st = hta::step_totals_of(h.one(rank).frame, short_names);
  tmod::diff_selection s;
  s.iteration = iteration;
  s.short_names = short_names;
  s.device = device == "cpu"   ? tmod::diff_device::cpu
             : device == "gpu" ? tmod::diff_device::gpu
                               : tmod::diff_device::all;
  const tmod::op_totals t = st.select(s);
  py::list names;
  std::vector<std::int64_t> counts, durations;
  for (const auto& [name, x] : t.by_name) {
    names.append(text(name));
    counts.push_back(static_cast<std::int64_t>(x.count));
    durations.push_back(x.duration);
  }
  py::dict d;
  d["name"] = names;
  d["counts"] = numbers<std::int64_t>(counts);
  d["total_duration"] = numbers<std::int64_t>(durations);
  return d;
}

py::dict critical_path(const hta_trace& h, std::int64_t rank, const std::string& annotation,
                       std::size_t instance) {
  const hta_rank& r = h.one(rank);
  const tmod::critical_path cp = [&] {
    const py::gil_scoped_release unlocked;
    return hta::critical_path_of(r.table, r.frame,
                                 {.annotation = annotation, .instance = instance});
  }();
  py::dict d = critical_path_dict(cp, 1000, r.ids());  // (HTA's us and ids)
  d["found"] = annotation.empty() || cp.window.has_value();
  return d;
}

/// HTA's frequent kernel sequences of one rank: for each event whose name contains `op_name`
/// and lies at the least depth any such event has (in HTA's tree: tracemodel's with HTA's ties,
/// kernels under their launches), with at least `min_len` kernels below it: its name and its
/// kernels' names in start order, the kernels' time, its own, and the events of the pattern
/// (HTA's ids and the table's).
py::list kernel_sequences(const hta_trace& h, std::int64_t rank, const std::string& op_name,
                          std::size_t min_len) {
  const hta_rank& r = h.one(rank);
  const hta::frame& f = r.frame;
  tmod::event_table t = r.table;  // (the rank's own table stays without a tree)
  std::vector<std::int64_t> row_of(t.size(), -1), depth(t.size(), -1);
  {
    const py::gil_scoped_release unlocked;
    tmod::analyze(t, hta::tree{});
    for (std::size_t k = 0; k < f.rows.size(); ++k)
      row_of[f.rows[k].event] = static_cast<std::int64_t>(k);
    for (tmod::event_index e = 0; e < t.size(); ++e) {  // (parents first: walked up, memoized)
      std::vector<tmod::event_index> chain;
      tmod::event_index x = e;
      while (x != tmod::no_event && depth[x] < 0) {
        chain.push_back(x);
        x = t.events[x].parent;
      }
      std::int64_t d = x == tmod::no_event ? -1 : depth[x];
      for (auto c = chain.rbegin(); c != chain.rend(); ++c) depth[*c] = ++d;
    }
  }
  std::int64_t least = std::numeric_limits<std::int64_t>::max();
  std::vector<tmod::event_index> candidates;
  for (const hta::row& x : f.rows)
    if (x.name.find(op_name) != std::string_view::npos) {
      candidates.push_back(x.event);
      least = std::min(least, depth[x.event]);
    }
  py::list out;
  for (const tmod::event_index root : candidates) {
    if (depth[root] != least) continue;
    std::vector<tmod::event_index> below, stack{root};
    while (!stack.empty()) {
      const tmod::event_index e = stack.back();
      stack.pop_back();
      if (e != root) below.push_back(e);
      for (const tmod::event_index c : t.children_of(e)) stack.push_back(c);
    }
    std::vector<const hta::row*> kernels;
    for (const tmod::event_index e : below)
      if (row_of[e] >= 0 && f.rows[static_cast<std::size_t>(row_of[e])].stream != -1)
        kernels.push_back(&f.rows[static_cast<std::size_t>(row_of[e])]);
    if (kernels.size() < min_len || row_of[root] < 0) continue;
    std::stable_sort(kernels.begin(), kernels.end(),
                     [](const hta::row* a, const hta::row* b) { return a->ts < b->ts; });
    const hta::row& op = f.rows[static_cast<std::size_t>(row_of[root])];
    std::string pattern(op.name);
    std::int64_t gpu = 0;
    py::list ids, events;
    ids.append(r.id(root));
    events.append(root);
    for (const hta::row* k : kernels) {
      pattern += "|";
      pattern += k->name;
      gpu += k->end - k->ts;
    }
    for (const tmod::event_index e : below) {
      ids.append(r.id(e));
      events.append(e);
    }
    out.append(py::make_tuple(pattern, gpu, op.end - op.ts, ids, events));
  }
  return out;
}

/// Writes `rank`'s trace with HTA's critical path of (`annotation`, `instance`) drawn on it
/// (formats/critical_path_overlay.hpp) to `path`.
void write_critical_path_overlay(const hta_trace& h, std::int64_t rank,
                                 const std::string& annotation, std::size_t instance,
                                 const std::string& path) {
  const hta_rank& r = h.one(rank);
  about_file(path, [&] {
    const py::gil_scoped_release unlocked;
    const tmod::critical_path cp =
        hta::critical_path_of(r.table, r.frame, {.annotation = annotation, .instance = instance});
    tmod::write_critical_path_overlay(r.table, cp, path);
    return 0;
  });
}

/// Writes `rank`'s trace to `path` with each of `marks`' events (table indices) given the
/// argument `key` = its value.
void write_marked(const hta_trace& h, std::int64_t rank, const std::string& path,
                  const std::string& key,
                  const std::vector<std::pair<std::uint32_t, std::string>>& marks) {
  const hta_rank& r = h.one(rank);
  tmod::export_view v{r.table};
  for (const auto& [e, value] : marks)
    if (e < r.table.size()) v.marks.push_back({e, key, value});
  about_file(path, [&] {
    tmod::write_chrome_trace_file(v, path);
    return 0;
  });
}

/// Writes each chosen rank's trace with its queue lengths and memory bandwidth as counter
/// tracks; returns the files written.
std::vector<std::string> with_counters(const hta_trace& h, const rank_list& want,
                                       const std::string& suffix, bool queue, bool bw) {
  std::vector<std::string> written;
  for (const hta_rank* r : h.select(want)) {
    // HTA's counters: "Queue Length" per stream (the stream as the counter's id), and each
    // copy kind's bandwidth under the kind's name, at the file's own times.
    const std::int64_t base = r->table.info.base_time_ns;
    std::vector<tmod::counter_series> series;
    if (queue)
      for (const tmod::stream_queue& q : hta::queue_length(r->frame)) {
        tmod::counter_series& c = series.emplace_back();
        c.track = c.value_name = "Queue Length";
        c.process = q.device < 0 ? 0 : q.device;
        c.id = q.stream;
        c.counts = true;
        for (const tmod::queue_step& x : q.steps)
          c.points.push_back({x.ts * 1000 + base, static_cast<double>(x.length)});
      }
    if (bw)
      for (const tmod::memory_bandwidth_series& m : hta::memory_bandwidth(r->frame)) {
        tmod::counter_series& c = series.emplace_back();
        c.track = c.value_name = m.kind;
        for (const tmod::bandwidth_step& x : m.steps)
          c.points.push_back({x.ts * 1000 + base, x.gbps});
      }
    tmod::export_view v{r->table};
    v.counters = std::move(series);
    std::string out = r->path;
    const auto dot = out.find(".json");
    out = (dot == std::string::npos ? out : out.substr(0, dot)) + suffix + ".json.gz";
    about_file(out, [&] {
      tmod::write_chrome_trace_file(v, out);
      return 0;
    });
    written.push_back(out);
  }
  return written;
}

}  // namespace

void bind_hta(py::module_& m) {
  m.def("kernel_types", &kernel_types, py::arg("times"), py::arg("seen"), py::arg("exact"));
  py::class_<hta_trace>(m, "HtaTrace")
      .def(py::init<const std::vector<std::pair<std::int64_t, std::string>>&, bool, bool,
                    std::optional<bool>, std::int64_t>(),
           py::arg("files"), py::arg("include_last_profiler_step"), py::arg("filter"),
           py::arg("drop_last") = py::none(), py::arg("first_place") = 0)
      .def_property_readonly("step_names",
                             [](const hta_trace& h) {
                               return std::vector<std::string>(h.step_names.begin(),
                                                               h.step_names.end());
                             })
      .def_property_readonly("rows",
                             [](const hta_trace& h) {
                               std::size_t n = 0;
                               for (const auto& r : h.ranks) n += r->frame.rows.size();
                               return n;
                             })
      .def_property_readonly("table_bytes",
                             [](const hta_trace& h) {
                               std::size_t n = 0;
                               for (const auto& r : h.ranks) n += r->table.memory_bytes();
                               return n;
                             })
      .def("class_sets", &class_sets)
      .def_property_readonly("ranks",
                             [](const hta_trace& h) {
                               std::vector<std::int64_t> out;
                               for (const auto& r : h.ranks) out.push_back(r->rank);
                               return out;
                             })
      .def_property_readonly("paths",
                             [](const hta_trace& h) {
                               py::dict d;
                               for (const auto& r : h.ranks) d[py::int_(r->rank)] = r->path;
                               return d;
                             })
      .def_readwrite("min_ts", &hta_trace::min_ts)  // (a cluster's: over every worker's ranks)
      .def("repairs", [](const hta_trace& h) { return repairs_dict(h.repairs); })
      .def("temporal", &temporal)
      .def("idle", &idle)
      .def("kernels", &kernels)
      .def("annotations", &annotations)
      .def("overlap", &overlap)
      .def("launches", &launches)
      .def("queues", &queues)
      .def("bandwidth", &bandwidth)
      .def("frame", &frame_columns)
      .def("has_file_ids",
           [](const hta_trace& h, std::int64_t rank) { return !h.one(rank).ids().empty(); })
      .def("symbols",
           [](const hta_trace& h) {
             py::list out;
             for (const std::string_view x : h.symbols) out.append(text(x));
             return out;
           })
      .def("steps", &steps)
      .def("op_totals", &op_totals)
      .def("critical_path", &critical_path)
      .def("with_counters", &with_counters)
      .def("kernel_sequences", &kernel_sequences)
      .def("write_marked", &write_marked)
      .def("write_critical_path_overlay", &write_critical_path_overlay);
}

}  // namespace tracemodel_py
