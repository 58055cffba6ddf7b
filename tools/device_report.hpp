// The device-time report of the traces a command names, by the exact rules or by HTA's, read
// with the program's progress line and repairs (gpu, report and diff use it).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <tracemodel/formats/gpu_report.hpp>
#include <tracemodel/hta/report.hpp>

#include "render/gpu.hpp"

namespace tracemodel_cli {

/// One report, of either rules.
struct device_report {
  std::optional<tmod::gpu_report> exact;
  std::optional<tmod::hta::gpu_report> hta;
  std::vector<std::pair<std::string, std::string>> unread;  ///< file, reason (a cluster's run)
  [[nodiscard]] report_view view() const {
    report_view v = exact ? report_view::of(*exact) : report_view::of(*hta);
    v.unread = unread;
    return v;
  }
};

/// The report of parts made on a cluster (`unread`: the files that failed, said on stderr).
[[nodiscard]] device_report gather_device_report(
    std::vector<tmod::gpu_rank_part> parts, bool hta,
    std::vector<std::pair<std::string, std::string>> unread, const std::vector<std::string>& files);

/// Reads and analyses `paths` (`options` as `make_gpu_report` takes them), with a progress line
/// on a terminal when there are several ranks, and says what reading repaired. With
/// `scheduler_file`, on that Dask cluster (cluster.hpp): a file that fails is said on stderr and
/// kept in `unread` while the other ranks' results come back.
[[nodiscard]] device_report read_device_report(const std::vector<std::string>& paths, bool hta,
                                               tmod::gpu_report_options options,
                                               const std::string& scheduler_file = {});

}  // namespace tracemodel_cli
