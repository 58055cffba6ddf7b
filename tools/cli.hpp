// The `tracemodel` program's parts: its options, and the commands, in two units of about equal
// weight that compile in parallel: tracemodel.cpp parses the command line, reads the trace and
// holds flame, link and links; reports.cpp holds stats, tree and patterns.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <tracemodel/algo/critical_path.hpp>
#include <tracemodel/config.hpp>
#include <tracemodel/formats/json_output.hpp>
#include <tracemodel/model/table.hpp>

TRACEMODEL_BEGIN_NAMESPACE
enum class group_by : std::uint8_t;  // algo/key_averages.hpp
struct gpu_report;                   // formats/gpu_report.hpp
struct gpu_report_options;
enum class sort_by : std::uint8_t;
TRACEMODEL_END_NAMESPACE

namespace tracemodel_cli {

namespace tmod = tracemodel;

struct usage_error {
  std::string message;
};

struct options {
  std::string command;
  std::string trace;
  bool json = false;
  tmod::group_by group{};  // name
  tmod::sort_by sort{};    // total
  std::size_t top = 0;
  std::optional<std::uint32_t> depth;
  std::string framework_prefix = "torch/";
  std::optional<std::string> name_regex;
  bool for_loop = true;
  std::string output;
  double width = 1600;
  std::string et;
  std::vector<std::string> traces;  ///< gpu: every PATH
  bool hta = false;                 ///< gpu: Holistic Trace Analysis's rules and column names
  std::string counters;             ///< gpu: a folder for each rank's trace with counter tracks
  std::optional<std::int64_t> iteration;  ///< diff: the step compared
  std::optional<std::int64_t> rank;       ///< diff: the rank compared on both sides
  int device = 2;            ///< diff: the side the text shows (as tracemodel::diff_device: all)
  bool short_names = false;  ///< diff: HTA's short names
  std::string annotation;    ///< critical-path: a part of the window's name (empty: all)
  std::size_t instance = 0;  ///< critical-path: which of the events so named
};

/// A thread id as the file wrote it: a number, or a string.
inline void write_tid(tmod::json_output& out, const tmod::event_table& t, tmod::thread_key tid) {
  if (tmod::event_table::is_string_key(tid))
    out.string(t.key_label(tid));
  else
    out.integer(static_cast<std::int64_t>(tid));
}

// The commands. `t` is analysed (tracemodel::analyze) for every command but `links`, which
// runs the linkers itself.
int cmd_stats(const options& o, tmod::event_table& t);
int cmd_tree(const options& o, tmod::event_table& t);
int cmd_links(const options& o, tmod::event_table& t);
int cmd_flame(const options& o, tmod::event_table& t);
int cmd_link(const options& o, tmod::event_table& t);
int cmd_patterns(const options& o, tmod::event_table& t);
/// `tracemodel gpu PATH...`: reads the ranks itself.
int cmd_gpu(const options& o);
/// `tracemodel report PATH... -o FILE.html`.
int cmd_report(const options& o);
/// `tracemodel diff CONTROL TEST`.
int cmd_diff(const options& o);
/// `tracemodel critical-path TRACE`.
int cmd_critical_path(const options& o, tmod::event_table& t);
/// The critical path by the rules `o` asks for (exact, or HTA's with --hta).
tmod::critical_path critical_path_by(const options& o, const tmod::event_table& t,
                                     const tmod::critical_path_options& co);
/// The same on one rank of a folder of ranks (`--rank R`, else the first).
int cmd_critical_path_of_rank(const options& o);
/// Writes `text` to `path`; false (having said why on stderr) when it cannot.
bool write_page(const std::string& path, const std::string& text);
/// The device analyses of `o.traces` (what reading repaired said on stderr).
tmod::gpu_report gpu_report_of(const options& o, const tmod::gpu_report_options& go);
/// `gpu --json`'s object.
std::string gpu_json(const options& o, const tmod::gpu_report& rep);
/// The same, written part by part to `sink`.
void write_gpu_json(const options& o, const tmod::gpu_report& rep, tmod::json_output::sink sink);
/// Says on stderr what reading `trace` repaired (counts per kind); nothing when nothing was.
void report_repairs(const std::string& trace, const tmod::anomaly_counts& a);
/// `"repairs":{"kind":count,...}` (every kind with a count).
void write_repairs(tmod::json_output& out, const tmod::anomaly_counts& a);
/// Why `pattern` is not a regular expression (std::regex's message), or empty when it is one.
std::string regex_error_of(const std::string& pattern);

}  // namespace tracemodel_cli
