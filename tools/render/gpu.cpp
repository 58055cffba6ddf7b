// The device-time report rendered (gpu.hpp).
#include "gpu.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <tuple>

#include <fmt/format.h>

#include <tracemodel/algo/describe.hpp>
#include <tracemodel/algo/kernel_class.hpp>

#include "../input.hpp"
#include "chart.hpp"
#include "page.hpp"

namespace tracemodel_cli {

void print_gpu(const report_view& rep) {
  const std::string unit(rep.unit);
  std::printf("%s\n", rep.hta ? "GPU time (Holistic Trace Analysis's rules), in us"
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

std::string gpu_json(const report_view& rep) {
  std::string s;
  tmod::json_output out = tmod::json_output::to_string(s);
  write_gpu_json(rep, out);
  out.flush();
  return s;
}

namespace {

/// `gpu --json`'s object, one function per array.
class gpu_json_writer {
 public:
  gpu_json_writer(const report_view& rep, tmod::json_output& out)
      : rep_(rep), out_(out), unit_(rep.unit) {}

  void write() {
    out_.raw("{\"policy\":").string(rep_.hta ? "hta" : "exact").raw(",\"unit\":").string(unit_);
    out_.ch(',');
    write_repairs(out_, rep_.repairs);
    temporal();
    kernel_types();
    overlap();
    idle();
    idle_stats();
    kernels();
    launches();
    queues();
    bandwidth();
    annotations();
    spread();
    unread();
    out_.raw("}\n");
  }

 private:
  const report_view& rep_;
  tmod::json_output& out_;
  std::string unit_;

  void number(double v) {  // NaN (pandas') as null
    if (std::isnan(v))
      out_.raw("null");
    else
      out_.floating(v);
  }
  /// ",\"name (unit)\":"
  void time_key(const char* name, const char* open = " (") {
    out_.raw(",\"").raw(name).raw(open).raw(unit_).raw(")\":");
  }
  void stats(const char* prefix, const tmod::interval_stats& st) {
    for (const auto& [name, v] : tmod::describe_fields(st)) {
      out_.raw(",\"").raw(prefix).ch('/').raw(name).raw("\":");
      number(v);
    }
  }

  void temporal() {
    out_.raw(",\n\"temporal_breakdown\":[");
    for (std::size_t k = 0; k < rep_.ranks.size(); ++k) {
      const auto& b = rep_.ranks[k].temporal;
      const bool known = b.kernel_time != 0;
      out_.raw(k ? ",\n" : "\n").raw("{\"rank\":").integer(rep_.ranks[k].rank);
      time_key("idle_time", "(");
      out_.integer(b.idle);
      time_key("compute_time", "(");
      out_.integer(b.compute);
      time_key("non_compute_time", "(");
      out_.integer(b.non_compute);
      time_key("kernel_time", "(");
      out_.integer(b.kernel_time);
      out_.raw(",\"idle_time_pctg\":");
      number(known ? b.idle_pctg : NAN);
      out_.raw(",\"compute_time_pctg\":");
      number(known ? b.compute_pctg : NAN);
      out_.raw(",\"non_compute_time_pctg\":");
      number(known ? b.non_compute_pctg : NAN);
      out_.ch('}');
    }
  }

  void kernel_types() {
    out_.raw("],\n\"kernel_type_breakdown\":[");
    for (std::size_t k = 0; k < rep_.kernel_types.size(); ++k) {
      const auto& r = rep_.kernel_types[k];
      out_.raw(k ? ",\n" : "\n").raw("{\"kernel_type\":").string(r.kernel_type);
      out_.raw(",\"sum\":").integer(r.sum).raw(",\"percentage\":");
      number(r.percentage);
      out_.ch('}');
    }
  }

  void overlap() {
    out_.raw("],\n\"comm_comp_overlap\":[");
    for (std::size_t k = 0; k < rep_.ranks.size(); ++k) {
      out_.raw(k ? ",\n" : "\n").raw("{\"rank\":").integer(rep_.ranks[k].rank);
      out_.raw(",\"comp_comm_overlap_pctg\":");
      number(rep_.ranks[k].overlap.value_or(NAN));
      out_.ch('}');
    }
  }

  void idle_key(bool first, const tmod::gpu_rank& r, const tmod::idle_row& i) {
    out_.raw(first ? "\n" : ",\n").raw("{\"rank\":").integer(r.rank);
    if (!rep_.hta) out_.raw(",\"device\":").integer(i.device);
    out_.raw(",\"stream\":").integer(i.stream).raw(",\"idle_category\":");
    out_.string(tmod::idle_category_names[static_cast<int>(i.category)]);
  }

  void idle() {
    out_.raw("],\n\"idle_time_breakdown\":[");
    bool first = true;
    for (const auto& r : rep_.ranks)
      for (const auto& i : r.idle) {
        idle_key(first, r, i);
        first = false;
        out_.raw(",\"idle_time\":").integer(i.idle_time).raw(",\"idle_time_ratio\":");
        number(i.ratio.value_or(NAN));
        out_.ch('}');
      }
  }

  void idle_stats() {
    out_.raw("],\n\"idle_interval_stats\":[");
    bool first = true;
    for (const auto& r : rep_.ranks)
      for (const auto& i : r.idle) {
        idle_key(first, r, i);
        first = false;
        out_.raw(",\"count\":").unsigned_integer(i.stats.count);
        const std::pair<const char*, double> fields[] = {
            {"mean", i.stats.mean}, {"std", i.stats.std}, {"min", i.stats.min},
            {"25%", i.stats.q25},   {"50%", i.stats.q50}, {"75%", i.stats.q75},
            {"max", i.stats.max}};
        for (const auto& [name, v] : fields) {
          out_.raw(",\"").raw(name).raw("\":");
          number(v);
        }
        out_.ch('}');
      }
  }

  /// A kernel's or an annotation's sum, max, min, stddev and mean.
  void kernel_times(const tmod::kernel_row& r) {
    time_key("sum");
    out_.integer(r.sum);
    time_key("max");
    out_.integer(r.max);
    time_key("min");
    out_.integer(r.min);
    out_.raw(",\"stddev\":").floating(r.std);
    time_key("mean");
    out_.floating(r.mean).ch('}');
  }

  void kernels() {
    // By class, name, then rank (HTA's order).
    std::vector<std::pair<const tmod::kernel_row*, std::int64_t>> all;
    for (const auto& r : rep_.ranks)
      for (const auto& k : r.kernels) all.emplace_back(&k, r.rank);
    std::stable_sort(all.begin(), all.end(), [](const auto& a, const auto& b) {
      const std::string_view ca = tmod::to_string(a.first->cls), cb = tmod::to_string(b.first->cls);
      if (ca != cb) return ca < cb;
      if (a.first->name != b.first->name) return a.first->name < b.first->name;
      return a.second < b.second;
    });
    out_.raw("],\n\"kernel_breakdown\":[");
    for (std::size_t k = 0; k < all.size(); ++k) {
      const tmod::kernel_row& r = *all[k].first;
      out_.raw(k ? ",\n" : "\n").raw("{\"rank\":").integer(all[k].second);
      out_.raw(",\"kernel_type\":").string(tmod::to_string(r.cls)).raw(",\"name\":").string(r.name);
      if (!rep_.hta) out_.raw(",\"count\":").unsigned_integer(r.count);
      kernel_times(r);
    }
  }

  void launches() {
    out_.raw("],\n\"launch_stats\":{");
    for (std::size_t k = 0; k < rep_.ranks.size(); ++k) {
      const auto& r = rep_.ranks[k];
      out_.raw(k ? ",\n" : "\n").string(std::to_string(r.rank)).raw(":[");
      for (std::size_t j = 0; j < r.launches.size(); ++j) {
        const tmod::launch_row& l = r.launches[j];
        out_.raw(j ? ",\n" : "\n").raw("{\"correlation\":").unsigned_integer(l.correlation);
        out_.raw(",\"cpu_duration\":").integer(l.cpu_duration);
        out_.raw(",\"gpu_duration\":").integer(l.gpu_duration);
        out_.raw(",\"launch_delay\":").integer(l.launch_delay);
        if (!rep_.hta) {
          out_.raw(",\"short_kernel\":").raw(l.short_kernel ? "true" : "false");
          out_.raw(",\"runtime_outlier\":").raw(l.runtime_outlier ? "true" : "false");
          out_.raw(",\"delay_outlier\":").raw(l.delay_outlier ? "true" : "false");
        }
        out_.ch('}');
      }
      out_.ch(']');
    }
  }

  void queues() {
    out_.raw("},\n\"queue_length_summary\":[");
    bool first = true;
    for (const auto& r : rep_.ranks)
      for (const auto& q : r.queues) {
        out_.raw(first ? "\n" : ",\n").raw("{\"rank\":").integer(r.rank);
        if (!rep_.hta) out_.raw(",\"device\":").integer(q.device);
        out_.raw(",\"stream\":").integer(q.stream);
        stats("queue_length", q.summary);
        out_.raw(",\"time_at_max_queue_length\":").integer(q.time_full).ch('}');
        first = false;
      }
  }

  void bandwidth() {
    out_.raw("],\n\"memory_bw_summary\":[");
    bool first = true;
    for (const auto& r : rep_.ranks)
      for (const auto& m : r.bandwidth) {
        out_.raw(first ? "\n" : ",\n").raw("{\"rank\":").integer(r.rank);
        out_.raw(",\"name\":").string(m.kind);
        stats("memory_bw_gbps", m.summary);
        out_.ch('}');
        first = false;
      }
  }

  void annotations() {
    out_.raw("],\n\"gpu_user_annotation_breakdown\":");
    bool any = false;
    for (const auto& r : rep_.ranks) any = any || r.has_gpu_annotations;
    if (!any) {
      out_.raw("null");  // HTA's None: the trace has no GPU annotations
      return;
    }
    out_.ch('[');
    bool first = true;
    for (const auto& r : rep_.ranks)
      for (const auto& a : r.gpu_annotations) {
        out_.raw(first ? "\n" : ",\n").raw("{\"rank\":").integer(r.rank);
        out_.raw(",\"name\":").string(a.name);
        if (!rep_.hta) out_.raw(",\"count\":").unsigned_integer(a.count);
        kernel_times(a);
        first = false;
      }
    out_.ch(']');
  }

  void spread() {
    const tmod::rank_spread& s = rep_.spread;
    out_.raw(",\n\"rank_spread\":{\"unit\":\"ns\"");
    for (const auto& [key, rows] :
         {std::pair<const char*, const tmod::row_list<tmod::spread_row>*>{"steps", &s.steps},
          {"collectives", &s.collectives}}) {
      out_.raw(",\"").raw(key).raw("\":[");
      for (std::size_t k = 0; k < rows->size(); ++k) {
        const tmod::spread_row& r = (*rows)[k];
        out_.raw(k ? ",\n" : "\n").raw("{\"name\":").string(r.key);
        out_.raw(",\"ranks\":").unsigned_integer(r.ranks);
        out_.raw(",\"first_start\":").integer(r.first_start);
        out_.raw(",\"start_spread\":").integer(r.start_spread);
        out_.raw(",\"min_duration\":").integer(r.min_duration);
        out_.raw(",\"max_duration\":").integer(r.max_duration);
        out_.raw(",\"last_rank\":").integer(r.last_rank).ch('}');
      }
      out_.ch(']');
    }
    out_.raw(",\"stragglers\":[");
    for (std::size_t k = 0; k < s.stragglers.size(); ++k) {
      const tmod::straggler_row& r = s.stragglers[k];
      out_.raw(k ? ",\n" : "\n").raw("{\"rank\":").integer(r.rank);
      out_.raw(",\"collectives_started_last\":").unsigned_integer(r.last);
      out_.raw(",\"mean_lag\":").floating(r.mean_lag).ch('}');
    }
    out_.raw("]}");
  }
  void unread() {  // (only when some file was not: a whole run's JSON is the same either way)
    if (rep_.unread.empty()) return;
    out_.raw(",\n\"unread\":[");
    for (std::size_t k = 0; k < rep_.unread.size(); ++k) {
      out_.raw(k ? ",\n" : "\n").raw("{\"file\":").string(rep_.unread[k].first);
      out_.raw(",\"reason\":").string(rep_.unread[k].second).ch('}');
    }
    out_.ch(']');
  }
};

}  // namespace

void write_gpu_json(const report_view& rep, tmod::json_output& out) {
  gpu_json_writer(rep, out).write();
}

std::string temporal_section(const report_view& rep, const std::string& key, int bar_w,
                             bool compact) {
  using page::checked;
  std::int64_t largest = 0;
  for (const auto& r : rep.ranks) largest = std::max(largest, r.temporal.kernel_time);
  const page::time_unit u(rep.unit, static_cast<double>(largest));
  std::string h =
      "<div class=\"legend\"><span style=\"background:#59a14f\"></span>compute"
      "<span style=\"background:#f28e2b\"></span>non-compute<span "
      "style=\"background:#ccc\"></span>idle</div>\n";
  const int bar_h = 22;
  chart::frame f;
  f.width = bar_w;
  f.height = static_cast<double>(rep.ranks.size() * (bar_h + 8) + 4);
  h += chart::open(f, "device time per rank");
  for (std::size_t k = 0; k < rep.ranks.size(); ++k) {
    const auto& b = rep.ranks[k].temporal;
    const double total = b.kernel_time > 0 ? static_cast<double>(b.kernel_time) : 1.0;
    double x = f.left;
    const double y = f.top + 4 + static_cast<double>(k) * (bar_h + 8);
    h += fmt::format("<text x=\"0\" y=\"{}\">rank {}</text>", y + 16, rep.ranks[k].rank);
    for (const auto& [value, color, what] : {std::tuple{b.compute, "#59a14f", "compute"},
                                             std::tuple{b.non_compute, "#f28e2b", "non-compute"},
                                             std::tuple{b.idle, "#ccc", "idle"}}) {
      const double w = std::max(0.0, static_cast<double>(value) / total * bar_w);
      h += fmt::format(
          "<rect x=\"{:.1f}\" y=\"{}\" width=\"{:.1f}\" height=\"{}\" fill=\"{}\"><title>{}: {}"
          "</title></rect>",
          x, y, w, bar_h, color, what, u.with_unit(static_cast<double>(value)));
      x += w;
    }
    h += "\n";
  }
  h += chart::x_axis(
      f, 0, 100, [](double v) { return fmt::format("{:g}%", v); }, "share of kernel time");
  h += "</svg>\n<table><tr><th>rank</th>";
  if (!compact)
    h += "<th>" + u.header("idle") + "</th><th>" + u.header("compute") + "</th><th>" +
         u.header("non-compute") + "</th>";
  h += "<th>" + u.header("kernel time") +
       "</th><th>idle %</th><th>compute %</th><th>non-compute %</th></tr>\n";
  for (std::size_t k = 0; k < rep.ranks.size(); ++k) {
    const auto& b = rep.ranks[k].temporal;
    const std::string p = fmt::format("{}.{}.", key, k);
    const std::string unit(rep.unit);
    auto time = [&](const char* field, std::int64_t v) {
      return "<td>" + u.checked(p + field + "(" + unit + ")", static_cast<double>(v)) + "</td>";
    };
    h += "<tr><td>" + checked(p + "rank", std::to_string(rep.ranks[k].rank)) + "</td>";
    if (!compact)
      h += time("idle_time", b.idle) + time("compute_time", b.compute) +
           time("non_compute_time", b.non_compute);
    h += time("kernel_time", b.kernel_time);
    if (b.kernel_time != 0)
      h += fmt::format(
          "<td>{}</td><td>{}</td><td>{}</td></tr>\n",
          checked(p + "idle_time_pctg", fmt::format("{:.2f}", b.idle_pctg)),
          checked(p + "compute_time_pctg", fmt::format("{:.2f}", b.compute_pctg)),
          checked(p + "non_compute_time_pctg", fmt::format("{:.2f}", b.non_compute_pctg)));
    else
      h += "<td>-</td><td>-</td><td>-</td></tr>\n";
  }
  return h + "</table>\n";
}

std::string critical_path_rows(const std::vector<critical_path_summary>& cps) {
  std::string s = "[";
  for (std::size_t k = 0; k < cps.size(); ++k) {
    const critical_path_summary& c = cps[k];
    s += fmt::format(
        "{}{{\"rank\":{},\"nodes\":{},\"edges\":{},\"critical_path_events\":{},"
        "\"critical_path_length_us\":{}",
        k ? ",\n" : "\n", c.rank, c.nodes, c.edges, c.events,
        static_cast<double>(c.length) / 1000.0);
    for (const auto& [cause, ns] : c.bound_by)
      if (!cause.empty())
        s += fmt::format(",\"{}_us\":{}", cause, static_cast<double>(ns) / 1000.0);
    s += "}";
  }
  return s + "]";
}

namespace {

using page::checked;
using page::escape;

/// Kernel types: each one's share of the device time.
std::string kernel_types_section(const report_view& rep) {
  std::string h = "<h2>Kernel types (all ranks)</h2>\n";
  if (rep.kernel_types.empty()) return h + "<p>No device work.</p>\n";
  chart::frame f;
  f.width = 500;
  f.left = 10;
  f.right = 400;  // the bars' labels
  f.height = static_cast<double>(rep.kernel_types.size() * 24 + 4);
  h += chart::open(f, "kernel types");
  for (std::size_t k = 0; k < rep.kernel_types.size(); ++k) {
    const auto& r = rep.kernel_types[k];
    const double w = r.percentage / 100.0 * f.width;
    const double y = f.top + 4 + static_cast<double>(k) * 24;
    h += fmt::format(
        "<rect x=\"{:.1f}\" y=\"{}\" width=\"{:.1f}\" height=\"18\" fill=\"{}\"><title>{}</title>"
        "</rect><text x=\"{:.1f}\" y=\"{}\">{} ({}%)</text>\n",
        f.left, y, w, page::colors[k % 8], escape(r.kernel_type), f.left + w + 6, y + 13,
        escape(r.kernel_type),
        checked(fmt::format("kernel_type_breakdown.{}.percentage", k),
                fmt::format("{:.1f}", r.percentage), "tspan"));
  }
  h += chart::x_axis(
      f, 0, 100, [](double v) { return fmt::format("{:g}%", v); }, "share of device time");
  return h + "</svg>\n";
}

/// Communication hidden behind computation, per rank.
std::string overlap_section(const report_view& rep) {
  std::string h =
      "<h2>Communication hidden behind computation</h2>\n<table><tr><th>rank</th><th>%</th>"
      "</tr>\n";
  for (std::size_t k = 0; k < rep.ranks.size(); ++k)
    h += fmt::format("<tr><td>{}</td><td>{}</td></tr>\n", rep.ranks[k].rank,
                     rep.ranks[k].overlap
                         ? checked(fmt::format("comm_comp_overlap.{}.comp_comm_overlap_pctg", k),
                                   fmt::format("{:.2f}", *rep.ranks[k].overlap))
                         : std::string("no communication"));
  return h + "</table>\n";
}

/// Idle time per stream, and the gaps it is made of.
std::string idle_section(const report_view& rep) {
  double most_idle = 0, longest_mean = 0;
  for (const auto& r : rep.ranks)
    for (const auto& i : r.idle) {
      most_idle = std::max(most_idle, static_cast<double>(i.idle_time));
      if (!std::isnan(i.stats.mean)) longest_mean = std::max(longest_mean, i.stats.mean);
    }
  const page::time_unit idle(rep.unit, most_idle), gap(rep.unit, longest_mean);
  std::string h =
      "<h2>Idle time per stream</h2>\n<table><tr><th>rank</th><th>stream</th>"
      "<th>why</th><th>" +
      idle.header("idle") + "</th><th>share</th><th>gaps</th><th>" + gap.header("mean gap") +
      "</th></tr>\n";
  std::size_t row = 0;
  for (const auto& r : rep.ranks)
    for (const auto& i : r.idle) {
      h += fmt::format(
          "<tr><td>{}</td><td>{}</td><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td>"
          "<td>{}</td></tr>\n",
          r.rank, i.stream, tmod::idle_category_names[static_cast<int>(i.category)],
          idle.checked(fmt::format("idle_time_breakdown.{}.idle_time", row),
                       static_cast<double>(i.idle_time)),
          i.ratio ? fmt::format("{:.0f}%", *i.ratio * 100) : std::string("-"),
          checked(fmt::format("idle_interval_stats.{}.count", row), page::count(i.stats.count)),
          std::isnan(i.stats.mean)
              ? std::string("-")
              : gap.checked(fmt::format("idle_interval_stats.{}.mean", row), i.stats.mean));
      ++row;
    }
  return h + "</table>\n";
}

/// The kernels with the most time over every rank.
std::string top_kernels_section(const report_view& rep) {
  std::map<std::string, std::pair<std::int64_t, std::string_view>> kernels;
  for (const auto& r : rep.ranks)
    for (const auto& k : r.kernels) {
      auto& e = kernels[k.name];
      e.first += k.sum;
      e.second = tmod::to_string(k.cls);
    }
  std::vector<std::pair<std::int64_t, std::string>> top;
  for (const auto& [name, e] : kernels) top.emplace_back(e.first, name);
  std::sort(top.rbegin(), top.rend());
  const page::time_unit u(rep.unit, top.empty() ? 0.0 : static_cast<double>(top.front().first));
  std::string h = "<h2>Top kernels (all ranks)</h2>\n<table><tr><th>kernel</th><th>class</th><th>" +
                  u.header("time") + "</th></tr>\n";
  for (std::size_t k = 0; k < std::min<std::size_t>(15, top.size()); ++k)
    h += fmt::format("<tr><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{}</td></tr>\n",
                     escape(top[k].second.substr(0, 120)), kernels[top[k].second].second,
                     u.text(static_cast<double>(top[k].first)));
  return h + "</table>\n";
}

/// A count axis's label.
std::string count_text(double v) { return page::grouped(v); }

/// Queue length over time, the first rank's streams.
std::string queue_section(const report_view& rep) {
  std::string h = "<h2>Queue length over time</h2>\n";
  if (rep.ranks.empty() || rep.ranks[0].queues.empty())
    return h + "<p>No launches with their work.</p>\n";
  std::int64_t t0 = INT64_MAX, t1 = INT64_MIN, top_len = 1;
  for (const auto& q : rep.ranks[0].queues)
    for (const auto& s : q.steps) {
      t0 = std::min(t0, s.ts);
      t1 = std::max(t1, s.ts);
      top_len = std::max(top_len, s.length);
    }
  const double span = t1 > t0 ? static_cast<double>(t1 - t0) : 1.0;
  chart::frame f;
  f.width = 860;
  f.height = 160;
  h += chart::open(f, "queue length over time");
  const auto y_of = [&](std::int64_t len) {
    return f.top + f.height - static_cast<double>(len) / static_cast<double>(top_len) * f.height;
  };
  std::size_t c = 0;
  std::string legend = "<div class=\"legend\">";
  for (const auto& q : rep.ranks[0].queues) {
    std::string pts;
    const std::size_t step = std::max<std::size_t>(1, q.steps.size() / 2000);
    for (std::size_t k = 0; k < q.steps.size(); k += step)
      pts += fmt::format("{:.1f},{:.1f} ",
                         f.left + static_cast<double>(q.steps[k].ts - t0) / span * f.width,
                         y_of(q.steps[k].length));
    const char* color = page::colors[c++ % 8];
    h += fmt::format(
        "<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"1\" points=\"{}\"><title>stream "
        "{} (max {})</title></polyline>\n",
        color, pts, q.stream, q.summary.max);
    legend += fmt::format("<span style=\"background:{}\"></span>stream {} (max {})", color,
                          q.stream, q.summary.max);
  }
  const page::time_unit u(rep.unit, span);
  h += chart::x_axis(
      f, 0, span, [&](double v) { return u.tick(v); }, u.header("time since the first launch"));
  h += chart::y_axis(f, 0, static_cast<double>(top_len), count_text, "queued", 1);
  return h + fmt::format("</svg>\n{}</div>\n<p>Rank {}'s streams; highest queue {}.</p>\n", legend,
                         rep.ranks[0].rank, page::count(static_cast<std::uint64_t>(top_len)));
}

/// Launch delays: a histogram over every rank's launches.
std::string launch_delay_section(const report_view& rep) {
  std::string h = "<h2>Launch delay</h2>\n";
  std::vector<std::int64_t> delays;
  for (const auto& r : rep.ranks)
    for (const auto& l : r.launches) delays.push_back(l.launch_delay);
  if (delays.empty()) return h + "<p>No launches.</p>\n";
  std::sort(delays.begin(), delays.end());
  const std::int64_t lo = delays.front(), hi = std::max(delays.back(), lo + 1);
  const int bins = 40;
  std::vector<std::size_t> count(bins);
  for (const auto d : delays)
    ++count[std::min<std::size_t>(bins - 1,
                                  static_cast<std::size_t>(static_cast<double>(d - lo) /
                                                           static_cast<double>(hi - lo) * bins))];
  const std::size_t most = *std::max_element(count.begin(), count.end());
  chart::frame f;
  f.width = bins * 21;
  f.height = 140;
  h += chart::open(f, "launch delay");
  for (int k = 0; k < bins; ++k) {
    const std::size_t n = count[static_cast<std::size_t>(k)];
    const double bh = static_cast<double>(n) / static_cast<double>(most) * f.height;
    h += fmt::format(
        "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"19\" height=\"{:.1f}\" "
        "fill=\"#4e79a7\"><title>{} launches</title></rect>",
        f.left + k * 21 + 1, f.top + f.height - bh, bh, page::count(n));
  }
  const page::time_unit u(rep.unit, static_cast<double>(std::max(-lo, hi)));
  h += "\n" + chart::x_axis(
                  f, static_cast<double>(lo), static_cast<double>(hi),
                  [&](double v) { return u.tick(v); }, u.header("launch delay"));
  h += chart::y_axis(f, 0, static_cast<double>(most), count_text, "launches", 1);
  return h + fmt::format("</svg>\n<p>{} launches; median delay {}.</p>\n",
                         page::count(delays.size()),
                         u.with_unit(static_cast<double>(delays[delays.size() / 2])));
}

/// What bounds each rank's first step: its critical path's causes, and its top events.
std::string critical_path_section(const std::vector<critical_path_summary>& cps) {
  if (cps.empty()) return {};
  std::int64_t longest = 0;
  for (const auto& c : cps) longest = std::max(longest, c.length);
  const page::time_unit u("us", static_cast<double>(longest) / 1000.0);  // the JSON's unit
  std::string h = "<h2>Critical path</h2>\n<table><tr><th>rank</th><th>window</th><th>" +
                  u.header("length") + "</th><th>cause</th><th>" + u.header("time") +
                  "</th><th>share</th></tr>\n";
  for (std::size_t k = 0; k < cps.size(); ++k) {
    const critical_path_summary& c = cps[k];
    const std::string p = fmt::format("critical_path.{}.", k);
    bool first = true;
    for (const auto& [cause, ns] : c.bound_by) {
      if (cause.empty() || ns == 0) continue;
      h += first ? fmt::format("<tr><td>{}</td><td class=\"l\">{}</td><td>{}</td>", c.rank,
                               escape(c.window),
                               u.checked(p + "critical_path_length_us",
                                         static_cast<double>(c.length) / 1000.0))
                 : std::string("<tr><td></td><td></td><td></td>");
      h += fmt::format(
          "<td class=\"l\">{}</td><td>{}</td><td>{:.1f}%</td></tr>\n", cause,
          u.checked(p + cause + "_us", static_cast<double>(ns) / 1000.0),
          c.length > 0 ? 100.0 * static_cast<double>(ns) / static_cast<double>(c.length) : 0.0);
      first = false;
    }
  }
  h += "</table>\n";
  const auto& top = cps.front().top;
  if (top.empty()) return h;
  const page::time_unit t("us", static_cast<double>(top.front().second) / 1000.0);
  h += fmt::format(
      "<p>Rank {}'s events with the most time on its path:</p>\n<table><tr><th>{}</th>"
      "<th>event</th></tr>\n",
      cps.front().rank, t.header("on the path"));
  for (const auto& [name, ns] : top)
    h += fmt::format("<tr><td>{}</td><td class=\"l\">{}</td></tr>\n",
                     t.text(static_cast<double>(ns) / 1000.0), escape(name));
  return h + "</table>\n";
}

}  // namespace

std::string gpu_report_page(const report_view& rep, const std::string& json, const std::string& cpu,
                            const std::string& title, const std::vector<critical_path_summary>& cps,
                            const std::string& more) {
  std::string h = page::head(title);
  h += fmt::format("<p>{} rank(s), {} rules.</p>\n", rep.ranks.size(),
                   rep.hta ? "Holistic Trace Analysis's" : "exact");
  h += "<h2>Device time per rank</h2>\n" + temporal_section(rep, "temporal_breakdown");
  h += kernel_types_section(rep) + overlap_section(rep) + idle_section(rep) +
       top_kernels_section(rep) + queue_section(rep) + launch_delay_section(rep) +
       critical_path_section(cps);
  if (!cpu.empty()) h += "<h2>CPU: key averages</h2>\n<pre>" + escape(cpu) + "</pre>\n";
  h += more;
  // The analyses, as `tracemodel gpu --json` prints them.
  return h + page::data_and_end(json);
}

}  // namespace tracemodel_cli
