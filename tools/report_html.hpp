// `tracemodel report`: the device-time analyses as one self-contained HTML page (inline SVG and
// CSS, no script but the analyses' JSON, which the page carries for other tools and the test).
// Every number the page shows that the JSON has is marked `data-check="analysis.row.field"`, so
// that a test can compare the two.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include <tracemodel/algo/trace_diff.hpp>
#include <tracemodel/formats/flame_svg.hpp>
#include <tracemodel/formats/gpu_report.hpp>

namespace tracemodel_cli {

namespace report_html {

inline std::string escape(std::string_view s) {
  std::string out;
  tmod::detail::append_xml_escaped(out, s);  // as the flame chart escapes its text
  return out;
}

/// A number shown and checked against the JSON at `path` (in SVG text: `tag` tspan).
inline std::string checked(const std::string& path, const std::string& text,
                           const char* tag = "span") {
  return fmt::format("<{0} data-check=\"{1}\">{2}</{0}>", tag, path, text);
}

inline const char* const colors[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759",
                                     "#76b7b2", "#edc948", "#b07aa1", "#9c755f"};

}  // namespace report_html

/// The page's head and title.
inline std::string page_head(const std::string& title) {
  const std::string t = report_html::escape(title);
  return "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>" + t +
         "</title>\n<style>\n"
         "body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:1200px}\n"
         "h1{font-size:20px}h2{font-size:16px;margin-top:28px}\n"
         "table{border-collapse:collapse}td,th{padding:2px 10px;text-align:right;"
         "border-bottom:1px solid #eee}th{text-align:left}td.l{text-align:left}\n"
         "pre{background:#f6f6f6;padding:8px;overflow:auto;font-size:12px}\n"
         ".legend span{display:inline-block;width:10px;height:10px;margin:0 4px 0 12px}\n"
         "</style></head><body>\n<h1>" +
         t + "</h1>\n";
}

/// The JSON the page carries (for other tools and the test), and the page's end.
inline std::string data_and_end(const std::string& json) {
  std::string data = json;
  for (std::size_t p = data.find("</"); p != std::string::npos; p = data.find("</", p + 3))
    data.replace(p, 2, "<\\/");
  return "<script type=\"application/json\" id=\"tracemodel-data\">" + data +
         "</script>\n</body></html>\n";
}

/// The temporal breakdown of every rank: a stacked bar each (`bar_w` pixels wide) and a table
/// whose numbers are checked against the JSON's array `key` (`compact`: kernel time and shares).
inline std::string temporal_section(const tmod::gpu_report& rep, const std::string& key,
                                    int bar_w = 800, bool compact = false) {
  using report_html::checked;
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

/// A rank's critical path, as the report shows it.
struct critical_path_summary {
  std::int64_t rank = 0;
  std::string window;  ///< "ProfilerStep#3", or "the whole trace"
  std::size_t nodes = 0, edges = 0, events = 0;
  std::int64_t length = 0;                                ///< ns
  std::map<std::string, std::int64_t> bound_by;           ///< ns per cause
  std::vector<std::pair<std::string, std::int64_t>> top;  ///< events by time on the path
};

/// The summaries as rows of the report's JSON (`critical_path`, times in us).
inline std::string critical_path_rows(const std::vector<critical_path_summary>& cps) {
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

/// The page. `json` is `gpu --json`'s object for the same report, `cpu` the stats table of a
/// rank (or empty), `cps` each rank's critical path.
inline std::string gpu_report_page(const tmod::gpu_report& rep, const std::string& json,
                                   const std::string& cpu, const std::string& title,
                                   const std::vector<critical_path_summary>& cps = {}) {
  using report_html::checked;
  using report_html::escape;
  const std::string unit(rep.unit);
  std::string h = page_head(title);
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
        4 + k * 24, w, report_html::colors[k % 8], escape(r.kernel_type), w + 6, 17 + k * 24,
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
          report_html::colors[c++ % 8], pts, q.stream, q.summary.max);
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
  // The analyses, as `tracemodel gpu --json` prints them; "</" (only ever in a string) is
  // written "<\/" so that it cannot end the script.
  return h + data_and_end(json);
}

/// The diff's page: each side's device time, the names whose time changed most, the names added
/// and deleted. `json` is `diff --json`'s object with each side's temporal breakdown.
inline std::string diff_report_page(const std::array<std::vector<tmod::diff_row>, 3>& rows,
                                    const tmod::gpu_report& control, const tmod::gpu_report& test,
                                    const std::string& json, const std::string& title,
                                    const std::string& about, std::size_t top) {
  using report_html::checked;
  using report_html::escape;
  const std::string unit(control.unit);
  std::string h = page_head(title);
  h += "<p>" + escape(about) + ".</p>\n";
  h += "<h2>Device time per rank, whole runs</h2>\n<div style=\"display:flex;gap:32px\">";
  h += "<div><h3>control</h3>\n" +
       temporal_section(control, "control_temporal_breakdown", 420, true) + "</div>";
  h += "<div><h3>test</h3>\n" + temporal_section(test, "test_temporal_breakdown", 420, true) +
       "</div></div>\n";

  // The names whose time changed most, both ways, on a scale centred on no change.
  const std::vector<tmod::diff_row>& all = rows[2];
  std::vector<std::size_t> order;
  for (std::size_t k = 0; k < all.size(); ++k)
    if (all[k].diff_duration != 0) order.push_back(k);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return std::abs(all[a].diff_duration) > std::abs(all[b].diff_duration);
  });
  if (order.size() > top) order.resize(top);
  h += fmt::format("<h2>Largest changes in time (of {} names)</h2>\n", all.size());
  if (order.empty()) h += "<p>No name's time changed.</p>\n";
  std::int64_t widest = 1;
  for (const std::size_t k : order) widest = std::max(widest, std::abs(all[k].diff_duration));
  const double half = 300;
  h += fmt::format("<svg width=\"{}\" height=\"{}\" role=\"img\">\n", 2 * half + 20,
                   order.size() * 20 + 4);
  for (std::size_t i = 0; i < order.size(); ++i) {
    const tmod::diff_row& r = all[order[i]];
    const double w =
        static_cast<double>(std::abs(r.diff_duration)) / static_cast<double>(widest) * half;
    const double x = r.diff_duration > 0 ? half + 10 : half + 10 - w;
    h += fmt::format(
        "<rect x=\"{:.1f}\" y=\"{}\" width=\"{:.1f}\" height=\"16\" fill=\"{}\"><title>{}: "
        "{:+} {}</title></rect>\n",
        x, 2 + i * 20, w, r.diff_duration > 0 ? "#e15759" : "#59a14f", escape(r.name),
        r.diff_duration, unit);
  }
  h += fmt::format("<line x1=\"{0}\" x2=\"{0}\" y1=\"0\" y2=\"{1}\" stroke=\"#888\"/></svg>\n",
                   half + 10, order.size() * 20 + 4);
  h += "<table><tr><th>name</th><th>control</th><th>total</th><th>test</th><th>total</th>"
       "<th>change</th></tr>\n";
  for (const std::size_t k : order) {
    const tmod::diff_row& r = all[k];
    const std::string p = fmt::format("all.{}.", k);
    const std::string name = r.name.size() > 90 ? r.name.substr(0, 87) + "..." : r.name;
    h += fmt::format(
        "<tr><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
        "<td>{}</td></tr>\n",
        escape(name), checked(p + "control_counts", std::to_string(r.control_counts)),
        checked(p + "control_total_duration", std::to_string(r.control_total_duration)),
        checked(p + "test_counts", std::to_string(r.test_counts)),
        checked(p + "test_total_duration", std::to_string(r.test_total_duration)),
        checked(p + "diff_duration", std::to_string(r.diff_duration)));
  }
  h += "</table>\n";
  const tmod::ops_change c = tmod::ops_diff(all);
  for (const auto& [what, names] : {std::pair<const char*, const std::vector<std::string>*>{
                                        "Names only in the test run", &c.added},
                                    {"Names only in the control run", &c.deleted}}) {
    h += fmt::format("<h2>{} ({})</h2>\n<p>", what, names->size());
    for (std::size_t k = 0; k < names->size() && k < top; ++k)
      h += (k ? ", " : "") + std::string("<code>") + escape((*names)[k]) + "</code>";
    if (names->size() > top) h += fmt::format(" and {} more", names->size() - top);
    h += "</p>\n";
  }
  return h + data_and_end(json);
}

}  // namespace tracemodel_cli
