// The device-time report of the program's traces (device_report.hpp).
#include "device_report.hpp"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <memory>

#include "input.hpp"

namespace tracemodel_cli {

device_report read_device_report(const std::vector<std::string>& paths, bool hta,
                                 tmod::gpu_report_options options) {
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
