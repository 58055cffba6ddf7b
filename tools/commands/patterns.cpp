// tracemodel patterns: PyTorch's anti-patterns (TorchTidy), with the nearest user frame.
#include <cstdio>
#include <optional>
#include <regex>
#include <string>
#include <tuple>

#include <tracemodel/algo/patterns.hpp>
#include <tracemodel/algo/pytorch_patterns.hpp>
#include <tracemodel/formats/device_properties.hpp>

#include "../input.hpp"
#include "../program.hpp"

namespace tracemodel_cli {
namespace patterns_command {  // (named: the parts compile in batches)

void write_results(const tmod::event_table& t, const tmod::tree_view<tmod::default_schema>& view,
                   const std::vector<tmod::pattern_result>& results) {
  json_to_stdout([&](tmod::json_output& out) {
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
        out.raw(",\"ts_ns\":").integer(e.start_ns).raw(",\"location\":");
        out.string(tmod::location_of(view, r, m)).ch('}');
      }
      out.raw("]}");
    }
    out.raw("\n]}\n");
  });
}

int run(arguments& a) {
  std::string framework_prefix = "torch/";
  std::optional<std::string> name_regex;
  bool no_for_loop = false;
  a.text("--framework-prefix", framework_prefix);
  a.value("--name", [&](const std::string& v) {
    try {
      const std::regex check(v);
    } catch (const std::regex_error& e) {
      throw usage_error{std::string("--name: not a regular expression: ") + e.what()};
    }
    name_regex = v;
  });
  a.flag("--no-for-loop", no_for_loop);
  a.most_traces = 1;
  a.parse();
  return with_trace(a.one_trace(), reading::exact, true, [&](tmod::event_table& t) {
    tmod::pattern_context ctx = tmod::context_of(t, tmod::device_properties(t));
    ctx.framework_prefix = framework_prefix;
    auto builtin = tmod::pytorch_patterns({.for_loop_indexing = !no_for_loop});
    auto by_name = tmod::name_pattern(name_regex.value_or(""));
    by_name.enabled = name_regex.has_value();
    const tmod::tree_view view(t);
    auto results = std::apply(
        [&](auto&... p) { return tmod::find_patterns(view, ctx, p..., by_name); }, builtin);
    if (!name_regex) results.pop_back();
    if (a.json)
      write_results(t, view, results);
    else
      std::fputs(tmod::format_pattern_report(results).c_str(), stdout);
    return 0;
  });
}

const registrar patterns{
    {"patterns",
     "  patterns  PyTorch's anti-patterns (TorchTidy), with the nearest user frame\n"
     "            --framework-prefix P           frames of files under P are not user code\n"
     "                                           (default: torch/)\n"
     "            --name REGEX                   also report events whose name matches REGEX\n"
     "            --no-for-loop                  leave out the for-loop indexing pattern\n",
     60, run}};

}  // namespace patterns_command
}  // namespace tracemodel_cli
