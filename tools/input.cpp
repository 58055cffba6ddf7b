// The program's input step and outputs (input.hpp).
#include "input.hpp"

#include "program.hpp"

#include <unistd.h>

#include <cstdio>
#include <exception>

#include <tracemodel/algo/analyze.hpp>
#include <tracemodel/formats/chrome_trace_writer.hpp>
#include <tracemodel/formats/perfetto_writer.hpp>
#include <tracemodel/formats/trace_file.hpp>
#include <tracemodel/hta/read.hpp>

namespace tracemodel_cli {

tmod::event_table read_trace(const std::string& path, reading how) {
  tmod::read_options ro;
  if (::isatty(STDERR_FILENO)) {
    ro.progress = [last = -1](std::size_t done, std::size_t total) mutable {
      if (total < (std::size_t{100} << 20)) return;
      const int pct =
          static_cast<int>(100.0 * static_cast<double>(done) / static_cast<double>(total));
      if (pct == last) return;
      last = pct;
      std::fprintf(stderr, "\rreading: %3d%%", pct);
      if (pct >= 100) std::fputs("\n", stderr);
    };
  }
  if (how == reading::hta) return tmod::hta::read_trace_file(path, ro);
  return tmod::read_trace_file(path, ro);
}

int with_trace(const std::string& path, reading how, bool analyse,
               const std::function<int(tmod::event_table&)>& fn) {
  tmod::event_table t = read_trace(path, how);
  if (analyse) tmod::analyze(t);
  const int status = fn(t);
  report_repairs(path, t.anomalies);  // what reading and the analysis repaired
  return status;
}

void report_repairs(const std::string& what, const tmod::anomaly_counts& a) {
  if (a.total() == 0) return;
  std::string list;
  for (std::size_t k = 0; k < a.n.size(); ++k) {
    if (a.n[k] == 0) continue;
    list += (list.empty() ? "" : ", ") + std::to_string(a.n[k]) + " " +
            std::string(tmod::anomaly_names[k]);
  }
  std::fprintf(stderr, "tracemodel: %s: repaired %llu: %s\n", what.c_str(),
               static_cast<unsigned long long>(a.total()), list.c_str());
}

void write_repairs(tmod::json_output& out, const tmod::anomaly_counts& a) {
  out.raw("\"repairs\":{");
  bool first = true;
  for (std::size_t k = 0; k < a.n.size(); ++k) {
    if (a.n[k] == 0) continue;
    out.raw(first ? "" : ",").string(tmod::anomaly_names[k]).ch(':').unsigned_integer(a.n[k]);
    first = false;
  }
  out.ch('}');
}

void write_tid(tmod::json_output& out, const tmod::event_table& t, tmod::thread_key tid) {
  if (tmod::event_table::is_string_key(tid))
    out.string(t.key_label(tid));
  else
    out.integer(static_cast<std::int64_t>(tid));
}

std::string tid_text(const tmod::event_table& t, std::uint64_t k) {
  return tmod::event_table::is_string_key(k) ? std::string(t.key_label(k))
                                             : std::to_string(static_cast<std::int64_t>(k));
}

void json_to_stdout(const std::function<void(tmod::json_output&)>& fn) {
  tmod::json_output out(
      [](std::string_view part) { std::fwrite(part.data(), 1, part.size(), stdout); });
  fn(out);
  out.flush();
}

bool write_file(const std::string& path, std::string_view text) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  bool ok = f != nullptr && std::fwrite(text.data(), 1, text.size(), f) == text.size();
  if (f != nullptr && std::fclose(f) != 0) ok = false;
  if (!ok) std::fprintf(stderr, "tracemodel: cannot write %s\n", path.c_str());
  return ok;
}

std::string file_name(const std::string& path) { return path.substr(path.find_last_of('/') + 1); }

bool perfetto_name(std::string_view path) {
  if (path.ends_with(".gz")) path.remove_suffix(3);
  return path.ends_with(".pftrace") || path.ends_with(".perfetto-trace");
}

void check_output_name(std::string_view command, const std::string& output) {
  if (output.empty())
    throw usage_error{std::string(command) + " needs -o FILE (.json, .pftrace, with .gz or not)"};
  if (!perfetto_name(output) && !tmod::is_trace_file_name(output))
    throw usage_error{std::string(command) +
                      " writes .json or .pftrace (.perfetto-trace) files, gzip as .gz"};
}

bool write_trace(const tmod::export_view& v, const std::string& output) {
  try {
    if (perfetto_name(output))
      tmod::write_perfetto_trace_file(v, output);
    else
      tmod::write_chrome_trace_file(v, output);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tracemodel: %s\n", e.what());
    return false;
  }
  return true;
}

}  // namespace tracemodel_cli
