// tracemodel recover and tracemodel dump: the ops of a live queue's crash file
// (collect/crash_recover.hpp), after its process died or while it runs, as a trace.
#include <fcntl.h>
#include <unistd.h>

#include <signal.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include <tracemodel/collect/crash_recover.hpp>
#include <tracemodel/collect/live_options.hpp>

#include "../input.hpp"
#include "../program.hpp"

namespace tracemodel_cli {
namespace recover_command {  // (named: the parts compile in batches)

/// The counts on stderr (what was lost or cut) and the summary.
void report(const std::string& file, const tmod::recovered_trace& r, const std::string& output,
            bool json) {
  const tmod::recover_counts& c = r.counts;
  if (json) {
    json_to_stdout([&](tmod::json_output& out) {
      out.ch('{');
      write_repairs(out, r.table.anomalies);
      out.raw(",\"output\":").string(output).raw(",\"pid\":").integer(r.pid);
      out.raw(",\"process\":").string(r.process_name);
      const std::pair<const char*, std::uint64_t> fields[]{{"ops", c.ops},
                                                           {"other", c.other},
                                                           {"unfinished", c.unfinished},
                                                           {"blocks", c.blocks},
                                                           {"records", c.records},
                                                           {"torn_records", c.torn_records},
                                                           {"lost_blocks", c.lost_blocks},
                                                           {"lost_held", c.lost_held},
                                                           {"orphan_ends", c.orphan_ends},
                                                           {"ended_twice", c.ended_twice},
                                                           {"unknown_names", c.unknown_names},
                                                           {"lost_ops", c.lost_ops},
                                                           {"lost_ends", c.lost_ends}};
      for (const auto& [k, v] : fields) out.raw(",\"").raw(k).raw("\":").unsigned_integer(v);
      out.raw("}\n");
    });
  } else {
    std::printf("wrote %s: %llu ops (%llu unfinished) of process %lld (%s)\n", output.c_str(),
                static_cast<unsigned long long>(c.ops),
                static_cast<unsigned long long>(c.unfinished), static_cast<long long>(r.pid),
                r.process_name.c_str());
  }
  std::fprintf(
      stderr,
      "tracemodel: %s: %llu blocks, %llu records read; %llu torn records, %llu lost "
      "blocks, %llu held areas unreadable; the recorder lost %llu ops and %llu ends\n",
      file.c_str(), static_cast<unsigned long long>(c.blocks),
      static_cast<unsigned long long>(c.records), static_cast<unsigned long long>(c.torn_records),
      static_cast<unsigned long long>(c.lost_blocks), static_cast<unsigned long long>(c.lost_held),
      static_cast<unsigned long long>(c.lost_ops), static_cast<unsigned long long>(c.lost_ends));
  report_repairs(file, r.table.anomalies);
}

int write(const std::string& file, const tmod::recovered_trace& r, const std::string& output,
          bool json) {
  if (!write_trace(tmod::export_view{r.table}, output)) return 1;
  report(file, r, output, json);
  return 0;
}

int recover(arguments& a) {
  std::string output;
  a.text("-o", output);
  a.most_traces = 1;
  a.parse();
  const std::string& file = a.one_trace();
  check_output_name("recover", output);
  return write(file, tmod::recover_crash_file(file), output, a.json);
}

/// The crash file process `pid` maps: a file of its mappings that starts with the magic number
/// (empty: none).
std::string crash_file_of(const std::string& pid) {
  std::ifstream maps("/proc/" + pid + "/maps");
  if (!maps) throw tmod::input_error("no process " + pid + " (or its mappings cannot be read)");
  std::string line;
  while (std::getline(maps, line)) {
    const std::size_t slash = line.find('/');
    if (slash == std::string::npos) continue;
    std::string path = line.substr(slash);
    if (path.ends_with(" (deleted)")) continue;
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    std::uint64_t magic = 0;
    const bool is =
        ::read(fd, &magic, sizeof magic) == sizeof magic && magic == tmod::detail::crash_magic;
    ::close(fd);
    if (is) return path;
  }
  return {};
}

/// Whether process `pid` handles signal `sig` (its status's SigCgt mask).
bool handles_signal(const std::string& pid, int sig) {
  std::ifstream status("/proc/" + pid + "/status");
  std::string line;
  while (std::getline(status, line))
    if (line.starts_with("SigCgt:")) {
      const unsigned long long mask = std::strtoull(line.c_str() + 7, nullptr, 16);
      return sig > 0 && sig <= 64 && ((mask >> (sig - 1)) & 1) != 0;
    }
  return false;
}

/// Asks process `pid` for a dump with the signal and waits for its consumer's file.
int ask_for_dump(const std::string& pid, const std::string& output, std::size_t timeout_ms,
                 bool json) {
  const std::string file = tmod::live_dump_path(std::stoll(pid));
  std::filesystem::remove(file);
  if (::kill(static_cast<pid_t>(std::stoll(pid)), tmod::live_dump_signal) != 0)
    throw tmod::input_error("cannot signal process " + pid);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (!std::filesystem::exists(file)) {  // (written through a temporary file, then renamed)
    if (std::chrono::steady_clock::now() > deadline)
      throw tmod::input_error("process " + pid + " wrote no dump to " + file + " within " +
                              std::to_string(timeout_ms) +
                              " ms (does a thread of it serve dumps?)");
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  tmod::event_table t = read_trace(file, reading::exact);
  std::filesystem::remove(file);
  if (!write_trace(tmod::export_view{t}, output)) return 1;
  if (json)
    json_to_stdout([&](tmod::json_output& out) {
      out.ch('{');
      write_repairs(out, t.anomalies);
      out.raw(",\"output\":").string(output).raw(",\"pid\":").integer(std::stoll(pid));
      out.raw(",\"answered_by\":\"consumer\",\"events\":").unsigned_integer(t.size()).raw("}\n");
    });
  else
    std::printf("wrote %s: %zu events, dumped by process %s's consumer\n", output.c_str(), t.size(),
                pid.c_str());
  report_repairs(output, t.anomalies);
  return 0;
}

int dump(arguments& a) {
  std::string output;
  std::size_t timeout_ms = 5000;
  a.text("-o", output);
  a.count("--timeout", timeout_ms);
  a.most_traces = 1;
  a.parse();
  const std::string& pid = a.one_trace();
  if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos)
    throw usage_error{"dump takes a process id"};
  check_output_name("dump", output);
  if (const std::string file = crash_file_of(pid); !file.empty())
    return write(file, tmod::recover_crash_file(file), output, a.json);
  if (!handles_signal(pid, tmod::live_dump_signal))
    throw tmod::input_error("process " + pid +
                            " maps no crash file (a live queue with live_queue_options::crash_file)"
                            " and does not handle the dump signal (SIGUSR2)");
  return ask_for_dump(pid, output, timeout_ms, a.json);
}

const registrar recover_registrar{
    {"recover",
     "  recover the ops of a live queue's crash file (FILE), its process dead or running\n"
     "            -o FILE (required): .json or .pftrace, .gz to compress\n",
     110, recover}};
const registrar dump_registrar{
    {"dump",
     "  dump    what a running process's live queue holds now (PID): read from the crash\n"
     "          file it maps, or asked of it with SIGUSR2 (docs/recording.md)\n"
     "            -o FILE (required): .json or .pftrace, .gz to compress\n"
     "            --timeout MS                   how long to wait for its answer (5000)\n",
     115, dump}};

}  // namespace recover_command
}  // namespace tracemodel_cli
