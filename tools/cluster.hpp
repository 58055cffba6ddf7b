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

/// This program's path (/proc/self/exe), for workers that run it on the same storage.
[[nodiscard]] std::string program_path();

using unread_files = std::vector<std::pair<std::string, std::string>>;  ///< file, reason

/// Each file's part as bytes (place in `files`, bytes), computed on the cluster that
/// `scheduler_file` names by `python3 -m tracemodel parts OPTIONS... -- FILES...`; the files
/// that failed, with their reasons, in `unread`. The Python that runs it: $TRACEMODEL_PYTHON,
/// else python3.
[[nodiscard]] std::vector<std::pair<std::size_t, std::string>> cluster_parts(
    const std::string& scheduler_file, const std::vector<std::string>& files,
    const std::vector<std::string>& options, unread_files& unread);

/// Says on stderr that each of `unread` from its `from`-th on was not read.
void say_unread(const unread_files& unread, std::size_t from = 0);

/// The device-time parts of `files` (HTA's rules or the exact ones; `series`: the launch rows
/// and steps kept).
[[nodiscard]] std::vector<tmod::gpu_rank_part> cluster_gpu_parts(
    const std::string& scheduler_file, const std::vector<std::string>& files, bool hta, bool series,
    unread_files& unread);

}  // namespace tracemodel_cli
