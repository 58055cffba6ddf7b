// Ranks analysed on a Dask cluster (docs/cluster.md): the program runs `python3 -m tracemodel
// parts` (tracemodel.cluster), which has each rank read on a worker and hands back its part of
// the report as bytes (formats/rank_parts.hpp); the program gathers them as a local run does.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <tracemodel/formats/gpu_report.hpp>

namespace tracemodel_cli {

namespace tmod = tracemodel;

/// The parts of `files` (HTA's rules or the exact ones; `series`: the launch rows and steps
/// kept), computed on the cluster that `scheduler_file` names; the files that failed, with
/// their reasons, in `unread`. The Python that runs it: $TRACEMODEL_PYTHON, else python3.
[[nodiscard]] std::vector<tmod::gpu_rank_part> cluster_parts(
    const std::string& scheduler_file, const std::vector<std::string>& files, bool hta, bool series,
    std::vector<std::pair<std::string, std::string>>& unread);

}  // namespace tracemodel_cli
