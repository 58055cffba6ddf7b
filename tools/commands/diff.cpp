// tracemodel diff: what changed from one run to another, per name of op and kernel.
#include <algorithm>
#include <cstdio>
#include <mutex>
#include <set>
#include <string>

#include <fmt/format.h>

#include <tracemodel/algo/trace_diff.hpp>
#include <tracemodel/formats/ranks.hpp>
#include <tracemodel/hta/read.hpp>
#include <tracemodel/hta/trace_diff.hpp>

#include <tracemodel/formats/rank_parts.hpp>

#include "../cluster.hpp"
#include "../device_report.hpp"
#include "../input.hpp"
#include "../program.hpp"
#include "../render/diff.hpp"

namespace tracemodel_cli {
namespace diff_command {  // (named: the parts compile in batches)

struct request {
  bool hta = false;
  bool short_names = false;
  std::optional<std::int64_t> iteration, rank;
  tmod::diff_device device = tmod::diff_device::all;
  std::size_t top = 0;
  std::string output, scheduler_file;
};

/// A side's ranks read on the Dask cluster of `q.scheduler_file` (docs/cluster.md): each rank's
/// totals, and its device-time part for the page, made on a worker.
void read_side_on_cluster(const request& q, const std::string& path, diff_side& s,
                          unread_files& unread) {
  const std::vector<std::string> files = tmod::trace_files({path});
  if (files.empty()) throw tmod::input_error("no trace files in " + path);
  std::vector<std::string> options{"--kind", "diff"};
  if (q.hta) options.emplace_back("--hta");
  if (q.short_names) options.emplace_back("--short-names");
  if (!q.output.empty()) options.emplace_back("--with-gpu");
  const std::size_t failed = unread.size();
  std::vector<tmod::diff_rank_part> parts;
  for (auto& [place, bytes] : cluster_parts(q.scheduler_file, files, options, unread)) {
    tmod::diff_rank_part p = tmod::decode_part<tmod::diff_rank_part>(bytes, "diff");
    p.file = files[place];
    parts.push_back(std::move(p));
  }
  say_unread(unread, failed);
  std::stable_sort(parts.begin(), parts.end(),
                   [](const auto& a, const auto& b) { return a.rank < b.rank; });
  for (std::size_t k = 1; k < parts.size(); ++k)
    if (parts[k - 1].rank == parts[k].rank)
      throw tmod::input_error("rank " + std::to_string(parts[k].rank) +
                              " is in two files: " + parts[k - 1].file + " and " + parts[k].file);
  std::vector<tmod::gpu_rank_part> gpu;
  for (tmod::diff_rank_part& p : parts) {
    s.repairs += p.repairs;
    s.ranks.emplace_back(p.rank, std::move(p.totals));
    if (p.gpu) gpu.push_back(std::move(*p.gpu));
  }
  if (!q.output.empty() && !gpu.empty())
    s.gpu = q.hta ? device_report{{}, tmod::hta::gather_gpu_report(std::move(gpu)), {}}
                  : device_report{tmod::gather_gpu_report(std::move(gpu)), {}, {}};
}

/// A side's totals per rank (and, for the page, its device report from the same reading).
diff_side read_side(const request& q, const std::string& path, unread_files& unread) {
  diff_side s;
  s.path = path;
  std::mutex m;
  auto totals = [&](std::int64_t, tmod::event_table& t) {
    {
      const std::lock_guard lock(m);
      s.repairs += t.anomalies;
    }
    return q.hta ? tmod::hta::step_totals_of(tmod::hta::frame(t), q.short_names)
                 : tmod::step_totals_of(t, q.short_names);
  };
  if (!q.scheduler_file.empty()) {
    read_side_on_cluster(q, path, s, unread);
  } else if (q.output.empty()) {
    s.ranks = q.hta ? tmod::hta::read_ranks({path}, {}, totals)
                    : tmod::for_each_rank(tmod::trace_files({path}), {}, totals);
  } else {  // the page shows each side's device time too: one reading for both
    tmod::gpu_report_options go;
    go.series = false;
    go.each_rank = [&](std::int64_t rank, tmod::event_table& t) {
      tmod::step_totals x = totals(rank, t);
      const std::lock_guard lock(m);
      s.ranks.emplace_back(rank, std::move(x));
    };
    s.gpu = q.hta ? device_report{{}, tmod::hta::make_gpu_report({path}, go), {}}
                  : device_report{tmod::make_gpu_report({path}, go), {}, {}};
    std::sort(s.ranks.begin(), s.ranks.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
  }
  if (s.ranks.empty()) throw tmod::input_error("no trace files in " + path);
  std::set<std::int64_t> steps;  // of every rank, as HTA lists a side's iterations
  for (const auto& [rank, x] : s.ranks)
    for (const auto& [n, by_device] : x.steps) steps.insert(n);
  s.rank = q.rank;
  if (!s.rank && q.hta) s.rank = s.ranks.front().first;  // HTA: the first rank
  bool found = false;
  for (const auto& [rank, x] : s.ranks)
    if (!s.rank || rank == *s.rank) {
      s.chosen += x;
      found = true;
    }
  if (!found) throw tmod::input_error(path + ": no rank " + std::to_string(*s.rank));
  s.iteration = q.iteration;
  if (!s.iteration && q.hta && !steps.empty()) s.iteration = *steps.begin();  // HTA: the first
  if (s.iteration && !steps.contains(*s.iteration))
    throw tmod::input_error(path + ": no step ProfilerStep#" + std::to_string(*s.iteration));
  report_repairs(path, s.repairs);
  return s;
}

int run(arguments& a) {
  request q;
  a.value("--iteration", [&](const std::string& v) {
    q.iteration = static_cast<std::int64_t>(parse_count("--iteration", v));
  });
  a.choice<tmod::diff_device>("--device",
                              {{"cpu", tmod::diff_device::cpu},
                               {"gpu", tmod::diff_device::gpu},
                               {"all", tmod::diff_device::all}},
                              "cpu, gpu or all", q.device);
  a.value("--rank", [&](const std::string& v) {
    q.rank = static_cast<std::int64_t>(parse_count("--rank", v));
  });
  a.flag("--short-names", q.short_names);
  a.count("--top", q.top);
  a.flag("--hta", q.hta);
  a.text("-o", q.output);
  a.text("--scheduler-file", q.scheduler_file);
  a.parse();
  if (a.positional.empty()) throw usage_error{"missing TRACE"};
  if (a.positional.size() != 2) throw usage_error{"diff needs two traces: CONTROL TEST"};
  unread_files unread;  // (a cluster's run: said on stderr, status 1)
  const diff_side control = read_side(q, a.positional[0], unread);
  const diff_side test = read_side(q, a.positional[1], unread);
  const int status = unread.empty() ? 0 : 1;
  const diff_rules rules{q.hta, q.hta ? tmod::hta::microseconds::name : tmod::nanoseconds::name};
  diff_rows rows;
  for (std::size_t d = 0; d < 3; ++d) {
    tmod::diff_selection sa;
    sa.device = static_cast<tmod::diff_device>(d);
    tmod::diff_selection sb = sa;
    sa.iteration = control.iteration;
    sb.iteration = test.iteration;
    rows[d] = tmod::compare_totals(control.chosen.select(sa), test.chosen.select(sb));
  }
  tmod::anomaly_counts repairs = control.repairs;
  repairs += test.repairs;
  if (!a.json && q.output.empty()) {
    print_diff(control, test, rows, rules, q.device, q.top == 0 ? 10 : q.top);
    return status;
  }
  const std::string json = diff_json(control, test, rows, repairs, rules);
  if (q.output.empty()) {
    std::fputs(json.c_str(), stdout);
    return status;
  }
  const std::string page = diff_report_page(
      rows, control.gpu->view(), test.gpu->view(), json,
      fmt::format("tracemodel diff: {} against {}", file_name(control.path), file_name(test.path)),
      fmt::format("control {} ({}), test {} ({}); {} rules", control.path, side_of(control),
                  test.path, side_of(test), q.hta ? "Holistic Trace Analysis's" : "exact"),
      q.top == 0 ? 15 : q.top);
  if (!write_file(q.output, page)) return 1;
  std::printf("wrote %s\n", q.output.c_str());
  return status;
}

const registrar diff{
    {"diff",
     "  diff    what changed from one run to another, per name of op and kernel: counts,\n"
     "          total times and their change (CONTROL TEST: a file or a folder of ranks each)\n"
     "            --iteration N                  the step ProfilerStep#N on both sides\n"
     "                                           (default: every event; --hta: the first step)\n"
     "            --device cpu|gpu|all           the side the text shows (default: all)\n"
     "            --rank R                       rank R of both sides (default: every rank\n"
     "                                           summed; --hta: the first rank)\n"
     "            --short-names                  names shortened as HTA's use_short_name\n"
     "            --top K                        rows of each list shown (default: 10)\n"
     "            --hta                          Holistic Trace Analysis's rules and columns\n"
     "            -o FILE.html                   a page: both runs' device time side by side\n"
     "                                           and the largest changes\n"
     "            --scheduler-file FILE          read the ranks on the Dask cluster FILE names\n"
     "                                           (docs/cluster.md)\n",
     90, run}};

}  // namespace diff_command
}  // namespace tracemodel_cli
