// tracemodel critical-path: the longest chain of dependent host ops, launches and device work,
// and what its time is spent on.
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <tracemodel/formats/critical_path_overlay.hpp>
#include <tracemodel/formats/ranks.hpp>
#include <tracemodel/hta/read.hpp>

#include "../input.hpp"
#include "../program.hpp"
#include "../render/critical_path.hpp"

namespace tracemodel_cli {
namespace critical_path_command {  // (named: the parts compile in batches)

struct request {
  critical_path_request path;
  std::optional<std::int64_t> rank;
  std::string output;
  bool json = false;
};

int on_table(const request& q, tmod::event_table& t) {
  const tmod::critical_path cp = critical_path_for(t, q.path);
  if (!q.path.annotation.empty() && !cp.window)
    throw tmod::input_error("no event named like '" + q.path.annotation + "' (occurrence " +
                            std::to_string(q.path.instance) + ")");
  if (!q.output.empty()) {
    tmod::write_critical_path_overlay(t, cp, q.output);
    std::printf("wrote %s (%zu critical events)\n", q.output.c_str(), cp.events.size());
  } else if (q.json) {
    write_critical_path_json(t, cp, q.path);
  } else {
    print_critical_path(t, cp, q.path);
  }
  return 0;
}

/// One rank of a folder of ranks (`--rank R`, else the first).
int of_rank(const request& q, const std::string& trace) {
  const std::vector<std::string> files = tmod::trace_files({trace});
  // Each file's rank first (cheap: the ranks' tables are dropped at once), then the one asked.
  const tmod::read_options ro = q.path.hta ? tmod::hta::reading() : tmod::read_options{};
  const auto ranks =
      tmod::for_each_rank(files, ro, [](std::int64_t, tmod::event_table&) { return 0; });
  if (ranks.empty()) throw tmod::input_error("no trace files in " + trace);
  const std::int64_t want = q.rank.value_or(ranks.front().first);
  int status = -1;
  (void)tmod::for_each_rank(files, ro, [&](std::int64_t rank, tmod::event_table& t) {
    if (rank != want) return 0;
    report_repairs(trace + " (rank " + std::to_string(rank) + ")", t.anomalies);
    status = on_table(q, t);
    return 0;
  });
  if (status < 0) throw tmod::input_error("no rank " + std::to_string(want) + " in " + trace);
  return status;
}

int run(arguments& a) {
  request q;
  a.text("--annotation", q.path.annotation);
  a.count("--instance", q.path.instance);
  a.value("--rank", [&](const std::string& v) {
    q.rank = static_cast<std::int64_t>(parse_count("--rank", v));
  });
  a.count("--top", q.path.top);
  a.flag("--hta", q.path.hta);
  a.text("-o", q.output);
  a.most_traces = 1;
  a.parse();
  q.json = a.json;
  if (q.path.top == 0) q.path.top = 10;
  const std::string& trace = a.one_trace();
  if (q.rank || std::filesystem::is_directory(trace)) return of_rank(q, trace);
  return with_trace(trace, q.path.hta ? reading::hta : reading::exact, true,
                    [&](tmod::event_table& t) { return on_table(q, t); });
}

const registrar critical_path{
    {"critical-path",
     "  critical-path  the longest chain of dependent host ops, launches and device work,\n"
     "          and what its time is spent on (cpu_bound, gpu_compute_bound, ...)\n"
     "            --annotation NAME              the window: an event whose name contains NAME\n"
     "                                           (default: the whole trace)\n"
     "            --instance N                   its N-th occurrence, from 0 (default: 0)\n"
     "            --rank R                       rank R's file (TRACE: a folder of ranks;\n"
     "                                           default: the first rank)\n"
     "            --top K                        events shown (default: 10)\n"
     "            --hta                          Holistic Trace Analysis's rules (its times in\n"
     "                                           us, its graph, its ties)\n"
     "            -o OVERLAID.json               the trace with the path drawn on it: its events\n"
     "                                           marked args.critical, its edges as flows\n",
     100, run}};

}  // namespace critical_path_command
}  // namespace tracemodel_cli
