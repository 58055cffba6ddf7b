// A trace diff rendered (diff.hpp).
#include "diff.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include <fmt/format.h>

#include "../input.hpp"
#include "chart.hpp"
#include "gpu.hpp"
#include "page.hpp"

namespace tracemodel_cli {

namespace {
void print_rows(const char* title, const tmod::row_list<tmod::diff_row>& rows, std::size_t top) {
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

std::string side_of(const diff_side& s) {
  return (s.rank ? "rank " + std::to_string(*s.rank) : std::string("every rank")) + ", " +
         (s.iteration ? "ProfilerStep#" + std::to_string(*s.iteration) : "every event");
}

void print_diff(const diff_side& control, const diff_side& test, const diff_rows& rows,
                const diff_rules& rules, tmod::diff_device device, std::size_t top) {
  const auto d = static_cast<std::size_t>(device);
  std::printf("trace diff (%s, %s): %s names\n  control %s (%s)\n  test    %s (%s)\n",
              rules.hta ? "Holistic Trace Analysis's rules" : "exact",
              std::string(rules.unit).c_str(), std::string(tmod::diff_device_names[d]).c_str(),
              control.path.c_str(), side_of(control).c_str(), test.path.c_str(),
              side_of(test).c_str());
  const tmod::ops_change c = tmod::ops_diff(rows[d]);
  std::printf("  %zu names: %zu added, %zu deleted, %zu more often, %zu less often, %zu as often\n",
              rows[d].size(), c.added.size(), c.deleted.size(), c.increased.size(),
              c.decreased.size(), c.unchanged.size());
  print_rows("time grown most", tmod::top_regressions(rows[d], top), top);
  tmod::row_list<tmod::diff_row> shrunk;
  for (const tmod::diff_row& r : rows[d])
    if (r.diff_duration < 0) shrunk.push_back(r);
  std::stable_sort(shrunk.begin(), shrunk.end(),
                   [](const auto& a, const auto& b) { return a.diff_duration < b.diff_duration; });
  print_rows("time shrunk most", shrunk, top);
}

/// `diff --json`'s object (with each side's temporal breakdown when the page is written).
std::string diff_json(const diff_side& control, const diff_side& test, const diff_rows& rows,
                      const tmod::anomaly_counts& repairs, const diff_rules& rules) {
  const std::string_view unit = rules.unit;
  std::string s;
  tmod::json_output out = tmod::json_output::to_string(s);
  out.raw("{\"policy\":")
      .string(rules.hta ? "hta" : "exact")
      .raw(",\"unit\":")
      .string(unit)
      .ch(',');
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
    const report_view g = side->gpu->view();
    for (std::size_t k = 0; k < g.ranks.size(); ++k) {
      const auto& b = g.ranks[k].temporal;
      out.raw(k ? ",\n" : "\n").raw("{\"rank\":").integer(g.ranks[k].rank);
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

namespace {

using page::checked;
using page::escape;

/// The changes as bars left (less time) and right (more time) of no change.
std::string changes_chart(const tmod::row_list<tmod::diff_row>& all,
                          const std::vector<std::size_t>& order, std::string_view unit) {
  std::int64_t widest = 1;
  for (const std::size_t k : order) widest = std::max(widest, std::abs(all[k].diff_duration));
  chart::frame f;
  f.width = 600;
  f.left = 40;
  f.right = 60;
  f.height = static_cast<double>(order.size() * 20 + 4);
  const double half = f.width / 2, zero = f.left + half;
  const page::time_unit u(unit, static_cast<double>(widest));
  std::string h = chart::open(f, "largest changes in time");
  for (std::size_t i = 0; i < order.size(); ++i) {
    const tmod::diff_row& r = all[order[i]];
    const double w =
        static_cast<double>(std::abs(r.diff_duration)) / static_cast<double>(widest) * half;
    h += fmt::format(
        "<rect x=\"{:.1f}\" y=\"{}\" width=\"{:.1f}\" height=\"16\" fill=\"{}\"><title>{}: "
        "{}{}</title></rect>\n",
        r.diff_duration > 0 ? zero : zero - w, f.top + 2 + static_cast<double>(i) * 20, w,
        r.diff_duration > 0 ? "#e15759" : "#59a14f", escape(r.name), r.diff_duration > 0 ? "+" : "",
        u.with_unit(static_cast<double>(r.diff_duration)));
  }
  h += fmt::format("<line x1=\"{0}\" x2=\"{0}\" y1=\"{1}\" y2=\"{2}\" stroke=\"#888\"/>\n", zero,
                   f.top, f.top + f.height);
  h += chart::x_axis(
      f, -static_cast<double>(widest), static_cast<double>(widest),
      [&](double v) {
        std::string s(v > 0 ? "+" : "");
        return s += u.tick(v);
      },
      u.header("change in time, test minus control"));
  return h + "</svg>\n";
}

/// The names whose time changed most: a chart and a table.
std::string changes_section(const diff_rows& rows, const report_view& control, std::size_t top) {
  std::string h;
  // The names whose time changed most, both ways, on a scale centred on no change.
  const tmod::row_list<tmod::diff_row>& all = rows[2];
  std::vector<std::size_t> order;
  for (std::size_t k = 0; k < all.size(); ++k)
    if (all[k].diff_duration != 0) order.push_back(k);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return std::abs(all[a].diff_duration) > std::abs(all[b].diff_duration);
  });
  if (order.size() > top) order.resize(top);
  h += fmt::format("<h2>Largest changes in time (of {} names)</h2>\n", page::count(all.size()));
  if (order.empty()) return h + "<p>No name's time changed.</p>\n";
  h += changes_chart(all, order, control.unit);
  std::int64_t longest = 0;
  for (const std::size_t k : order)
    longest = std::max({longest, all[k].control_total_duration, all[k].test_total_duration,
                        std::abs(all[k].diff_duration)});
  const page::time_unit u(control.unit, static_cast<double>(longest));
  h += "<table><tr><th>name</th><th>control count</th><th>" + u.header("control total") +
       "</th><th>test count</th><th>" + u.header("test total") + "</th><th>" + u.header("change") +
       "</th></tr>\n";
  for (const std::size_t k : order) {
    const tmod::diff_row& r = all[k];
    const std::string p = fmt::format("all.{}.", k);
    const std::string name = r.name.size() > 90 ? r.name.substr(0, 87) + "..." : r.name;
    h += fmt::format(
        "<tr><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
        "<td>{}</td></tr>\n",
        escape(name), checked(p + "control_counts", page::count(r.control_counts)),
        u.checked(p + "control_total_duration", static_cast<double>(r.control_total_duration)),
        checked(p + "test_counts", page::count(r.test_counts)),
        u.checked(p + "test_total_duration", static_cast<double>(r.test_total_duration)),
        u.checked(p + "diff_duration", static_cast<double>(r.diff_duration)));
  }
  return h + "</table>\n";
}

/// Names only in one run.
std::string only_in_one_section(const tmod::row_list<tmod::diff_row>& all, std::size_t top) {
  std::string h;
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
  return h;
}

}  // namespace

std::string diff_report_page(const diff_rows& rows, const report_view& control,
                             const report_view& test, const std::string& json,
                             const std::string& title, const std::string& about, std::size_t top) {
  std::string h = page::head(title);
  h += "<p>" + escape(about) + ".</p>\n";
  h += "<h2>Device time per rank, whole runs</h2>\n<div style=\"display:flex;gap:32px\">";
  h += "<div><h3>control</h3>\n" +
       temporal_section(control, "control_temporal_breakdown", 420, true) + "</div>";
  h += "<div><h3>test</h3>\n" + temporal_section(test, "test_temporal_breakdown", 420, true) +
       "</div></div>\n";
  h += changes_section(rows, control, top) + only_in_one_section(rows[2], top);
  return h + page::data_and_end(json);
}

}  // namespace tracemodel_cli
