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

void write_gpu_json(const report_view& rep, tmod::json_output& out) {
  const std::string unit(rep.unit);
  out.raw("{\"policy\":").string(rep.hta ? "hta" : "exact").raw(",\"unit\":").string(unit).ch(',');
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
    if (!rep.hta) out.raw(",\"device\":").integer(i.device);
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
    if (!rep.hta) out.raw(",\"count\":").unsigned_integer(r.count);
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
      if (!rep.hta) {
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
      if (!rep.hta) out.raw(",\"device\":").integer(q.device);
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
        if (!rep.hta) out.raw(",\"count\":").unsigned_integer(a.count);
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
       {std::pair<const char*, const tmod::row_list<tmod::spread_row>*>{"steps", &rep.spread.steps},
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
}

std::string temporal_section(const report_view& rep, const std::string& key, int bar_w,
                             bool compact) {
  using page::checked;
  const std::string unit(rep.unit);
  std::string h =
      "<div class=\"legend\"><span style=\"background:#59a14f\"></span>compute"
      "<span style=\"background:#f28e2b\"></span>non-compute<span "
      "style=\"background:#ccc\"></span>idle</div>\n";
  const int bar_h = 22;
  h += fmt::format("<svg width=\"{}\" height=\"{}\" role=\"img\">\n", bar_w + 80,
                   rep.ranks.size() * (bar_h + 8) + 8);
  for (std::size_t k = 0; k < rep.ranks.size(); ++k) {
    const auto& b = rep.ranks[k].temporal;
    const double total = b.kernel_time > 0 ? static_cast<double>(b.kernel_time) : 1.0;
    double x = 60;
    const double y = 4 + static_cast<double>(k) * (bar_h + 8);
    h += fmt::format("<text x=\"0\" y=\"{}\">rank {}</text>", y + 16, rep.ranks[k].rank);
    for (const auto& [value, color, what] : {std::tuple{b.compute, "#59a14f", "compute"},
                                             std::tuple{b.non_compute, "#f28e2b", "non-compute"},
                                             std::tuple{b.idle, "#ccc", "idle"}}) {
      const double w = std::max(0.0, static_cast<double>(value) / total * bar_w);
      h += fmt::format(
          "<rect x=\"{:.1f}\" y=\"{}\" width=\"{:.1f}\" height=\"{}\" fill=\"{}\"><title>{}: {} "
          "{}</title></rect>",
          x, y, w, bar_h, color, what, value, unit);
      x += w;
    }
    h += "\n";
  }
  h += compact ? "</svg>\n<table><tr><th>rank</th><th>kernel time</th>"
               : "</svg>\n<table><tr><th>rank</th><th>idle</th><th>compute</th><th>non-compute</th>"
                 "<th>kernel time</th>";
  h += "<th>idle %</th><th>compute %</th><th>non-compute %</th></tr>\n";
  for (std::size_t k = 0; k < rep.ranks.size(); ++k) {
    const auto& b = rep.ranks[k].temporal;
    const std::string p = fmt::format("{}.{}.", key, k);
    h += "<tr><td>" + checked(p + "rank", std::to_string(rep.ranks[k].rank)) + "</td>";
    if (!compact)
      h +=
          fmt::format("<td>{}</td><td>{}</td><td>{}</td>",
                      checked(p + "idle_time(" + unit + ")", std::to_string(b.idle)),
                      checked(p + "compute_time(" + unit + ")", std::to_string(b.compute)),
                      checked(p + "non_compute_time(" + unit + ")", std::to_string(b.non_compute)));
    h += "<td>" + checked(p + "kernel_time(" + unit + ")", std::to_string(b.kernel_time)) + "</td>";
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

std::string gpu_report_page(const report_view& rep, const std::string& json, const std::string& cpu,
                            const std::string& title,
                            const std::vector<critical_path_summary>& cps) {
  using page::checked;
  using page::escape;
  const std::string unit(rep.unit);
  std::string h = page::head(title);
  h += fmt::format("<p>{} rank(s), {} rules, times in {}.</p>\n", rep.ranks.size(),
                   rep.hta ? "Holistic Trace Analysis's" : "exact", unit);
  h += "<h2>Device time per rank</h2>\n" + temporal_section(rep, "temporal_breakdown");
  const int bar_w = 800;

  // Kernel types: shares of the total.
  h += "<h2>Kernel types (all ranks)</h2>\n";
  if (rep.kernel_types.empty()) h += "<p>No device work.</p>\n";
  h += fmt::format("<svg width=\"{}\" height=\"{}\" role=\"img\">\n", bar_w + 80,
                   rep.kernel_types.size() * 24 + 4);
  for (std::size_t k = 0; k < rep.kernel_types.size(); ++k) {
    const auto& r = rep.kernel_types[k];
    const double w = r.percentage / 100.0 * 500;
    h += fmt::format(
        "<rect x=\"0\" y=\"{}\" width=\"{:.1f}\" height=\"18\" fill=\"{}\"><title>{}</title>"
        "</rect><text x=\"{:.1f}\" y=\"{}\">{} ({}%)</text>\n",
        4 + k * 24, w, page::colors[k % 8], escape(r.kernel_type), w + 6, 17 + k * 24,
        escape(r.kernel_type),
        checked(fmt::format("kernel_type_breakdown.{}.percentage", k),
                fmt::format("{:.1f}", r.percentage), "tspan"));
  }
  h += "</svg>\n";

  // Communication hidden behind computation.
  h += "<h2>Communication hidden behind computation</h2>\n<table><tr><th>rank</th><th>%</th>"
       "</tr>\n";
  for (std::size_t k = 0; k < rep.ranks.size(); ++k)
    h += fmt::format("<tr><td>{}</td><td>{}</td></tr>\n", rep.ranks[k].rank,
                     rep.ranks[k].overlap
                         ? checked(fmt::format("comm_comp_overlap.{}.comp_comm_overlap_pctg", k),
                                   fmt::format("{:.2f}", *rep.ranks[k].overlap))
                         : std::string("no communication"));
  h += "</table>\n";

  // Idle time per stream.
  h += "<h2>Idle time per stream</h2>\n<table><tr><th>rank</th><th>stream</th><th>why</th>"
       "<th>idle</th><th>share</th><th>gaps</th><th>mean gap</th></tr>\n";
  std::size_t row = 0;
  for (const auto& r : rep.ranks)
    for (const auto& i : r.idle) {
      const std::string p = fmt::format("idle_time_breakdown.{}.", row);
      h += fmt::format(
          "<tr><td>{}</td><td>{}</td><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td>"
          "<td>{}</td></tr>\n",
          r.rank, i.stream, tmod::idle_category_names[static_cast<int>(i.category)],
          checked(p + "idle_time", std::to_string(i.idle_time)),
          i.ratio ? fmt::format("{:.0f}%", *i.ratio * 100) : std::string("-"),
          checked(fmt::format("idle_interval_stats.{}.count", row), std::to_string(i.stats.count)),
          std::isnan(i.stats.mean) ? std::string("-") : fmt::format("{:.2f}", i.stats.mean));
      ++row;
    }
  h += "</table>\n";

  // The top kernels over ranks.
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
  h += "<h2>Top kernels (all ranks)</h2>\n<table><tr><th>kernel</th><th>class</th><th>time</th>"
       "</tr>\n";
  for (std::size_t k = 0; k < std::min<std::size_t>(15, top.size()); ++k)
    h += fmt::format("<tr><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{}</td></tr>\n",
                     escape(top[k].second.substr(0, 120)), kernels[top[k].second].second,
                     top[k].first);
  h += "</table>\n";

  // Queue length over time, the first rank's streams.
  h += "<h2>Queue length over time</h2>\n";
  if (!rep.ranks.empty() && !rep.ranks[0].queues.empty()) {
    std::int64_t t0 = INT64_MAX, t1 = INT64_MIN, top_len = 1;
    for (const auto& q : rep.ranks[0].queues)
      for (const auto& s : q.steps) {
        t0 = std::min(t0, s.ts);
        t1 = std::max(t1, s.ts);
        top_len = std::max(top_len, s.length);
      }
    const double span = t1 > t0 ? static_cast<double>(t1 - t0) : 1.0;
    const int w = 900, ht = 160;
    h += fmt::format("<svg width=\"{}\" height=\"{}\" role=\"img\">\n", w + 20, ht + 20);
    std::size_t c = 0;
    for (const auto& q : rep.ranks[0].queues) {
      std::string pts;
      const std::size_t step = std::max<std::size_t>(1, q.steps.size() / 2000);
      for (std::size_t k = 0; k < q.steps.size(); k += step)
        pts += fmt::format(
            "{:.1f},{:.1f} ", static_cast<double>(q.steps[k].ts - t0) / span * w,
            ht - static_cast<double>(q.steps[k].length) / static_cast<double>(top_len) * ht + 5);
      h += fmt::format(
          "<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"1\" points=\"{}\"><title>stream "
          "{} (max {})</title></polyline>\n",
          page::colors[c++ % 8], pts, q.stream, q.summary.max);
    }
    h += fmt::format("</svg><p>rank {}; highest queue {}.</p>\n", rep.ranks[0].rank, top_len);
  } else {
    h += "<p>No launches with their work.</p>\n";
  }

  // Launch delays: a histogram over every rank's launches.
  h += "<h2>Launch delay</h2>\n";
  std::vector<std::int64_t> delays;
  for (const auto& r : rep.ranks)
    for (const auto& l : r.launches) delays.push_back(l.launch_delay);
  if (!delays.empty()) {
    std::sort(delays.begin(), delays.end());
    const std::int64_t lo = delays.front(), hi = std::max(delays.back(), lo + 1);
    const int bins = 40;
    std::vector<std::size_t> count(bins);
    for (const auto d : delays)
      ++count[std::min<std::size_t>(bins - 1,
                                    static_cast<std::size_t>(static_cast<double>(d - lo) /
                                                             static_cast<double>(hi - lo) * bins))];
    const std::size_t most = *std::max_element(count.begin(), count.end());
    h += "<svg width=\"840\" height=\"170\" role=\"img\">\n";
    for (int k = 0; k < bins; ++k) {
      const double bh =
          static_cast<double>(count[static_cast<std::size_t>(k)]) / static_cast<double>(most) * 140;
      h += fmt::format(
          "<rect x=\"{}\" y=\"{:.1f}\" width=\"19\" height=\"{:.1f}\" "
          "fill=\"#4e79a7\"><title>{} launches</title></rect>",
          k * 21, 150 - bh, bh, count[static_cast<std::size_t>(k)]);
    }
    h += fmt::format(
        "\n<text x=\"0\" y=\"166\">{} {}</text><text x=\"760\" y=\"166\">{} {}"
        "</text></svg>\n<p>{} launches; median delay {} {}.</p>\n",
        lo, unit, hi, unit, delays.size(), delays[delays.size() / 2], unit);
  } else {
    h += "<p>No launches.</p>\n";
  }

  // What bounds each rank's first step: its critical path's causes, and its top events.
  if (!cps.empty()) {
    h += "<h2>Critical path</h2>\n<table><tr><th>rank</th><th>window</th><th>length (us)</th>"
         "<th>cause</th><th>time (us)</th><th>share</th></tr>\n";
    for (std::size_t k = 0; k < cps.size(); ++k) {
      const critical_path_summary& c = cps[k];
      const std::string p = fmt::format("critical_path.{}.", k);
      bool first = true;
      for (const auto& [cause, ns] : c.bound_by) {
        if (cause.empty() || ns == 0) continue;
        h += first ? fmt::format("<tr><td>{}</td><td class=\"l\">{}</td><td>{}</td>", c.rank,
                                 escape(c.window),
                                 checked(p + "critical_path_length_us",
                                         fmt::format("{}", static_cast<double>(c.length) / 1000.0)))
                   : std::string("<tr><td></td><td></td><td></td>");
        h += fmt::format(
            "<td class=\"l\">{}</td><td>{}</td><td>{:.1f}%</td></tr>\n", cause,
            checked(p + cause + "_us", fmt::format("{}", static_cast<double>(ns) / 1000.0)),
            c.length > 0 ? 100.0 * static_cast<double>(ns) / static_cast<double>(c.length) : 0.0);
        first = false;
      }
    }
    h += "</table>\n";
    if (!cps.front().top.empty()) {
      h += fmt::format("<p>Rank {}'s events with the most time on its path:</p>\n<table>",
                       cps.front().rank);
      for (const auto& [name, ns] : cps.front().top)
        h += fmt::format("<tr><td>{:.3f} us</td><td class=\"l\">{}</td></tr>\n",
                         static_cast<double>(ns) / 1000.0, escape(name));
      h += "</table>\n";
    }
  }

  if (!cpu.empty()) h += "<h2>CPU: key averages</h2>\n<pre>" + escape(cpu) + "</pre>\n";
  // The analyses, as `tracemodel gpu --json` prints them.
  return h + page::data_and_end(json);
}

}  // namespace tracemodel_cli
