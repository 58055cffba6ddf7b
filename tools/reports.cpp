// tracemodel stats, tree and patterns: the reports on the analysed table.
#include <cstdio>
#include <map>
#include <regex>
#include <string>
#include <tuple>
#include <vector>

#include <tracemodel/algo/key_averages.hpp>
#include <tracemodel/algo/patterns.hpp>
#include <tracemodel/algo/pytorch_patterns.hpp>
#include <tracemodel/algo/walk.hpp>
#include <tracemodel/formats/device_properties.hpp>
#include <tracemodel/formats/json_output.hpp>

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
  out.raw("{\"rows\":[");
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
    out.raw("{\"events\":[");
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
  out.raw("{\"patterns\":[");
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

}  // namespace tracemodel_cli
