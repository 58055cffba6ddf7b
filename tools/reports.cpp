// tracemodel stats, tree, patterns and gpu: the reports.
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <regex>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include <tracemodel/algo/comm_comp_overlap.hpp>
#include <tracemodel/algo/critical_path.hpp>
#include <tracemodel/algo/device_time.hpp>
#include <tracemodel/algo/hta_critical_path.hpp>
#include <tracemodel/algo/kernel_type_breakdown.hpp>
#include <tracemodel/algo/key_averages.hpp>
#include <tracemodel/algo/patterns.hpp>
#include <tracemodel/algo/pytorch_patterns.hpp>
#include <tracemodel/algo/temporal_breakdown.hpp>
#include <tracemodel/algo/trace_diff.hpp>
#include <tracemodel/algo/walk.hpp>
#include <tracemodel/formats/counter_tracks.hpp>
#include <tracemodel/formats/critical_path_overlay.hpp>
#include <tracemodel/formats/device_properties.hpp>
#include <tracemodel/formats/gpu_report.hpp>
#include <tracemodel/formats/json_output.hpp>

#include "cli.hpp"
#include "report_html.hpp"

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

bool write_page(const std::string& path, const std::string& text) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  bool ok = f != nullptr && std::fwrite(text.data(), 1, text.size(), f) == text.size();
  if (f != nullptr && std::fclose(f) != 0) ok = false;
  if (!ok) std::fprintf(stderr, "tracemodel: cannot write %s\n", path.c_str());
  return ok;
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

/// `gpu`'s text tables.
void print_gpu(const options& o, const tmod::gpu_report& rep) {
  const std::string unit(rep.unit);
  std::printf("%s\n", o.hta ? "GPU time (Holistic Trace Analysis's rules), in us"
                            : ("GPU time, in " + unit).c_str());
  std::printf("%6s %14s %14s %14s %14s %7s %9s %12s\n", "rank", "idle", "compute", "non-compute",
              "kernel time", "idle%", "compute%", "non-compute%");
  for (const auto& r : rep.ranks) {
    const auto& b = r.temporal;
    std::printf("%6lld %14lld %14lld %14lld %14lld %7.2f %9.2f %12.2f\n",
                static_cast<long long>(r.rank), static_cast<long long>(b.idle),
                static_cast<long long>(b.compute), static_cast<long long>(b.non_compute),
                static_cast<long long>(b.kernel_time), b.idle_pctg, b.compute_pctg,
                b.non_compute_pctg);
  }
  std::printf("\nkernel types (all ranks)\n");
  if (rep.kernel_types.empty()) std::printf("  (no device work)\n");
  for (const auto& r : rep.kernel_types)
    std::printf("  %-58s %14lld %6.1f%%\n", r.kernel_type.c_str(), static_cast<long long>(r.sum),
                r.percentage);
  std::printf("\ncommunication hidden behind computation\n");
  for (const auto& r : rep.ranks) {
    if (r.overlap)
      std::printf("  rank %lld: %.2f%%\n", static_cast<long long>(r.rank), *r.overlap);
    else
      std::printf("  rank %lld: no communication\n", static_cast<long long>(r.rank));
  }
  if (rep.ranks.size() > 1) {
    std::printf("\nacross ranks: %zu steps and %zu collectives met on two ranks or more\n",
                rep.spread.steps.size(), rep.spread.collectives.size());
    std::printf("%6s %24s %16s\n", "rank", "collectives started last", "mean lag (ns)");
    for (const auto& r : rep.spread.stragglers)
      std::printf("%6lld %24zu %16.0f\n", static_cast<long long>(r.rank), r.last, r.mean_lag);
  }
  std::printf("\nidle time per stream\n%6s %8s %8s %-12s %14s %7s %8s %12s %12s\n", "rank",
              "device", "stream", "category", "idle", "share", "gaps", "mean", "max");
  for (const auto& r : rep.ranks)
    for (const auto& i : r.idle)
      std::printf("%6lld %8d %8lld %-12s %14lld %6.0f%% %8llu %12.2f %12.2f\n",
                  static_cast<long long>(r.rank), i.device, static_cast<long long>(i.stream),
                  std::string(tmod::idle_category_names[static_cast<int>(i.category)]).c_str(),
                  static_cast<long long>(i.idle_time), 100 * i.ratio.value_or(0),
                  static_cast<unsigned long long>(i.stats.count), i.stats.mean, i.stats.max);
}

}  // namespace

