// tracemodel/hta — one rank's parts under either rules, made where the rank is read (a cluster's
// worker): its part of the device-time report, and its totals for a trace diff.
//
//   std::string bytes = tracemodel::encode_part(
//       tracemodel::hta::read_diff_rank_part("rank-3.json", 3, {.hta = true}), "diff");
#pragma once

#include <cstdint>
#include <string>

#include "tracemodel/config.hpp"
#include "tracemodel/formats/rank_parts.hpp"
#include "tracemodel/hta/report.hpp"
#include "tracemodel/hta/trace_diff.hpp"

TRACEMODEL_BEGIN_NAMESPACE
namespace hta {

struct diff_part_options {
  bool hta = false;          ///< HTA's rules (hta/trace_diff.hpp), else the exact ones
  bool short_names = false;  ///< names shortened as HTA's use_short_name
  bool with_gpu = false;     ///< the device-time part too (without series), for a diff's page
  unsigned threads = 1;      ///< for reading and analysing the rank
};

/// Reads one file (`place`: its place in its list, for a rank found nowhere else) and makes its
/// diff part; input_error names the file.
[[nodiscard]] inline diff_rank_part read_diff_rank_part(const std::string& file, std::int64_t place,
                                                        const diff_part_options& o = {}) {
  read_options ro;
  ro.threads = o.threads;
  return read_rank(file, place, o.hta ? reading(ro) : ro, [&](std::int64_t rank, event_table& t) {
    diff_rank_part p;
    p.file = file;
    p.rank = rank;
    p.repairs = t.anomalies;
    p.totals = o.hta ? step_totals_of(frame(t), o.short_names)
                     : tracemodel::step_totals_of(t, o.short_names);
    if (o.with_gpu) {
      gpu_report_options go;
      go.series = false;
      go.threads = o.threads;
      p.gpu = o.hta ? hta::gpu_rank_part_of(rank, t, go, {o.threads, {}})
                    : tracemodel::gpu_rank_part_of(rank, t, go);
      p.gpu->file = file;
    }
    return p;
  });
}

}  // namespace hta
TRACEMODEL_END_NAMESPACE
