// tracemodel stats, tree, patterns and gpu: the reports.
#include <cstdio>
#include <map>
#include <optional>
#include <regex>
#include <string>
#include <tuple>
#include <vector>

#include <tracemodel/algo/comm_comp_overlap.hpp>
#include <tracemodel/algo/device_time.hpp>
#include <tracemodel/algo/kernel_type_breakdown.hpp>
#include <tracemodel/algo/key_averages.hpp>
#include <tracemodel/algo/patterns.hpp>
#include <tracemodel/algo/pytorch_patterns.hpp>
#include <tracemodel/algo/temporal_breakdown.hpp>
#include <tracemodel/algo/walk.hpp>
#include <tracemodel/formats/device_properties.hpp>
#include <tracemodel/formats/json_output.hpp>
#include <tracemodel/formats/ranks.hpp>

#include "cli.hpp"

namespace tracemodel_cli {

namespace {
/// A thread id as the file wrote it, as text.
std::string tid_text(const tmod::event_table& t, std::uint64_t k) {
  return tmod::event_table::is_string_key(k) ? std::string(t.key_label(k))
                                             : std::to_string(static_cast<std::int64_t>(k));
}
}  // namespace

int cmd_stats(const options& o, tmod::event_table& t) {
  const auto rows = tmod::key_averages(t, {.group = o.group, .sort = o.sort});
  if (!o.json) {
    std::fputs(tmod::format_key_averages(rows, o.top).c_str(), stdout);
    return 0;
  }
  std::string s;
  tmod::json_output out = tmod::json_output::to_string(s);
  out.ch('{');
  write_repairs(out, t.anomalies);
  out.raw(",\"rows\":[");
  const std::size_t n = o.top == 0 || o.top > rows.size() ? rows.size() : o.top;
  for (std::size_t i = 0; i < n; ++i) {
    const auto& r = rows[i];
    out.raw(i ? ",\n" : "\n").raw("{\"key\":").string(r.key()).raw(",\"count\":");
    out.unsigned_integer(r.count).raw(",\"total_ns\":").integer(r.total_ns);
    out.raw(",\"self_ns\":").integer(r.self_ns);
    out.raw(",\"device_total_ns\":").integer(r.device_total_ns);
    out.raw(",\"self_device_ns\":").integer(r.self_device_ns);
    out.raw(",\"on_device\":").raw(r.device_activities ? "true" : "false").ch('}');
  }
  out.raw("\n]}\n");
  out.flush();
  std::fputs(s.c_str(), stdout);
  return 0;
}

int cmd_tree(const options& o, tmod::event_table& t) {
  if (o.json) {
    std::string s;
    tmod::json_output out = tmod::json_output::to_string(s);
    out.ch('{');
    write_repairs(out, t.anomalies);
    out.raw(",\"events\":[");
    for (std::size_t i = 0; i < t.size(); ++i) {
      const auto& e = t.events[i];
      const std::int64_t end = e.end_ns();
      out.raw(i ? ",\n" : "\n")
          .raw("{\"id\":")
          .unsigned_integer(i)
          .raw(",\"name\":")
          .string(t.name(e));
      out.raw(",\"kind\":")
          .string(tmod::default_schema::kind_names[e.fields.index()])
          .raw(",\"tid\":");
      write_tid(out, t, e.tid);
      out.raw(",\"ts_ns\":").integer(e.start_ns).raw(",\"dur_ns\":");
      out.integer(end == tmod::no_end_ns || end < e.start_ns ? 0 : end - e.start_ns)
          .raw(",\"parent\":");
      if (e.parent == tmod::no_event)
        out.raw("null");
      else
        out.unsigned_integer(e.parent);
      out.ch('}');
      if (s.size() > (1 << 20)) {
        out.flush();
        std::fputs(s.c_str(), stdout);
        s.clear();
      }
    }
    out.raw("\n]}\n");
    out.flush();
    std::fputs(s.c_str(), stdout);
    return 0;
  }
  // Text: roots grouped by thread, in order of first appearance.
  std::map<std::pair<std::int64_t, std::uint64_t>, std::vector<tmod::event_index>> by_thread;
  std::vector<std::pair<std::int64_t, std::uint64_t>> order;
  for (tmod::event_index r : tmod::roots(t)) {
    const auto key = std::make_pair(t.events[r].pid, t.events[r].tid);
    auto [it, inserted] = by_thread.try_emplace(key);
    if (inserted) order.push_back(key);
    it->second.push_back(r);
  }
  for (const auto& key : order) {
    std::printf("thread %s/%s\n", tid_text(t, static_cast<std::uint64_t>(key.first)).c_str(),
                tid_text(t, key.second).c_str());
    tmod::walk_preorder(t, by_thread[key], [&](tmod::event_index i, std::uint32_t depth) {
      if (o.depth && depth >= *o.depth) return false;
      const auto& e = t.events[i];
      std::printf("%*s%s  %s\n", static_cast<int>(2 * depth + 2), "",
                  std::string(t.name(e)).c_str(), tmod::format_duration(e.duration_ns()).c_str());
      return true;
    });
  }
  return 0;
}

std::string regex_error_of(const std::string& pattern) {
  try {
    const std::regex check(pattern);
  } catch (const std::regex_error& e) {
    return e.what();
  }
  return {};
}

int cmd_patterns(const options& o, tmod::event_table& t) {
  tmod::pattern_context ctx = tmod::context_of(t, tmod::device_properties(t));
  ctx.framework_prefix = o.framework_prefix;
  auto builtin = tmod::pytorch_patterns({.for_loop_indexing = o.for_loop});
  auto by_name = tmod::name_pattern(o.name_regex.value_or(""));
  by_name.enabled = o.name_regex.has_value();
  const tmod::tree_view view(t);
  auto results = std::apply(
      [&](auto&... p) { return tmod::find_patterns(view, ctx, p..., by_name); }, builtin);
  if (!o.name_regex) results.pop_back();
  if (!o.json) {
    std::fputs(tmod::format_pattern_report(results).c_str(), stdout);
    return 0;
  }
  std::string s;
  tmod::json_output out = tmod::json_output::to_string(s);
  out.ch('{');
  write_repairs(out, t.anomalies);
  out.raw(",\"patterns\":[");
  for (std::size_t k = 0; k < results.size(); ++k) {
    const auto& r = results[k];
    out.raw(k ? ",\n" : "\n").raw("{\"name\":").string(r.name);
    if (r.skipped) {
      out.raw(",\"skipped\":").string(*r.skipped).ch('}');
      continue;
    }
    out.raw(",\"matches\":[");
    for (std::size_t m = 0; m < r.matches.size(); ++m) {
      const auto& e = t.events[r.matches[m]];
      out.raw(m ? ",\n" : "\n").raw("{\"name\":").string(t.name(e)).raw(",\"tid\":");
      write_tid(out, t, e.tid);
      out.raw(",\"ts_ns\":")
          .integer(e.start_ns)
          .raw(",\"location\":")
          .string(tmod::location_of(view, r, m))
          .ch('}');
    }
    out.raw("]}");
  }
  out.raw("\n]}\n");
  out.flush();
  std::fputs(s.c_str(), stdout);
  return 0;
}

void report_repairs(const std::string& trace, const tmod::anomaly_counts& a) {
  if (a.total() == 0) return;
  std::string what;
  for (std::size_t k = 0; k < a.n.size(); ++k) {
    if (a.n[k] == 0) continue;
    what += (what.empty() ? "" : ", ") + std::to_string(a.n[k]) + " " +
            std::string(tmod::anomaly_names[k]);
  }
  std::fprintf(stderr, "tracemodel: %s: repaired %llu: %s\n", trace.c_str(),
               static_cast<unsigned long long>(a.total()), what.c_str());
}

void write_repairs(tmod::json_output& out, const tmod::anomaly_counts& a) {
  out.raw("\"repairs\":{");
  bool first = true;
  for (std::size_t k = 0; k < a.n.size(); ++k) {
    if (a.n[k] == 0) continue;
    out.raw(first ? "" : ",").string(tmod::anomaly_names[k]).ch(':').unsigned_integer(a.n[k]);
    first = false;
  }
  out.ch('}');
}

namespace {
/// What `gpu` keeps of a rank once its table is gone.
struct rank_gpu {
  std::vector<tmod::device_interval> intervals[2];  // HTA: [0] all steps, [1] the last dropped
  std::vector<std::string> steps;                   // HTA: its ProfilerStep#N names
  tmod::anomaly_counts repairs;
};
}  // namespace

int cmd_gpu(const options& o) {
  const std::vector<std::string> files = tmod::trace_files(o.traces);
  if (files.empty()) {
    std::fprintf(stderr, "tracemodel: no trace files in the paths given\n");
    return 1;
  }
  auto ranks = tmod::for_each_rank(files, {}, [&](std::int64_t, tmod::event_table& t) {
    rank_gpu r;
    r.repairs = t.anomalies;
    if (o.hta) {
      r.intervals[0] = tmod::device_intervals(t, tmod::hta_device_time{});
      r.intervals[1] = tmod::device_intervals(t, tmod::hta_device_time{.drop_last_step = true});
      r.steps = tmod::hta_step_names(t);
    } else {
      r.intervals[0] = tmod::device_intervals(t);
    }
    return r;
  });
  // HTA drops the last step when the ranks together name two or more steps.
  std::vector<std::string> steps;
  tmod::anomaly_counts repairs;
  for (const auto& [rank, r] : ranks) {
    steps.insert(steps.end(), r.steps.begin(), r.steps.end());
    repairs += r.repairs;
  }
  std::sort(steps.begin(), steps.end());
  const bool drop = std::unique(steps.begin(), steps.end()) - steps.begin() >= 2;
  std::vector<std::vector<tmod::device_interval>> iv;
  for (auto& [rank, r] : ranks) iv.push_back(std::move(r.intervals[drop ? 1 : 0]));
  report_repairs(files.size() == 1 ? files[0] : std::to_string(files.size()) + " traces", repairs);

  const std::string unit(o.hta ? tmod::hta_device_time::unit_name
                               : tmod::exact_device_time::unit_name);
  std::vector<tmod::temporal_breakdown_row> temporal;
  std::vector<std::optional<double>> overlap;
  for (const auto& v : iv) {
    temporal.push_back(tmod::temporal_breakdown(v));
    overlap.push_back(tmod::comm_comp_overlap(v));
  }
  const std::vector<tmod::kernel_type_row> types = tmod::kernel_type_breakdown(iv);

  if (!o.json) {
    std::printf("%s\n", o.hta ? "GPU time (Holistic Trace Analysis's rules), in us"
                              : ("GPU time, in " + unit).c_str());
    std::printf("%6s %14s %14s %14s %14s %7s %9s %12s\n", "rank", "idle", "compute", "non-compute",
                "kernel time", "idle%", "compute%", "non-compute%");
    for (std::size_t k = 0; k < ranks.size(); ++k) {
      const auto& b = temporal[k];
      std::printf("%6lld %14lld %14lld %14lld %14lld %7.2f %9.2f %12.2f\n",
                  static_cast<long long>(ranks[k].first), static_cast<long long>(b.idle),
                  static_cast<long long>(b.compute), static_cast<long long>(b.non_compute),
                  static_cast<long long>(b.kernel_time), b.idle_pctg, b.compute_pctg,
                  b.non_compute_pctg);
    }
    std::printf("\nkernel types (all ranks)\n");
    if (types.empty()) std::printf("  (no device work)\n");
    for (const auto& r : types)
      std::printf("  %-58s %14lld %6.1f%%\n", r.kernel_type.c_str(), static_cast<long long>(r.sum),
                  r.percentage);
    std::printf("\ncommunication hidden behind computation\n");
    for (std::size_t k = 0; k < ranks.size(); ++k) {
      if (overlap[k])
        std::printf("  rank %lld: %.2f%%\n", static_cast<long long>(ranks[k].first), *overlap[k]);
      else
        std::printf("  rank %lld: no communication\n", static_cast<long long>(ranks[k].first));
    }
    return 0;
  }
  std::string s;
  tmod::json_output out = tmod::json_output::to_string(s);
  out.raw("{\"policy\":").string(o.hta ? "hta" : "exact").raw(",\"unit\":").string(unit).ch(',');
  write_repairs(out, repairs);
  auto pct = [&](double v, bool known) {
    if (known)
      out.floating(v);
    else
      out.raw("null");
  };
  out.raw(",\n\"temporal_breakdown\":[");
  for (std::size_t k = 0; k < ranks.size(); ++k) {
    const auto& b = temporal[k];
    const bool known = b.kernel_time != 0;
    out.raw(k ? ",\n" : "\n").raw("{\"rank\":").integer(ranks[k].first);
    out.raw(",\"idle_time(").raw(unit).raw(")\":").integer(b.idle);
    out.raw(",\"compute_time(").raw(unit).raw(")\":").integer(b.compute);
    out.raw(",\"non_compute_time(").raw(unit).raw(")\":").integer(b.non_compute);
    out.raw(",\"kernel_time(").raw(unit).raw(")\":").integer(b.kernel_time);
    out.raw(",\"idle_time_pctg\":");
    pct(b.idle_pctg, known);
    out.raw(",\"compute_time_pctg\":");
    pct(b.compute_pctg, known);
    out.raw(",\"non_compute_time_pctg\":");
    pct(b.non_compute_pctg, known);
    out.ch('}');
  }
  out.raw("],\n\"kernel_type_breakdown\":[");
  for (std::size_t k = 0; k < types.size(); ++k) {
    out.raw(k ? ",\n" : "\n").raw("{\"kernel_type\":").string(types[k].kernel_type);
    out.raw(",\"sum\":").integer(types[k].sum).raw(",\"percentage\":");
    out.floating(types[k].percentage).ch('}');
  }
  out.raw("],\n\"comm_comp_overlap\":[");
  for (std::size_t k = 0; k < ranks.size(); ++k) {
    out.raw(k ? ",\n" : "\n").raw("{\"rank\":").integer(ranks[k].first);
    out.raw(",\"comp_comm_overlap_pctg\":");
    pct(overlap[k].value_or(0), overlap[k].has_value());
    out.ch('}');
  }
  out.raw("]}\n");
  out.flush();
  std::fputs(s.c_str(), stdout);
  return 0;
}

}  // namespace tracemodel_cli
