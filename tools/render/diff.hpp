// A trace diff (algo/trace_diff.hpp) rendered: `diff`'s text, its `--json` object and its page.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <tracemodel/algo/trace_diff.hpp>

#include "../device_report.hpp"

namespace tracemodel_cli {

namespace tmod = tracemodel;

/// One side of a diff: its files, each rank's totals, and what reading repaired.
struct diff_side {
  std::string path;
  std::vector<std::pair<std::int64_t, tmod::step_totals>> ranks;
  tmod::anomaly_counts repairs;
  tmod::step_totals chosen;               ///< of the rank(s) compared
  std::optional<std::int64_t> rank;       ///< the rank compared; empty: every rank summed
  std::optional<std::int64_t> iteration;  ///< the step compared; empty: every event
  std::optional<device_report> gpu;       ///< for the page (`-o`): the device analyses
};

/// The comparison: for the host, the device and both (indexed by `diff_device`).
using diff_rows = std::array<tmod::row_list<tmod::diff_row>, 3>;

/// What the renderings say of the rules.
struct diff_rules {
  bool hta = false;
  std::string_view unit;
};

/// "rank 0, ProfilerStep#3" or "every rank, every event".
[[nodiscard]] std::string side_of(const diff_side& s);

/// `diff`'s text: the counts of names by change, and the `top` largest changes both ways, of
/// the side `device` shows.
void print_diff(const diff_side& control, const diff_side& test, const diff_rows& rows,
                const diff_rules& rules, tmod::diff_device device, std::size_t top);

/// `diff --json`'s object (with each side's temporal breakdown when the page is written).
[[nodiscard]] std::string diff_json(const diff_side& control, const diff_side& test,
                                    const diff_rows& rows, const tmod::anomaly_counts& repairs,
                                    const diff_rules& rules);

/// The diff's page: each side's device time, the names whose time changed most, the names added
/// and deleted. `json` is `diff --json`'s object with each side's temporal breakdown.
[[nodiscard]] std::string diff_report_page(const diff_rows& rows, const report_view& control,
                                           const report_view& test, const std::string& json,
                                           const std::string& title, const std::string& about,
                                           std::size_t top);

}  // namespace tracemodel_cli
