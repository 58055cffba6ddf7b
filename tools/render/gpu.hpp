// The device-time report (formats/gpu_report.hpp, hta/report.hpp) rendered: `gpu`'s text
// tables, `gpu --json`'s object, and `report`'s page.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <tracemodel/formats/gpu_report.hpp>
#include <tracemodel/formats/json_output.hpp>
#include <tracemodel/hta/device_time.hpp>

namespace tracemodel_cli {

namespace tmod = tracemodel;

/// A report of either rules, as the renderers read it.
struct report_view {
  const std::vector<tmod::gpu_rank>& ranks;
  const tmod::row_list<tmod::kernel_type_row>& kernel_types;
  const tmod::rank_spread& spread;
  const tmod::anomaly_counts& repairs;
  bool hta;               ///< HTA's rules and columns
  std::string_view unit;  ///< of every time but the spread's
  /// Files that could not be read (a cluster's run goes on without them): file, reason.
  std::span<const std::pair<std::string, std::string>> unread{};

  template <class Unit>
  static report_view of(const tmod::basic_gpu_report<Unit>& r) {
    return {r.ranks,
            r.kernel_types,
            r.spread,
            r.repairs,
            std::is_same_v<Unit, tmod::hta::microseconds>,
            Unit::name};
  }
};

/// `gpu`'s text tables.
void print_gpu(const report_view& rep);
/// `gpu --json`'s object.
void write_gpu_json(const report_view& rep, tmod::json_output& out);
[[nodiscard]] std::string gpu_json(const report_view& rep);

/// The temporal breakdown of every rank: a stacked bar each (`bar_w` pixels wide) and a table
/// whose numbers are checked against the JSON's array `key` (`compact`: kernel time and shares).
[[nodiscard]] std::string temporal_section(const report_view& rep, const std::string& key,
                                           int bar_w = 800, bool compact = false);

/// A rank's critical path, as the report shows it.
struct critical_path_summary {
  std::int64_t rank = 0;
  std::string window;  ///< "ProfilerStep#3", or "the whole trace"
  std::size_t nodes = 0, edges = 0, events = 0;
  std::int64_t length = 0;                                ///< ns
  std::map<std::string, std::int64_t> bound_by;           ///< ns per cause
  std::vector<std::pair<std::string, std::int64_t>> top;  ///< events by time on the path
};

/// The summaries as rows of the report's JSON (`critical_path`, times in us).
[[nodiscard]] std::string critical_path_rows(const std::vector<critical_path_summary>& cps);

/// `report`'s page. `json` is `gpu --json`'s object for the same report, `cpu` the stats table
/// of a rank (or empty), `cps` each rank's critical path.
/// `more`: sections of other analyses, after the device's and the key averages.
[[nodiscard]] std::string gpu_report_page(const report_view& rep, const std::string& json,
                                          const std::string& cpu, const std::string& title,
                                          const std::vector<critical_path_summary>& cps,
                                          const std::string& more = "");

}  // namespace tracemodel_cli