std::string gpu_json(const options& o, const tmod::gpu_report& rep) {
  std::string s;
  write_gpu_json(o, rep, [&s](std::string_view part) { s.append(part); });
  return s;
}

void write_gpu_json(const options& o, const tmod::gpu_report& rep, tmod::json_output::sink sink) {
  const std::string unit(rep.unit);
  tmod::json_output out(std::move(sink));
  out.raw("{\"policy\":").string(o.hta ? "hta" : "exact").raw(",\"unit\":").string(unit).ch(',');
  write_repairs(out, rep.repairs);
  auto number = [&](double v) {  // NaN (pandas') as null
    if (std::isnan(v))
      out.raw("null");
    else
      out.floating(v);
  };
  out.raw(",\n\"temporal_breakdown\":[");
  for (std::size_t k = 0; k < rep.ranks.size(); ++k) {
    const auto& b = rep.ranks[k].temporal;
    const bool known = b.kernel_time != 0;
    out.raw(k ? ",\n" : "\n").raw("{\"rank\":").integer(rep.ranks[k].rank);
    out.raw(",\"idle_time(").raw(unit).raw(")\":").integer(b.idle);
    out.raw(",\"compute_time(").raw(unit).raw(")\":").integer(b.compute);
    out.raw(",\"non_compute_time(").raw(unit).raw(")\":").integer(b.non_compute);
    out.raw(",\"kernel_time(").raw(unit).raw(")\":").integer(b.kernel_time);
    out.raw(",\"idle_time_pctg\":");
    number(known ? b.idle_pctg : NAN);
    out.raw(",\"compute_time_pctg\":");
    number(known ? b.compute_pctg : NAN);
    out.raw(",\"non_compute_time_pctg\":");
    number(known ? b.non_compute_pctg : NAN);
    out.ch('}');
  }
  out.raw("],\n\"kernel_type_breakdown\":[");
  for (std::size_t k = 0; k < rep.kernel_types.size(); ++k) {
    const auto& r = rep.kernel_types[k];
    out.raw(k ? ",\n" : "\n").raw("{\"kernel_type\":").string(r.kernel_type);
    out.raw(",\"sum\":").integer(r.sum).raw(",\"percentage\":");
    out.floating(r.percentage).ch('}');
  }
  out.raw("],\n\"comm_comp_overlap\":[");
  for (std::size_t k = 0; k < rep.ranks.size(); ++k) {
    out.raw(k ? ",\n" : "\n").raw("{\"rank\":").integer(rep.ranks[k].rank);
    out.raw(",\"comp_comm_overlap_pctg\":");
    number(rep.ranks[k].overlap.value_or(NAN));
    out.ch('}');
  }
  bool first = true;
  auto idle_key = [&](const tmod::gpu_rank& r, const tmod::idle_row& i) {
    out.raw(first ? "\n" : ",\n").raw("{\"rank\":").integer(r.rank);
    if (!o.hta) out.raw(",\"device\":").integer(i.device);
    out.raw(",\"stream\":").integer(i.stream).raw(",\"idle_category\":");
    out.string(tmod::idle_category_names[static_cast<int>(i.category)]);
    first = false;
  };
  out.raw("],\n\"idle_time_breakdown\":[");
  for (const auto& r : rep.ranks)
    for (const auto& i : r.idle) {
      idle_key(r, i);
      out.raw(",\"idle_time\":").integer(i.idle_time).raw(",\"idle_time_ratio\":");
      number(i.ratio.value_or(NAN));
      out.ch('}');
    }
  first = true;
  out.raw("],\n\"idle_interval_stats\":[");
  for (const auto& r : rep.ranks)
    for (const auto& i : r.idle) {
      idle_key(r, i);
      out.raw(",\"count\":").unsigned_integer(i.stats.count);
      const std::pair<const char*, double> stats[] = {
          {"mean", i.stats.mean}, {"std", i.stats.std}, {"min", i.stats.min}, {"25%", i.stats.q25},
          {"50%", i.stats.q50},   {"75%", i.stats.q75}, {"max", i.stats.max}};
      for (const auto& [name, v] : stats) {
        out.raw(",\"").raw(name).raw("\":");
        number(v);
      }
      out.ch('}');
    }
  // Kernels: by class, name, then rank (HTA's order).
  std::vector<std::pair<const tmod::kernel_row*, std::int64_t>> kernels;
  for (const auto& r : rep.ranks)
    for (const auto& k : r.kernels) kernels.emplace_back(&k, r.rank);
  std::stable_sort(kernels.begin(), kernels.end(), [](const auto& a, const auto& b) {
    const std::string_view ca = tmod::to_string(a.first->cls), cb = tmod::to_string(b.first->cls);
    if (ca != cb) return ca < cb;
    if (a.first->name != b.first->name) return a.first->name < b.first->name;
    return a.second < b.second;
  });
  out.raw("],\n\"kernel_breakdown\":[");
  for (std::size_t k = 0; k < kernels.size(); ++k) {
    const tmod::kernel_row& r = *kernels[k].first;
    out.raw(k ? ",\n" : "\n").raw("{\"rank\":").integer(kernels[k].second);
    out.raw(",\"kernel_type\":").string(tmod::to_string(r.cls)).raw(",\"name\":").string(r.name);
    if (!o.hta) out.raw(",\"count\":").unsigned_integer(r.count);
    out.raw(",\"sum (").raw(unit).raw(")\":").integer(r.sum);
    out.raw(",\"max (").raw(unit).raw(")\":").integer(r.max);
    out.raw(",\"min (").raw(unit).raw(")\":").integer(r.min);
    out.raw(",\"stddev\":").floating(r.std);
    out.raw(",\"mean (").raw(unit).raw(")\":").floating(r.mean).ch('}');
  }
  out.raw("],\n\"launch_stats\":{");
  for (std::size_t k = 0; k < rep.ranks.size(); ++k) {
    const auto& r = rep.ranks[k];
    out.raw(k ? ",\n" : "\n").string(std::to_string(r.rank)).raw(":[");
    for (std::size_t j = 0; j < r.launches.size(); ++j) {
      const tmod::launch_row& l = r.launches[j];
      out.raw(j ? ",\n" : "\n").raw("{\"correlation\":").unsigned_integer(l.correlation);
      out.raw(",\"cpu_duration\":").integer(l.cpu_duration);
      out.raw(",\"gpu_duration\":").integer(l.gpu_duration);
      out.raw(",\"launch_delay\":").integer(l.launch_delay);
      if (!o.hta) {
        out.raw(",\"short_kernel\":").raw(l.short_kernel ? "true" : "false");
        out.raw(",\"runtime_outlier\":").raw(l.runtime_outlier ? "true" : "false");
        out.raw(",\"delay_outlier\":").raw(l.delay_outlier ? "true" : "false");
      }
      out.ch('}');
    }
    out.ch(']');
  }
  out.raw("},\n\"queue_length_summary\":[");
  auto stats = [&](const char* prefix, const tmod::interval_stats& st) {
    for (const auto& [name, v] : tmod::describe_fields(st)) {
      out.raw(",\"").raw(prefix).ch('/').raw(name).raw("\":");
      number(v);
    }
  };
  first = true;
  for (const auto& r : rep.ranks)
    for (const auto& q : r.queues) {
      out.raw(first ? "\n" : ",\n").raw("{\"rank\":").integer(r.rank);
      if (!o.hta) out.raw(",\"device\":").integer(q.device);
      out.raw(",\"stream\":").integer(q.stream);
      stats("queue_length", q.summary);
      out.raw(",\"time_at_max_queue_length\":").integer(q.time_full).ch('}');
      first = false;
    }
  out.raw("],\n\"memory_bw_summary\":[");
  first = true;
  for (const auto& r : rep.ranks)
    for (const auto& m : r.bandwidth) {
      out.raw(first ? "\n" : ",\n").raw("{\"rank\":").integer(r.rank);
      out.raw(",\"name\":").string(m.kind);
      stats("memory_bw_gbps", m.summary);
      out.ch('}');
      first = false;
    }
  out.raw("],\n\"gpu_user_annotation_breakdown\":");
  bool any_annotations = false;
  for (const auto& r : rep.ranks) any_annotations = any_annotations || r.has_gpu_annotations;
  if (!any_annotations) {
    out.raw("null");  // HTA's None: the trace has no GPU annotations
  } else {
    out.ch('[');
    first = true;
    for (const auto& r : rep.ranks)
      for (const auto& a : r.gpu_annotations) {
        out.raw(first ? "\n" : ",\n").raw("{\"rank\":").integer(r.rank);
        out.raw(",\"name\":").string(a.name);
        if (!o.hta) out.raw(",\"count\":").unsigned_integer(a.count);
        out.raw(",\"sum (").raw(unit).raw(")\":").integer(a.sum);
        out.raw(",\"max (").raw(unit).raw(")\":").integer(a.max);
        out.raw(",\"min (").raw(unit).raw(")\":").integer(a.min);
        out.raw(",\"stddev\":").floating(a.std);
        out.raw(",\"mean (").raw(unit).raw(")\":").floating(a.mean).ch('}');
        first = false;
      }
    out.ch(']');
  }
  out.raw(",\n\"rank_spread\":{\"unit\":\"ns\"");
  for (const auto& [key, rows] :
       {std::pair<const char*, const std::vector<tmod::spread_row>*>{"steps", &rep.spread.steps},
        {"collectives", &rep.spread.collectives}}) {
    out.raw(",\"").raw(key).raw("\":[");
    for (std::size_t k = 0; k < rows->size(); ++k) {
      const tmod::spread_row& r = (*rows)[k];
      out.raw(k ? ",\n" : "\n").raw("{\"name\":").string(r.key);
      out.raw(",\"ranks\":").unsigned_integer(r.ranks);
      out.raw(",\"first_start\":").integer(r.first_start);
      out.raw(",\"start_spread\":").integer(r.start_spread);
      out.raw(",\"min_duration\":").integer(r.min_duration);
      out.raw(",\"max_duration\":").integer(r.max_duration);
      out.raw(",\"last_rank\":").integer(r.last_rank).ch('}');
    }
    out.ch(']');
  }
  out.raw(",\"stragglers\":[");
  for (std::size_t k = 0; k < rep.spread.stragglers.size(); ++k) {
    const tmod::straggler_row& r = rep.spread.stragglers[k];
    out.raw(k ? ",\n" : "\n").raw("{\"rank\":").integer(r.rank);
    out.raw(",\"collectives_started_last\":").unsigned_integer(r.last);
    out.raw(",\"mean_lag\":").floating(r.mean_lag).ch('}');
  }
  out.raw("]}}\n");
  out.flush();
}

