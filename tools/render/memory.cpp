// The memory timeline rendered (memory.hpp).
#include "memory.hpp"

#include <algorithm>
#include <cstdio>

#include <fmt/format.h>

#include <tracemodel/algo/key_averages.hpp>

#include "chart.hpp"
#include "page.hpp"

namespace tracemodel_cli {

namespace {
/// The unit bytes are shown in on a page: KiB below 1 MiB, MiB below 1 GiB, GiB from there.
struct byte_unit {
  const char* name;
  double scale;
  explicit byte_unit(std::int64_t largest) {
    const double b = static_cast<double>(largest < 0 ? -largest : largest);
    name = b < 1048576.0 ? "KiB" : b < 1073741824.0 ? "MiB" : "GiB";
    scale = b < 1048576.0 ? 1024.0 : b < 1073741824.0 ? 1048576.0 : 1073741824.0;
  }
};

std::string name_of(const tmod::event_table& t, tmod::event_index i) {
  return i == tmod::no_event ? std::string() : std::string(t.name(t.events[i]));
}
std::string_view category_name(tmod::memory_category c) {
  return tmod::memory_category_names[static_cast<std::size_t>(c)];
}
}  // namespace

memory_view memory_view_of(const tmod::event_table& t, const tmod::memory_timeline_result& m,
                           std::size_t top, std::size_t buckets) {
  memory_view v;
  v.device = tmod::memory_device_name(m.device);
  v.blocks = m.blocks.size();
  v.records = m.records.size();
  v.samples = m.series;
  v.points = tmod::memory_envelope(m.samples, buckets);
  v.peak = m.peak;
  v.live_blocks = m.live_at_peak.size();
  for (std::size_t k = 0; k < std::min(top, m.live_at_peak.size()); ++k) {
    const tmod::live_block& l = m.live_at_peak[k];
    const tmod::memory_block& b = m.blocks[l.block];
    memory_live_row r;
    r.address = b.address;
    r.bytes = l.bytes;
    r.category = l.category;
    r.tensor_id = b.tensor_id;
    r.allocated_by = name_of(t, l.allocated_by);
    r.freed_by = name_of(t, l.freed_by);
    r.frame = name_of(t, l.frame);
    if (b.allocation != tmod::no_event) r.allocated_ns = t.events[b.allocation].start_ns;
    v.live.push_back(std::move(r));
  }
  return v;
}

memory_view memory_view_of(const tmod::row_list<tmod::memory_sample>& samples,
                           std::size_t buckets) {
  memory_view v;
  v.device = "the file's device";
  v.from_file = true;
  v.samples = samples.size();
  v.points = tmod::memory_envelope(samples, buckets);
  for (std::size_t s = 0; s < samples.size(); ++s)
    if (const std::int64_t total = samples[s].total(); s == 0 || total > v.peak.bytes)
      v.peak = {samples[s].time_ns, total, samples[s].bytes, s};
  return v;
}

void print_memory(const memory_view& v) {
  if (v.samples == 0) {
    std::printf("no allocations on %s\n", v.device.c_str());
    return;
  }
  const std::int64_t t0 = v.points.front().time_ns;
  std::printf("memory on %s: peak %s (%lld bytes) at +%s after the first record\n",
              v.device.c_str(), tmod::format_memory(v.peak.bytes).c_str(),
              static_cast<long long>(v.peak.bytes),
              tmod::format_duration(v.peak.time_ns - t0).c_str());
  if (!v.from_file)
    std::printf("%zu blocks, %zu records, %zu samples\n", v.blocks, v.records, v.samples);
  std::printf("\nbytes per category at the peak\n");
  for (std::size_t c = 0; c < tmod::memory_categories; ++c)
    std::printf("  %-16s %14lld  %6.2f%%\n", std::string(tmod::memory_category_names[c]).c_str(),
                static_cast<long long>(v.peak.by_category[c]),
                v.peak.bytes > 0 ? 100.0 * static_cast<double>(v.peak.by_category[c]) /
                                       static_cast<double>(v.peak.bytes)
                                 : 0.0);
  if (v.from_file) return;
  std::printf("\nlargest blocks live at the peak (%zu of %zu)\n", v.live.size(), v.live_blocks);
  std::printf("  %14s  %-16s %-32s %-32s %s\n", "bytes", "category", "allocated by", "freed by",
              "frame");
  for (const memory_live_row& r : v.live)
    std::printf("  %14lld  %-16s %-32s %-32s %s\n", static_cast<long long>(r.bytes),
                std::string(category_name(r.category)).c_str(),
                r.allocated_by.empty() ? "-" : r.allocated_by.substr(0, 32).c_str(),
                r.freed_by.empty() ? "(live at the end)" : r.freed_by.substr(0, 32).c_str(),
                r.frame.empty() ? "-" : r.frame.c_str());
}

void write_memory_json(const memory_view& v, tmod::json_output& out, std::string_view prefix) {
  auto key = [&](std::string_view k) -> tmod::json_output& {
    return out.ch('"').raw(prefix).raw(k).raw("\":");
  };
  auto text_or_null = [&out](const std::string& s) {
    if (s.empty())
      out.raw("null");
    else
      out.string(s);
  };
  const std::int64_t t0 = v.points.empty() ? 0 : v.points.front().time_ns;
  out.ch(',');
  key("device").string(v.device);
  out.ch(',');
  key("blocks").unsigned_integer(v.blocks);
  out.ch(',');
  key("records").unsigned_integer(v.records);
  out.raw(",\n");
  key("peak").raw("{\"time_ns\":").integer(v.peak.time_ns);
  out.raw(",\"bytes\":").integer(v.peak.bytes).raw(",\"by_category\":{");
  for (std::size_t c = 0; c < tmod::memory_categories; ++c)
    out.raw(c ? "," : "")
        .string(tmod::memory_category_names[c])
        .ch(':')
        .integer(v.peak.by_category[c]);
  out.raw("}},\n");
  key("summary").raw("[{\"first_ns\":").integer(t0);
  out.raw(",\"peak_after_ns\":").integer(v.peak.time_ns - t0);
  out.raw(",\"peak_bytes\":").integer(v.peak.bytes);
  out.raw(",\"samples\":").unsigned_integer(v.samples);
  out.raw("}],\n");
  key("categories").ch('[');
  for (std::size_t c = 0; c < tmod::memory_categories; ++c) {
    out.raw(c ? ",\n" : "\n").raw("{\"category\":").string(tmod::memory_category_names[c]);
    out.raw(",\"bytes\":").integer(v.peak.by_category[c]).ch('}');
  }
  out.raw("],\n");
  key("timeline").raw("{\"categories\":[");
  for (std::size_t c = 0; c < tmod::memory_categories; ++c)
    out.raw(c ? "," : "").string(tmod::memory_category_names[c]);
  out.raw("],\"samples\":").unsigned_integer(v.samples).raw(",\"points\":[");
  for (std::size_t k = 0; k < v.points.size(); ++k) {
    out.raw(k ? ",\n[" : "\n[").integer(v.points[k].time_ns);
    for (const std::int64_t b : v.points[k].bytes) out.ch(',').integer(b);
    out.ch(']');
  }
  out.raw("]},\n");
  key("live_blocks").unsigned_integer(v.live_blocks).ch(',');
  key("live_at_peak").ch('[');
  for (std::size_t k = 0; k < v.live.size(); ++k) {
    const memory_live_row& r = v.live[k];
    out.raw(k ? ",\n" : "\n").raw("{\"address\":").id(r.address);
    out.raw(",\"bytes\":").integer(r.bytes).raw(",\"category\":").string(category_name(r.category));
    out.raw(",\"tensor_id\":").unsigned_integer(r.tensor_id).raw(",\"allocated_by\":");
    text_or_null(r.allocated_by);
    out.raw(",\"allocated_ns\":");
    if (r.allocated_ns < 0)
      out.raw("null");
    else
      out.integer(r.allocated_ns);
    out.raw(",\"allocated_after_ns\":").integer(r.allocated_ns < 0 ? 0 : r.allocated_ns - t0);
    out.raw(",\"freed_by\":");
    text_or_null(r.freed_by);
    out.raw(",\"frame\":");
    text_or_null(r.frame);
    out.ch('}');
  }
  out.raw("\n]}\n");
}

std::string memory_section(const memory_view& v, const std::string& key_prefix) {
  using page::escape;
  if (v.samples == 0) return "<p>No allocations.</p>\n";
  const std::int64_t t0 = v.points.front().time_ns, t1 = v.points.back().time_ns;
  const double span = t1 > t0 ? static_cast<double>(t1 - t0) : 1.0;
  const page::time_unit u("ns", span);
  const byte_unit bu(v.peak.bytes);
  auto mebibytes = [&](const std::string& path, std::int64_t bytes) {
    return fmt::format("<span data-check=\"{}{}\" data-scale=\"{}\">{}</span>", key_prefix, path,
                       bu.scale, page::grouped(static_cast<double>(bytes) / bu.scale, 2));
  };
  // The peak.
  std::string h = fmt::format(
      "<table><tr><th>device</th><th>peak ({})</th><th>{}</th><th>samples</th>{}</tr>\n"
      "<tr><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td>{}</tr></table>\n",
      bu.name, u.header("peak after the first record"), v.from_file ? "" : "<th>blocks</th>",
      escape(v.device), mebibytes("summary.0.peak_bytes", v.peak.bytes),
      u.checked(key_prefix + "summary.0.peak_after_ns", static_cast<double>(v.peak.time_ns - t0)),
      page::checked(key_prefix + "summary.0.samples", page::count(v.samples)),
      v.from_file ? "" : "<td>" + page::count(v.blocks) + "</td>");
  // The stacked timeline: each category between the sums below it and with it.
  std::int64_t top = 1;
  for (const auto& s : v.points) top = std::max(top, s.total());
  chart::frame f;
  f.width = 860;
  f.height = 220;
  h += chart::open(f, "memory by category over time");
  auto x_of = [&](std::int64_t t) { return f.left + static_cast<double>(t - t0) / span * f.width; };
  auto y_of = [&](std::int64_t b) {
    return f.top + f.height -
           static_cast<double>(std::max<std::int64_t>(b, 0)) / static_cast<double>(top) * f.height;
  };
  std::vector<std::int64_t> below(v.points.size(), 0);
  std::string legend = "<div class=\"legend\">";
  for (std::size_t c = 0; c < tmod::memory_categories; ++c) {
    std::string upper, lower;
    bool any = false;
    for (std::size_t k = 0; k < v.points.size(); ++k) {
      const std::int64_t b = v.points[k].bytes[c];
      any = any || b != 0;
      upper += fmt::format("{:.1f},{:.1f} ", x_of(v.points[k].time_ns), y_of(below[k] + b));
    }
    for (std::size_t k = v.points.size(); k-- > 0;) {
      lower += fmt::format("{:.1f},{:.1f} ", x_of(v.points[k].time_ns), y_of(below[k]));
      below[k] += v.points[k].bytes[c];
    }
    const char* color = c == tmod::memory_categories - 1 ? "#bab0ac" : page::colors[c];
    if (any)
      h += fmt::format(
          "<polygon fill=\"{}\" stroke=\"none\" points=\"{}{}\"><title>{}</title></polygon>\n",
          color, upper, lower, tmod::memory_category_labels[c]);
    legend += fmt::format("<span style=\"background:{}\"></span>{}", color,
                          tmod::memory_category_labels[c]);
  }
  h += chart::x_axis(
      f, 0, span, [&](double x) { return u.tick(x); }, u.header("time since the first record"));
  h += chart::y_axis(
      f, 0, static_cast<double>(top) / bu.scale,
      [](double y) {
        std::string s = page::grouped(y, 3);
        s.erase(s.find_last_not_of('0') + 1);
        if (s.back() == '.') s.pop_back();
        return s;
      },
      bu.name);
  h += "</svg>\n" + legend + "</div>\n";
  // Bytes per category at the peak.
  h += fmt::format(
      "<h3>At the peak</h3>\n<table><tr><th>category</th><th>{}</th><th>share</th></tr>\n",
      bu.name);
  for (std::size_t c = 0; c < tmod::memory_categories; ++c) {
    const std::int64_t b = v.peak.by_category[c];
    const double share =
        v.peak.bytes > 0 ? 100.0 * static_cast<double>(b) / static_cast<double>(v.peak.bytes) : 0;
    h += fmt::format("<tr><td class=\"l\">{}</td><td>{}</td><td>{}%</td></tr>\n",
                     tmod::memory_category_labels[c],
                     mebibytes(fmt::format("categories.{}.bytes", c), b), page::grouped(share, 1));
  }
  h += "</table>\n";
  if (v.from_file) return h;
  // The largest blocks live there.
  h += fmt::format(
      "<h3>The largest blocks live at the peak ({} of {})</h3>\n<table><tr><th>{}</th>"
      "<th>category</th><th>{}</th><th>allocated by</th><th>freed by</th><th>frame</th></tr>\n",
      page::count(v.live.size()), page::count(v.live_blocks), bu.name, u.header("allocated after"));
  for (std::size_t k = 0; k < v.live.size(); ++k) {
    const memory_live_row& r = v.live[k];
    const std::string after =
        r.allocated_ns < 0
            ? std::string("before")
            : u.checked(fmt::format("{}live_at_peak.{}.allocated_after_ns", key_prefix, k),
                        static_cast<double>(r.allocated_ns - t0));
    h += fmt::format(
        "<tr><td>{}</td><td class=\"l\">{}</td><td>{}</td><td class=\"l\">{}</td>"
        "<td class=\"l\">{}</td><td class=\"l\">{}</td></tr>\n",
        mebibytes(fmt::format("live_at_peak.{}.bytes", k), r.bytes), category_name(r.category),
        after, escape(r.allocated_by.empty() ? "-" : r.allocated_by),
        escape(r.freed_by.empty() ? "(live at the end)" : r.freed_by),
        escape(r.frame.empty() ? "-" : r.frame));
  }
  return h + "</table>\n";
}

std::string memory_page(const memory_view& v, const std::string& json, const std::string& title) {
  return page::head(title) + memory_section(v) + page::data_and_end(json);
}

}  // namespace tracemodel_cli
