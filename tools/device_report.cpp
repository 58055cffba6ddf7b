// The device-time report of the program's traces (device_report.hpp).
#include "device_report.hpp"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <memory>

#include "cluster.hpp"
#include "input.hpp"
#include "program.hpp"

namespace tracemodel_cli {

device_report gather_device_report(std::vector<tmod::gpu_rank_part> parts, bool hta,
                                   unread_files unread, const std::vector<std::string>& files) {
  say_unread(unread);
  if (parts.empty()) throw tmod::input_error("no rank could be read");
  device_report r;
  r.unread = std::move(unread);
  if (hta)
    r.hta = tmod::hta::gather_gpu_report(std::move(parts));
  else
    r.exact = tmod::gather_gpu_report(std::move(parts));
  const report_view v = r.view();
  report_repairs(files.size() == 1 ? files[0] : std::to_string(v.ranks.size()) + " ranks",
                 v.repairs);
  return r;
}

device_report read_device_report(const std::vector<std::string>& paths, bool hta,
                                 tmod::gpu_report_options options,
                                 const std::string& scheduler_file) {
  if (!scheduler_file.empty()) {
    if (options.each_rank)
      throw usage_error{
          "--scheduler-file: this command's work on each rank's events is not done "
          "on a cluster (docs/cluster.md)"};
    const std::vector<std::string> files = tmod::trace_files(paths);
    if (files.empty()) throw tmod::input_error("no trace files in the paths given");
    unread_files unread;
    auto parts = cluster_gpu_parts(scheduler_file, files, hta, options.series, unread);
    return gather_device_report(std::move(parts), hta, std::move(unread), files);
  }
  // Progress on a terminal when there are several ranks: "ranks: k/n" as each is done.
  const std::size_t files = tmod::trace_files(paths).size();
  if (::isatty(STDERR_FILENO) && files > 1) {
    auto done = std::make_shared<std::atomic<std::size_t>>(0);
    options.each_rank = [inner = options.each_rank, done, files](std::int64_t rank,
                                                                 tmod::event_table& t) {
      if (inner) inner(rank, t);
      const std::size_t k = ++*done;
      std::fprintf(stderr, "\rranks: %zu/%zu%s", k, files, k == files ? "\n" : "");
    };
  }
  device_report r;
  if (hta)
    r.hta = tmod::hta::make_gpu_report(paths, options);
  else
    r.exact = tmod::make_gpu_report(paths, options);
  const report_view v = r.view();
  report_repairs(paths.size() == 1 ? paths[0] : std::to_string(v.ranks.size()) + " ranks",
                 v.repairs);
  return r;
}

}  // namespace tracemodel_cli