tmod::gpu_report gpu_report_of(const options& o, const tmod::gpu_report_options& options) {
  tmod::gpu_report_options go = options;
  // Progress on a terminal when there are several ranks: "ranks: k/n" as each is done.
  const std::size_t files = tmod::trace_files(o.traces).size();
  if (::isatty(STDERR_FILENO) && files > 1) {
    auto done = std::make_shared<std::atomic<std::size_t>>(0);
    go.each_rank = [inner = options.each_rank, done, files](std::int64_t rank,
                                                            tmod::event_table& t) {
      if (inner) inner(rank, t);
      const std::size_t k = ++*done;
      std::fprintf(stderr, "\rranks: %zu/%zu%s", k, files, k == files ? "\n" : "");
    };
  }
  tmod::gpu_report rep = tmod::make_gpu_report(o.traces, go);
  report_repairs(o.traces.size() == 1 ? o.traces[0] : std::to_string(rep.ranks.size()) + " ranks",
                 rep.repairs);
  return rep;
}

int cmd_gpu(const options& o) {
  tmod::gpu_report_options go;
  go.hta = o.hta;
  go.series = o.json;  // the text tables show summaries only
  if (!o.counters.empty()) {
    std::filesystem::create_directories(o.counters);
    go.each_rank = [&](std::int64_t rank, tmod::event_table& t) {
      tmod::write_chrome_trace_file(
          t, o.counters + "/rank-" + std::to_string(rank) + ".counters.json",
          tmod::counter_tracks(tmod::queue_length(t), tmod::memory_bandwidth(t)));
    };
  }
  const tmod::gpu_report rep = gpu_report_of(o, go);
  if (o.json)
    write_gpu_json(o, rep, [](std::string_view part) {  // streamed: no copy of the whole
      std::fwrite(part.data(), 1, part.size(), stdout);
    });
  else
    print_gpu(o, rep);
  return 0;
}

