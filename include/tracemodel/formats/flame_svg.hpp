// tracemodel/formats — a per-thread flame chart as a standalone SVG.
//
//   tracemodel::analyze(table);                       // the chart needs the tree
//   std::string svg = tracemodel::flame_svg(table);   // or write_flame_svg_file(table, path)
//
// Time runs left to right over the whole trace; each thread (and device stream) is a lane,
// nesting goes downwards within a lane; forward/backward links are drawn as arcs from the
// forward op to its backward op. Every event has a tooltip (`<title>`) with its name, kind,
// duration and fields (the reflected payload fields, then the event's attributes). Instant
// events (allocations) are left out. No script, no external resources: it opens in any
// browser and in image viewers that read SVG.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <limits>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "tracemodel/algo/key_averages.hpp"
#include "tracemodel/algo/walk.hpp"
#include "tracemodel/config.hpp"
#include "tracemodel/formats/xml_escape.hpp"
#include "tracemodel/model/reflect.hpp"
#include "tracemodel/model/table.hpp"

TRACEMODEL_BEGIN_NAMESPACE

struct flame_options {
  double width = 1600;     ///< pixels of the time axis
  double row_height = 18;  ///< pixels per nesting level
  double min_width = 0.3;  ///< narrower events are drawn this wide
  std::string title = "tracemodel flame chart";
};

namespace detail {

/// A stable colour per name: warm hues for ops, blue ones for device activity.
inline std::string flame_colour(std::string_view name, bool device) {
  std::uint32_t h = 2166136261u;
  for (const char c : name) h = (h ^ static_cast<unsigned char>(c)) * 16777619u;
  const unsigned hue = device ? 190 + h % 40 : 10 + h % 40;
  const unsigned light = 55 + (h >> 8) % 20;
  return "hsl(" + std::to_string(hue) + ",70%," + std::to_string(light) + "%)";
}

/// "key: value" lines of an event's payload fields and attributes.
template <class Schema>
std::string flame_tooltip(const basic_event_table<Schema>& t,
                          const typename basic_event_table<Schema>::event_type& e) {
  std::string s(t.name(e));
  s += "\nkind: ";
  s += Schema::kind_names[e.fields.index()];
  s += "\nduration: ";
  s += format_duration(e.duration_ns());
  e.visit([&](const auto& f) {
    using F = std::remove_cvref_t<decltype(f)>;
    if constexpr (reflectable<F>) {
      for_each_field(f, [&](std::string_view key, const auto& v) {
        using V = std::remove_cvref_t<decltype(v)>;
        if (key == "name" || key == "end_ns") return;
        if constexpr (std::is_same_v<F, extra_fields<event_kind::op>>)
          if (key == "depth" && f.depth == unknown_depth) return;  // (not recorded)
        if constexpr (std::is_same_v<V, name_id>) {
          s += "\n" + std::string(key) + ": " + std::string(t.strings.view(v));
        } else if constexpr (std::is_same_v<V, bool>) {
          s += "\n" + std::string(key) + ": " + (v ? "true" : "false");
        } else if constexpr (std::is_arithmetic_v<V>) {
          s += "\n" + std::string(key) + ": " + std::to_string(v);
        }
      });
    }
  });
  // Input shapes, as PyTorch's "Input Dims".
  const auto ins = t.inputs_of(e);
  if (!ins.empty()) {
    s += "\ninputs:";
    for (std::size_t k = 0; k < ins.size(); k += std::max<std::uint32_t>(ins[k].subtree, 1)) {
      s += k ? ", " : " ";
      const auto sizes = t.sizes(ins[k]);
      if (ins[k].kind == input_kind::tensor) {
        s += t.strings.view(ins[k].dtype);
        s += '[';
        for (std::size_t d = 0; d < sizes.size(); ++d) {
          if (d) s += ',';
          s += std::to_string(sizes[d]);
        }
        s += ']';
      } else {
        s += input_kind_names[static_cast<std::size_t>(ins[k].kind)];
      }
    }
  }
  for (const attribute& a : t.attrs_of(e)) {
    s += '\n';
    s += t.strings.view(a.key);
    s += ": ";
    switch (a.type) {
      case attr_type::integer:
        s += std::to_string(a.i);
        break;
      case attr_type::unsigned_integer:
        s += std::to_string(a.u);
        break;
      case attr_type::floating:
        s += std::to_string(a.f);
        break;
      case attr_type::boolean:
        s += a.b ? "true" : "false";
        break;
      case attr_type::string:
      case attr_type::verbatim:
        s += t.strings.view(a.s);
        break;
      case attr_type::int_list:
        for (std::int64_t v : t.int_list(a)) s += std::to_string(v) + " ";
        break;
      case attr_type::string_list:
        for (name_id v : t.string_list(a)) s += std::string(t.strings.view(v)) + " ";
        break;
    }
  }
  return s;
}
}  // namespace detail

