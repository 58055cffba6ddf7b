// tracemodel report: gpu's analyses, each rank's critical path, the first rank's key averages
// and, when a rank has allocations, where the first such rank's memory goes, as one HTML page.
#include <algorithm>
#include <cstdio>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include <tracemodel/algo/analyze.hpp>
#include <tracemodel/algo/key_averages.hpp>
#include <tracemodel/algo/memory_timeline.hpp>

#include <tracemodel/formats/rank_parts.hpp>
#include <tracemodel/hta/report.hpp>

#include "../cluster.hpp"
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

/// What the page shows of a rank beside its device time.
struct rank_extras {
  std::string cpu;  ///< its key averages as a table
  critical_path_summary path;
  std::optional<memory_view> memory;  ///< when it has allocations
};

rank_extras extras_of(std::int64_t rank, tmod::event_table& t, bool hta) {
  rank_extras x;
  tmod::analyze(t);
  x.cpu = tmod::format_key_averages(tmod::key_averages(t), 15);
  x.path = summary_of(rank, t, hta);
  if (std::any_of(t.events.begin(), t.events.end(),
                  [](const auto& e) { return e.template is<tmod::event_kind::allocation>(); }))
    x.memory = memory_view_of(t, tmod::memory_timeline(t, {.sample_limit = 1000}), 20, 1000);
  return x;
}

/// A rank's part of the page, as a cluster's worker makes it (`report-part`).
struct report_part {
  tmod::gpu_rank_part gpu;
  rank_extras extras;
};

}  // namespace report_command
}  // namespace tracemodel_cli

template <>
struct tracemodel::part_members<tracemodel_cli::critical_path_summary> {
  using T = tracemodel_cli::critical_path_summary;
  static constexpr auto of = std::tuple{&T::rank,   &T::window, &T::nodes,    &T::edges,
                                        &T::events, &T::length, &T::bound_by, &T::top};
};
template <>
struct tracemodel::part_members<tracemodel::memory_sample> {
  using T = tracemodel::memory_sample;
  static constexpr auto of = std::tuple{&T::time_ns, &T::bytes};
};
template <>
struct tracemodel::part_members<tracemodel::memory_peak> {
  using T = tracemodel::memory_peak;
  static constexpr auto of = std::tuple{&T::time_ns, &T::bytes, &T::by_category, &T::sample};
};
template <>
struct tracemodel::part_members<tracemodel_cli::memory_live_row> {
  using T = tracemodel_cli::memory_live_row;
  static constexpr auto of =
      std::tuple{&T::address,      &T::bytes,    &T::category, &T::tensor_id,
                 &T::allocated_by, &T::freed_by, &T::frame,    &T::allocated_ns};
};
template <>
struct tracemodel::part_members<tracemodel_cli::memory_view> {
  using T = tracemodel_cli::memory_view;
  static constexpr auto of =
      std::tuple{&T::device,      &T::from_file, &T::blocks, &T::records, &T::samples,
                 &T::live_blocks, &T::points,    &T::peak,   &T::live};
};
template <>
struct tracemodel::part_members<tracemodel_cli::report_command::rank_extras> {
  using T = tracemodel_cli::report_command::rank_extras;
  static constexpr auto of = std::tuple{&T::cpu, &T::path, &T::memory};
};
template <>
struct tracemodel::part_members<tracemodel_cli::report_command::report_part> {
  using T = tracemodel_cli::report_command::report_part;
  static constexpr auto of = std::tuple{&T::gpu, &T::extras};
};

namespace tracemodel_cli {
namespace report_command {

/// `report-part FILE --place K [--hta]`: a rank's part of the page, as bytes on stdout (what a
/// cluster's worker runs for `report --scheduler-file`; not in --help).
int run_part(arguments& a) {
  bool hta = false;
  std::size_t place = 0;
  a.flag("--hta", hta);
  a.count("--place", place);
  a.parse();
  const std::string& file = a.one_trace();
  tmod::gpu_report_options go;  // (as `report` reads: the series kept, one thread)
  go.threads = 1;
  report_part p;
  go.each_rank = [&](std::int64_t rank, tmod::event_table& t) {
    p.extras = extras_of(rank, t, hta);
  };
  p.gpu = hta ? tmod::hta::read_gpu_rank_part(file, static_cast<std::int64_t>(place), go)
              : tmod::read_gpu_rank_part(file, static_cast<std::int64_t>(place), go);
  const std::string bytes = tmod::encode_part(p, "report");
  return std::fwrite(bytes.data(), 1, bytes.size(), stdout) == bytes.size() ? 0 : 1;
}

int run(arguments& a) {
  bool hta = false;
  std::string output, scheduler_file;
  a.flag("--hta", hta);
  a.text("-o", output);
  a.text("--scheduler-file", scheduler_file);
  a.parse();
  if (a.positional.empty()) throw usage_error{"missing TRACE"};
  if (output.empty()) throw usage_error{"report needs -o FILE.html"};
  std::mutex m;
  std::map<std::int64_t, std::string> cpu;  // the stats table of each rank
  std::map<std::int64_t, critical_path_summary> cps;
  std::map<std::int64_t, memory_view> memory;  // the ranks with allocations
  auto keep = [&](std::int64_t rank, rank_extras x) {
    const std::lock_guard lock(m);
    if (x.memory) memory[rank] = std::move(*x.memory);
    cpu[rank] = std::move(x.cpu);
    cps[rank] = std::move(x.path);
  };
  device_report rep;
  if (scheduler_file.empty()) {
    tmod::gpu_report_options go;
    go.each_rank = [&](std::int64_t rank, tmod::event_table& t) {
      keep(rank, extras_of(rank, t, hta));
    };
    rep = read_device_report(a.positional, hta, go);
  } else {  // each rank's part made on a worker by this program's `report-part`
    const std::vector<std::string> files = tmod::trace_files(a.positional);
    if (files.empty()) throw tmod::input_error("no trace files in the paths given");
    std::vector<std::string> options{"--kind", "report", "--program", program_path()};
    if (hta) options.emplace_back("--hta");
    unread_files unread;
    std::vector<tmod::gpu_rank_part> parts;
    for (auto& [place, bytes] : cluster_parts(scheduler_file, files, options, unread)) {
      report_part p = tmod::decode_part<report_part>(bytes, "report");
      p.gpu.file = files[place];
      keep(p.gpu.result.rank, std::move(p.extras));
      parts.push_back(std::move(p.gpu));
    }
    rep = gather_device_report(std::move(parts), hta, std::move(unread), files);
  }
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
  return rep.unread.empty() ? 0 : 1;
}

const registrar report{
    {"report",
     "  report  gpu's analyses, the first rank's key averages and memory as one HTML page\n"
     "            -o FILE.html (required)        --hta\n"
     "            --scheduler-file FILE          read the ranks on the Dask cluster FILE names\n"
     "                                           (docs/cluster.md)\n",
     80, run}};
const registrar report_part_command{{"report-part", "", 1000, run_part}};

}  // namespace report_command
}  // namespace tracemodel_cli