namespace {

/// One side of `diff`: its files, each rank's totals, and what reading repaired.
struct diff_side {
  std::string path;
  std::vector<std::pair<std::int64_t, tmod::step_totals>> ranks;
  tmod::anomaly_counts repairs;
  tmod::step_totals chosen;               ///< of the rank(s) compared
  std::optional<std::int64_t> rank;       ///< the rank compared; empty: every rank summed
  std::optional<std::int64_t> iteration;  ///< the step compared; empty: every event
  std::optional<tmod::gpu_report> gpu;    ///< for the page (`-o`): the device analyses
};

diff_side read_side(const options& o, const std::string& path) {
  diff_side s;
  s.path = path;
  tmod::read_options ro;
  ro.keep_file_order = o.hta;  // HTA's frame is in file order
  std::mutex m;
  auto totals = [&](std::int64_t, tmod::event_table& t) {
    {
      const std::lock_guard lock(m);
      s.repairs += t.anomalies;
    }
    return o.hta ? tmod::hta_trace_diff{}.step_totals_of(t, o.short_names)
                 : tmod::exact_trace_diff{}.step_totals_of(t, o.short_names);
  };
  if (o.output.empty()) {
    s.ranks = tmod::for_each_rank(tmod::trace_files({path}), ro, totals);
  } else {  // the page shows each side's device time too: one reading for both
    tmod::gpu_report_options go;
    static_cast<tmod::read_options&>(go) = ro;
    go.hta = o.hta;
    go.series = false;
    go.each_rank = [&](std::int64_t rank, tmod::event_table& t) {
      tmod::step_totals x = totals(rank, t);
      const std::lock_guard lock(m);
      s.ranks.emplace_back(rank, std::move(x));
    };
    s.gpu = tmod::make_gpu_report({path}, go);
    std::sort(s.ranks.begin(), s.ranks.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
  }
  if (s.ranks.empty()) throw tmod::input_error("no trace files in " + path);
  std::set<std::int64_t> steps;  // of every rank, as HTA lists a side's iterations
  for (const auto& [rank, x] : s.ranks)
    for (const auto& [n, by_device] : x.steps) steps.insert(n);
  s.rank = o.rank;
  if (!s.rank && o.hta) s.rank = s.ranks.front().first;  // HTA: the first rank
  bool found = false;
  for (const auto& [rank, x] : s.ranks)
    if (!s.rank || rank == *s.rank) {
      s.chosen += x;
      found = true;
    }
  if (!found) throw tmod::input_error(path + ": no rank " + std::to_string(*s.rank));
  s.iteration = o.iteration;
  if (!s.iteration && o.hta && !steps.empty()) s.iteration = *steps.begin();  // HTA: the first
  if (s.iteration && !steps.contains(*s.iteration))
    throw tmod::input_error(path + ": no step ProfilerStep#" + std::to_string(*s.iteration));
  report_repairs(path, s.repairs);
  return s;
}

/// `diff --json`'s object (with each side's temporal breakdown when the page is written).
std::string diff_json(const options& o, const diff_side& control, const diff_side& test,
                      const std::array<std::vector<tmod::diff_row>, 3>& rows,
                      const tmod::anomaly_counts& repairs) {
  const std::string_view unit =
      o.hta ? tmod::hta_trace_diff::unit_name : tmod::exact_trace_diff::unit_name;
  std::string s;
  tmod::json_output out = tmod::json_output::to_string(s);
  out.raw("{\"policy\":").string(o.hta ? "hta" : "exact").raw(",\"unit\":").string(unit).ch(',');
  write_repairs(out, repairs);
  for (const diff_side* side : {&control, &test}) {
    out.raw(side == &control ? ",\n\"control\":{" : ",\n\"test\":{");
    out.raw("\"path\":").string(side->path).raw(",\"rank\":");
    if (side->rank)
      out.integer(*side->rank);
    else
      out.raw("null");
    out.raw(",\"iteration\":");
    if (side->iteration)
      out.integer(*side->iteration);
    else
      out.raw("null");
    out.ch('}');
  }
  for (std::size_t d = 0; d < 3; ++d) {
    out.raw(",\n").string(tmod::diff_device_names[d]).raw(":[");
    for (std::size_t k = 0; k < rows[d].size(); ++k) {
      const tmod::diff_row& r = rows[d][k];
      out.raw(k ? ",\n" : "\n").raw("{\"name\":").string(r.name);
      out.raw(",\"control_counts\":").unsigned_integer(r.control_counts);
      out.raw(",\"control_total_duration\":").integer(r.control_total_duration);
      out.raw(",\"test_counts\":").unsigned_integer(r.test_counts);
      out.raw(",\"test_total_duration\":").integer(r.test_total_duration);
      out.raw(",\"diff_counts\":").integer(r.diff_counts);
      out.raw(",\"diff_duration\":").integer(r.diff_duration);
      out.raw(",\"counts_change_categories\":").string(std::string_view(&r.change, 1)).ch('}');
    }
    out.ch(']');
  }
  out.raw(",\n\"ops_diff\":{");
  for (std::size_t d = 0; d < 3; ++d) {
    const tmod::ops_change c = tmod::ops_diff(rows[d]);
    out.raw(d ? ",\n" : "\n").string(tmod::diff_device_names[d]).raw(":{");
    const std::pair<const char*, const std::vector<std::string>*> lists[] = {
        {"added", &c.added},
        {"deleted", &c.deleted},
        {"increased", &c.increased},
        {"decreased", &c.decreased},
        {"unchanged", &c.unchanged}};
    for (std::size_t l = 0; l < 5; ++l) {
      out.raw(l ? "," : "").string(lists[l].first).raw(":[");
      for (std::size_t k = 0; k < lists[l].second->size(); ++k)
        out.raw(k ? "," : "").string((*lists[l].second)[k]);
      out.ch(']');
    }
    out.ch('}');
  }
  out.ch('}');
  for (const diff_side* side : {&control, &test}) {
    if (!side->gpu) continue;
    out.raw(side == &control ? ",\n\"control_temporal_breakdown\":["
                             : ",\n\"test_temporal_breakdown\":[");
    for (std::size_t k = 0; k < side->gpu->ranks.size(); ++k) {
      const auto& b = side->gpu->ranks[k].temporal;
      out.raw(k ? ",\n" : "\n").raw("{\"rank\":").integer(side->gpu->ranks[k].rank);
      out.raw(",\"idle_time(").raw(unit).raw(")\":").integer(b.idle);
      out.raw(",\"compute_time(").raw(unit).raw(")\":").integer(b.compute);
      out.raw(",\"non_compute_time(").raw(unit).raw(")\":").integer(b.non_compute);
      out.raw(",\"kernel_time(").raw(unit).raw(")\":").integer(b.kernel_time);
      out.raw(",\"idle_time_pctg\":").floating(b.idle_pctg);
      out.raw(",\"compute_time_pctg\":").floating(b.compute_pctg);
      out.raw(",\"non_compute_time_pctg\":").floating(b.non_compute_pctg).ch('}');
    }
    out.ch(']');
  }
  out.raw("}\n");
  out.flush();
  return s;
}

std::string side_of(const diff_side& s) {
  return (s.rank ? "rank " + std::to_string(*s.rank) : std::string("every rank")) + ", " +
         (s.iteration ? "ProfilerStep#" + std::to_string(*s.iteration) : "every event");
}

std::string file_name(const std::string& path) { return path.substr(path.find_last_of('/') + 1); }

void print_rows(const char* title, const std::vector<tmod::diff_row>& rows, std::size_t top) {
  if (rows.empty()) return;
  std::printf("\n%s\n%-60s %9s %16s %9s %16s %16s\n", title, "name", "control", "total", "test",
              "total", "change");
  for (std::size_t k = 0; k < rows.size() && k < top; ++k) {
    const tmod::diff_row& r = rows[k];
    const std::string name = r.name.size() > 60 ? r.name.substr(0, 57) + "..." : r.name;
    std::printf("%-60s %9llu %16lld %9llu %16lld %+16lld\n", name.c_str(),
                static_cast<unsigned long long>(r.control_counts),
                static_cast<long long>(r.control_total_duration),
                static_cast<unsigned long long>(r.test_counts),
                static_cast<long long>(r.test_total_duration),
                static_cast<long long>(r.diff_duration));
  }
}

}  // namespace

int cmd_diff(const options& o) {
  const diff_side control = read_side(o, o.traces[0]);
  const diff_side test = read_side(o, o.traces[1]);
  const std::string_view unit =
      o.hta ? tmod::hta_trace_diff::unit_name : tmod::exact_trace_diff::unit_name;
  std::array<std::vector<tmod::diff_row>, 3> rows;
  for (std::size_t d = 0; d < 3; ++d) {
    tmod::diff_selection a;
    a.device = static_cast<tmod::diff_device>(d);
    tmod::diff_selection b = a;
    a.iteration = control.iteration;
    b.iteration = test.iteration;
    rows[d] = tmod::compare_totals(control.chosen.select(a), test.chosen.select(b));
  }
  tmod::anomaly_counts repairs = control.repairs;
  repairs += test.repairs;
  if (!o.json && o.output.empty()) {
    const auto d = static_cast<std::size_t>(o.device);
    const std::size_t top = o.top == 0 ? 10 : o.top;
    std::printf("trace diff (%s, %s): %s names\n  control %s (%s)\n  test    %s (%s)\n",
                o.hta ? "Holistic Trace Analysis's rules" : "exact", std::string(unit).c_str(),
                std::string(tmod::diff_device_names[d]).c_str(), control.path.c_str(),
                side_of(control).c_str(), test.path.c_str(), side_of(test).c_str());
    const tmod::ops_change c = tmod::ops_diff(rows[d]);
    std::printf(
        "  %zu names: %zu added, %zu deleted, %zu more often, %zu less often, %zu as often\n",
        rows[d].size(), c.added.size(), c.deleted.size(), c.increased.size(), c.decreased.size(),
        c.unchanged.size());
    print_rows("time grown most", tmod::top_regressions(rows[d], top), top);
    std::vector<tmod::diff_row> shrunk;
    for (const tmod::diff_row& r : rows[d])
      if (r.diff_duration < 0) shrunk.push_back(r);
    std::stable_sort(shrunk.begin(), shrunk.end(), [](const auto& a, const auto& b) {
      return a.diff_duration < b.diff_duration;
    });
    print_rows("time shrunk most", shrunk, top);
    return 0;
  }
  const std::string json = diff_json(o, control, test, rows, repairs);
  if (o.output.empty()) {
    std::fputs(json.c_str(), stdout);
    return 0;
  }
  const std::string page = diff_report_page(
      rows, *control.gpu, *test.gpu, json,
      fmt::format("tracemodel diff: {} against {}", file_name(control.path), file_name(test.path)),
      fmt::format("control {} ({}), test {} ({}); {} rules, times in {}", control.path,
                  side_of(control), test.path, side_of(test),
                  o.hta ? "Holistic Trace Analysis's" : "exact", unit),
      o.top == 0 ? 15 : o.top);
  if (!write_page(o.output, page)) return 1;
  std::printf("wrote %s\n", o.output.c_str());
  return 0;
}

tmod::critical_path critical_path_by(const options& o, const tmod::event_table& t,
                                     const tmod::critical_path_options& co) {
  return o.hta ? tmod::critical_path_of(t, co, tmod::hta_critical_path{})
               : tmod::critical_path_of(t, co);
}

int cmd_critical_path(const options& o, tmod::event_table& t) {
  tmod::critical_path_options co;
  co.annotation = o.annotation;
  co.instance = o.instance;
  const tmod::critical_path cp = critical_path_by(o, t, co);
  if (!o.annotation.empty() && !cp.window)
    throw tmod::input_error("no event named like '" + o.annotation + "' (occurrence " +
                            std::to_string(o.instance) + ")");
  std::size_t types[5] = {};
  for (const tmod::cp_edge& e : cp.edges) ++types[static_cast<std::size_t>(e.type)];
  const auto top = tmod::top_events(cp, o.top == 0 ? 10 : o.top);
  auto us = [](std::int64_t ns) { return static_cast<double>(ns) / 1000.0; };
  if (!o.output.empty()) {
    tmod::write_critical_path_overlay(t, cp, o.output);
    std::printf("wrote %s (%zu critical events)\n", o.output.c_str(), cp.events.size());
    return 0;
  }
  if (o.json) {
    std::string s;
    tmod::json_output out = tmod::json_output::to_string(s);
    out.raw("{\"policy\":").string(o.hta ? "hta" : "exact").raw(",\"unit\":\"us\",");
    write_repairs(out, t.anomalies);
    out.raw(",\"annotation\":").string(o.annotation).raw(",\"instance_id\":");
    out.unsigned_integer(o.instance).raw(",\"success\":").raw(cp.acyclic ? "true" : "false");
    out.raw(",\"nodes\":").unsigned_integer(cp.nodes.size());
    out.raw(",\"edges\":").unsigned_integer(cp.edges.size()).raw(",\"edge_types\":{");
    bool first = true;
    for (std::size_t k = 0; k < 5; ++k) {
      if (types[k] == 0) continue;
      out.raw(first ? "" : ",").string(tmod::cp_edge_type_names[k]).ch(':');
      out.unsigned_integer(types[k]);
      first = false;
    }
    out.raw("},\"critical_path_events\":").unsigned_integer(cp.events.size());
    out.raw(",\"critical_path_length_us\":").floating(us(cp.length)).raw(",\"bound_by_us\":{");
    first = true;
    for (const auto& [cause, ns] : cp.bound_by) {
      out.raw(first ? "" : ",").string(cause).ch(':').floating(us(ns));
      first = false;
    }
    out.raw("},\"top_events\":[");
    for (std::size_t k = 0; k < top.size(); ++k) {
      const auto& e = t.events[top[k].first];
      out.raw(k ? ",\n" : "\n").raw("{\"name\":").string(t.name(e)).raw(",\"ts_ns\":");
      out.integer(e.start_ns).raw(",\"on_path_us\":").floating(us(top[k].second)).ch('}');
    }
    out.raw("]}\n");
    out.flush();
    std::fputs(s.c_str(), stdout);
    return 0;
  }
  std::printf("critical path (%s rules) of %s\n", o.hta ? "HTA's" : "exact",
              o.annotation.empty() ? "the whole trace"
                                   : (o.annotation + " #" + std::to_string(o.instance)).c_str());
  if (cp.window)
    std::printf("  window %lld to %lld ns\n", static_cast<long long>(cp.window->first),
                static_cast<long long>(cp.window->second));
  std::printf(
      "  %zu nodes, %zu edges: %zu operator, %zu dependency, %zu launch, %zu kernel to "
      "kernel, %zu sync%s\n",
      cp.nodes.size(), cp.edges.size(), types[0], types[1], types[2], types[3], types[4],
      cp.acyclic ? "" : " (a cycle: its nodes are left out)");
  std::printf("  length %.3f us over %zu events\n", us(cp.length), cp.events.size());
  for (const auto& [cause, ns] : cp.bound_by)
    if (!cause.empty())
      std::printf(
          "  %-28s %14.3f us %6.2f%%\n", cause.c_str(), us(ns),
          cp.length > 0 ? 100.0 * static_cast<double>(ns) / static_cast<double>(cp.length) : 0.0);
  std::printf("\ntop contributors\n");
  for (const auto& [i, ns] : top) {
    std::string name(t.name(i));
    if (name.size() > 70) name = name.substr(0, 67) + "...";
    std::printf("  %14.3f us  %s\n", us(ns), name.c_str());
  }
  return 0;
}

int cmd_critical_path_of_rank(const options& o) {
  const std::vector<std::string> files = tmod::trace_files({o.trace});
  // Each file's rank first (cheap: the ranks' tables are dropped at once), then the one asked.
  tmod::read_options ro;
  ro.keep_file_order = o.hta;  // HTA's frame is in file order
  const auto ranks =
      tmod::for_each_rank(files, ro, [](std::int64_t, tmod::event_table&) { return 0; });
  if (ranks.empty()) throw tmod::input_error("no trace files in " + o.trace);
  const std::int64_t want = o.rank.value_or(ranks.front().first);
  int status = -1;
  (void)tmod::for_each_rank(files, ro, [&](std::int64_t rank, tmod::event_table& t) {
    if (rank != want) return 0;
    report_repairs(o.trace + " (rank " + std::to_string(rank) + ")", t.anomalies);
    status = cmd_critical_path(o, t);
    return 0;
  });
  if (status < 0) throw tmod::input_error("no rank " + std::to_string(want) + " in " + o.trace);
  return status;
}

}  // namespace tracemodel_cli