/// The flame chart of a table whose tree is built.
template <class Schema>
std::string flame_svg(const basic_event_table<Schema>& t, const flame_options& o = {}) {
  // Which events are drawn, the time range, the lanes.
  std::int64_t t0 = std::numeric_limits<std::int64_t>::max(),
               t1 = std::numeric_limits<std::int64_t>::min();
  auto drawn = [](const auto& e) {
    if (e.template is<event_kind::allocation>() || e.template is<event_kind::out_of_memory>())
      return false;
    const std::int64_t end = e.end_ns();
    return end != no_end_ns && end >= e.start_ns;
  };
  std::vector<std::pair<process_key, thread_key>> lanes;
  std::map<std::pair<process_key, thread_key>, std::size_t> lane_of;
  for (const auto& e : t.events) {
    if (!drawn(e)) continue;
    t0 = std::min(t0, e.start_ns);
    t1 = std::max(t1, e.end_ns());
    const auto key = std::make_pair(e.pid, e.tid);
    if (lane_of.try_emplace(key, lanes.size()).second) lanes.push_back(key);
  }
  // Depth within the lane: ancestors on the same lane.
  std::vector<std::uint32_t> depth(t.size(), 0);
  std::vector<std::uint32_t> lane_rows(lanes.size(), 1);
  walk_preorder(t, [&](event_index i, std::uint32_t) {
    const auto& e = t.events[i];
    const event_index p = e.parent;
    depth[i] =
        p != no_event && t.events[p].pid == e.pid && t.events[p].tid == e.tid && drawn(t.events[p])
            ? depth[p] + 1
            : 0;
    if (drawn(e)) {
      auto& rows = lane_rows[lane_of[{e.pid, e.tid}]];
      rows = std::max(rows, depth[i] + 1);
    }
  });
  const double span = t1 > t0 ? static_cast<double>(t1 - t0) : 1.0;
  const double margin = 10, header = 20, title_h = 28;
  std::vector<double> lane_y(lanes.size() + 1, title_h);
  for (std::size_t k = 0; k < lanes.size(); ++k)
    lane_y[k + 1] = lane_y[k] + header + o.row_height * lane_rows[k] + margin;
  const double width = o.width + 2 * margin;
  const double height = lane_y.back() + margin;
  auto x_of = [&](std::int64_t ns) {
    return margin + o.width * static_cast<double>(ns - t0) / span;
  };
  auto y_of = [&](const auto& e, event_index i) {
    return lane_y[lane_of[{e.pid, e.tid}]] + header + o.row_height * depth[i];
  };
  char num[64];
  auto fmt = [&num](double v) {
    std::snprintf(num, sizeof num, "%.2f", v);
    return std::string(num);
  };

  std::string s;
  s += "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  s += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + fmt(width) + "\" height=\"" +
       fmt(height) + "\" viewBox=\"0 0 " + fmt(width) + " " + fmt(height) +
       "\" font-family=\"monospace\" font-size=\"11\">\n";
  s += "<style>rect.e{stroke:#fff;stroke-width:0.3}rect.e:hover{stroke:#000;stroke-width:1}"
       "path.link{fill:none;stroke:#5a3fd1;stroke-opacity:0.55;stroke-width:1.2}"
       "text.l{pointer-events:none}</style>\n";
  s += "<rect x=\"0\" y=\"0\" width=\"" + fmt(width) + "\" height=\"" + fmt(height) +
       "\" fill=\"#fafafa\"/>\n";
  s += "<text x=\"" + fmt(margin) + "\" y=\"18\" font-size=\"14\">";
  append_xml_escaped(s, o.title);
  s += " \xe2\x80\x94 " + std::to_string(t.size()) + " events, " +
       format_duration(t1 > t0 ? t1 - t0 : 0) + "</text>\n";
  for (std::size_t k = 0; k < lanes.size(); ++k) {
    auto key_text = [&t](std::uint64_t key) {
      return basic_event_table<Schema>::is_string_key(key)
                 ? std::string(t.key_label(key))
                 : std::to_string(static_cast<std::int64_t>(key));
    };
    const std::string label = "thread " + key_text(static_cast<std::uint64_t>(lanes[k].first)) +
                              "/" + key_text(lanes[k].second);
    s += "<text x=\"" + fmt(margin) + "\" y=\"" + fmt(lane_y[k] + 14) + "\" fill=\"#333\">";
    append_xml_escaped(s, label);
    s += "</text>\n";
  }
  for (std::size_t i = 0; i < t.size(); ++i) {
    const auto& e = t.events[i];
    if (!drawn(e)) continue;
    const double x = x_of(e.start_ns);
    const double w = std::max(o.min_width, x_of(e.end_ns()) - x);
    const double y = y_of(e, static_cast<event_index>(i));
    const std::string_view name = t.name(e);
    s += "<g><title>";
    append_xml_escaped(s, detail::flame_tooltip(t, e));
    s += "</title><rect class=\"e\" x=\"" + fmt(x) + "\" y=\"" + fmt(y) + "\" width=\"" + fmt(w) +
         "\" height=\"" + fmt(o.row_height - 1) + "\" fill=\"" +
         detail::flame_colour(name, e.template is<event_kind::device_activity>()) + "\"/>";
    const auto chars = static_cast<std::size_t>((w - 4) / 6.6);
    if (chars >= 3) {
      s += "<text class=\"l\" x=\"" + fmt(x + 2) + "\" y=\"" + fmt(y + o.row_height - 5) + "\">";
      append_xml_escaped(
          s, name.size() <= chars ? name : std::string(name.substr(0, chars - 2)) + "..");
      s += "</text>";
    }
    s += "</g>\n";
  }
  // Forward/backward links as arcs above the two events.
  for (const flow_link& l : t.links) {
    if (l.kind != flow_kind::fwd_bwd) continue;
    const auto& a = t.events[l.from];
    const auto& b = t.events[l.to];
    if (!drawn(a) || !drawn(b)) continue;
    const double x1 =
        x_of(a.start_ns) + std::max(o.min_width, x_of(a.end_ns()) - x_of(a.start_ns)) / 2;
    const double y1 = y_of(a, l.from);
    const double x2 =
        x_of(b.start_ns) + std::max(o.min_width, x_of(b.end_ns()) - x_of(b.start_ns)) / 2;
    const double y2 = y_of(b, l.to);
    const double lift = std::min(y1, y2) - 6 - std::min(40.0, std::abs(x2 - x1) / 8);
    s += "<path class=\"link\" d=\"M" + fmt(x1) + " " + fmt(y1) + " C" + fmt(x1) + " " + fmt(lift) +
         " " + fmt(x2) + " " + fmt(lift) + " " + fmt(x2) + " " + fmt(y2) + "\"/>\n";
  }
  s += "</svg>\n";
  return s;
}

template <class Schema>
void write_flame_svg_file(const basic_event_table<Schema>& t, const std::string& path,
                          const flame_options& o = {}) {
  const std::string svg = flame_svg(t, o);
  std::ofstream f(path, std::ios::binary);
  f.write(svg.data(), static_cast<std::streamsize>(svg.size()));
  if (!f) throw std::runtime_error("cannot write " + path);
}

TRACEMODEL_END_NAMESPACE
