// The device-time report of the traces a command names, by the exact rules or by HTA's, read
// with the program's progress line and repairs (gpu, report and diff use it).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <tracemodel/formats/gpu_report.hpp>
#include <tracemodel/hta/report.hpp>

#include "render/gpu.hpp"

namespace tracemodel_cli {

/// One report, of either rules.
struct device_report {
  std::optional<tmod::gpu_report> exact;
  std::optional<tmod::hta::gpu_report> hta;
  [[nodiscard]] report_view view() const {
    return exact ? report_view::of(*exact) : report_view::of(*hta);
  }
};

/// Reads and analyses `paths` (`options` as `make_gpu_report` takes them), with a progress line
/// on a terminal when there are several ranks, and says what reading repaired.
[[nodiscard]] device_report read_device_report(const std::vector<std::string>& paths, bool hta,
                                               tmod::gpu_report_options options);

}  // namespace tracemodel_cli
