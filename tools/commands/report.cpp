// tracemodel report: gpu's analyses, each rank's critical path, the first rank's key averages
// and, when a rank has allocations, where the first such rank's memory goes, as one HTML page.
#include <algorithm>
#include <cstdio>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <tracemodel/algo/analyze.hpp>
#include <tracemodel/algo/key_averages.hpp>
#include <tracemodel/algo/memory_timeline.hpp>

#include "../device_report.hpp"
#include "../input.hpp"
#include "../program.hpp"
#include "../render/critical_path.hpp"
#include "../render/gpu.hpp"
#include "../render/memory.hpp"

namespace tracemodel_cli {
namespace report_command {  // (named: the parts compile in batches)

/// A rank's critical path of its first profiler step (of the whole trace without one).
critical_path_summary summary_of(std::int64_t rank, const tmod::event_table& t, bool hta) {
  tmod::critical_path cp = critical_path_for(t, {.hta = hta, .annotation = "ProfilerStep"});
  if (!cp.window) cp = critical_path_for(t, {.hta = hta});
  critical_path_summary c;
  c.rank = rank;
  c.window = "the whole trace";
  if (cp.window)  // (HTA's window is in whole microseconds)
    for (const auto& e : t.events)
      if (e.start_ns > cp.window->first - 1000 && e.start_ns < cp.window->first + 1000 &&
          t.name(e).find("ProfilerStep") != std::string_view::npos) {
        c.window = std::string(t.name(e));
        break;
      }
  c.nodes = cp.nodes.size();
  c.edges = cp.edges.size();
  c.events = cp.events.size();
  c.length = cp.length;
  c.bound_by = cp.bound_by;
  for (const auto& [i, ns] : tmod::top_events(cp, 5)) c.top.emplace_back(t.name(i), ns);
  return c;
}

int run(arguments& a) {
  bool hta = false;
  std::string output;
  a.flag("--hta", hta);
  a.text("-o", output);
  a.parse();
  if (a.positional.empty()) throw usage_error{"missing TRACE"};
  if (output.empty()) throw usage_error{"report needs -o FILE.html"};
  std::mutex m;
  std::map<std::int64_t, std::string> cpu;  // the stats table of each rank
  std::map<std::int64_t, critical_path_summary> cps;
  std::map<std::int64_t, memory_view> memory;  // the ranks with allocations
  tmod::gpu_report_options go;
  go.each_rank = [&](std::int64_t rank, tmod::event_table& t) {
    tmod::analyze(t);
    std::string text = tmod::format_key_averages(tmod::key_averages(t), 15);
    critical_path_summary c = summary_of(rank, t, hta);
    std::optional<memory_view> mv;
    if (std::any_of(t.events.begin(), t.events.end(),
                    [](const auto& e) { return e.template is<tmod::event_kind::allocation>(); }))
      mv = memory_view_of(t, tmod::memory_timeline(t, {.sample_limit = 1000}), 20, 1000);
    const std::lock_guard lock(m);
    if (mv) memory[rank] = std::move(*mv);
    cpu[rank] = std::move(text);
    cps[rank] = std::move(c);
  };
  const device_report rep = read_device_report(a.positional, hta, go);
  const report_view v = rep.view();
  const std::string title = "tracemodel report: " +
                            (a.positional.size() == 1 ? file_name(a.positional[0])
                                                      : std::to_string(v.ranks.size()) + " ranks");
  std::vector<critical_path_summary> paths;
  for (auto& [rank, c] : cps) paths.push_back(std::move(c));
  std::string json = gpu_json(v);  // with the critical paths beside the device analyses
  json.resize(json.rfind('}'));
  json += ",\n\"critical_path\":" + critical_path_rows(paths);
  std::string more;
  if (memory.empty()) {
    json += "}\n";
  } else {  // the first rank with allocations, its members prefixed "memory_"
    const auto& [rank, mv] = *memory.begin();
    tmod::json_output out = tmod::json_output::to_string(json);
    write_memory_json(mv, out, "memory_");
    out.flush();
    more = "<h2>Memory (rank " + std::to_string(rank) + ")</h2>\n" + memory_section(mv, "memory_");
  }
  const std::string page =
      gpu_report_page(v, json, cpu.empty() ? "" : cpu.begin()->second, title, paths, more);
  if (!write_file(output, page)) return 1;
  std::printf("wrote %s (%zu ranks)\n", output.c_str(), v.ranks.size());
  return 0;
}

const registrar report{
    {"report",
     "  report  gpu's analyses, the first rank's key averages and memory as one HTML page\n"
     "            -o FILE.html (required)        --hta\n",
     80, run}};

}  // namespace report_command
}  // namespace tracemodel_cli
