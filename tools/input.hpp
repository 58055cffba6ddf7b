// The `tracemodel` program's input step, shared by every command: reading a trace (a file, or
// standard input as `-`) or the ranks of folders, and saying what reading repaired; and its
// outputs: JSON on stdout, pages and files.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <tracemodel/formats/export_view.hpp>
#include <tracemodel/formats/json_output.hpp>
#include <tracemodel/model/table.hpp>

namespace tracemodel_cli {

namespace tmod = tracemodel;

/// How a trace is read: as the exact analyses read it, or in the file's order as HTA's loader
/// reads it (hta/read.hpp).
enum class reading : std::uint8_t { exact, hta };

/// Reads `path` ("-": standard input), with a progress line on a terminal for big inputs.
[[nodiscard]] tmod::event_table read_trace(const std::string& path, reading how);

/// Reads `path`, analyses it (`tracemodel::analyze`) unless `analyse` is false, runs `fn` on it
/// and then says on stderr what reading and the analysis repaired; returns what `fn` returns.
int with_trace(const std::string& path, reading how, bool analyse,
               const std::function<int(tmod::event_table&)>& fn);

/// Says on stderr what reading `what` repaired (counts per kind); nothing when nothing was.
void report_repairs(const std::string& what, const tmod::anomaly_counts& a);
/// `"repairs":{"kind":count,...}` (every kind with a count).
void write_repairs(tmod::json_output& out, const tmod::anomaly_counts& a);

/// A thread id as the file wrote it: a number, or a string.
void write_tid(tmod::json_output& out, const tmod::event_table& t, tmod::thread_key tid);
/// The same as text.
[[nodiscard]] std::string tid_text(const tmod::event_table& t, std::uint64_t k);

/// A JSON document built by `fn` and written to stdout (streamed in parts).
void json_to_stdout(const std::function<void(tmod::json_output&)>& fn);

/// Writes `text` to `path`; false (having said why on stderr) when it cannot.
bool write_file(const std::string& path, std::string_view text);

/// Whether `path` names a Perfetto trace (`.pftrace`, `.perfetto-trace`, gzip or not).
[[nodiscard]] bool perfetto_name(std::string_view path);
/// A usage error unless `output` names a trace file the program writes (.json or .pftrace,
/// gzip as .gz); `command` names the command in the message.
void check_output_name(std::string_view command, const std::string& output);
/// Writes the view as the trace `output` names (Perfetto or Chrome JSON); false (having said why
/// on stderr) when it cannot.
bool write_trace(const tmod::export_view& v, const std::string& output);

/// The last component of a path.
[[nodiscard]] std::string file_name(const std::string& path);

}  // namespace tracemodel_cli
