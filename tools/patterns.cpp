// tracemodel patterns.
#include <cstdio>
#include <regex>
#include <string>
#include <tuple>

#include <tracemodel/algo/patterns.hpp>
#include <tracemodel/algo/pytorch_patterns.hpp>
#include <tracemodel/formats/device_properties.hpp>
#include <tracemodel/formats/json_output.hpp>

#include "cli.hpp"

namespace tracemodel_cli {

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
