// tracemodel recover and tracemodel dump: the ops of a live queue's crash file
// (collect/crash_recover.hpp), after its process died or while it runs, as a trace.
#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include <tracemodel/collect/crash_recover.hpp>

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

/// The crash file process `pid` maps: a file of its mappings that starts with the magic number.
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
  throw tmod::input_error("process " + pid +
                          " maps no crash file (a live queue with live_queue_options::crash_file)");
}

int dump(arguments& a) {
  std::string output;
  a.text("-o", output);
  a.most_traces = 1;
  a.parse();
  const std::string& pid = a.one_trace();
  if (pid.find_first_not_of("0123456789") != std::string::npos)
    throw usage_error{"dump takes a process id"};
  check_output_name("dump", output);
  const std::string file = crash_file_of(pid);
  return write(file, tmod::recover_crash_file(file), output, a.json);
}

const registrar recover_registrar{
    {"recover",
     "  recover the ops of a live queue's crash file (FILE), its process dead or running\n"
     "            -o FILE (required): .json or .pftrace, .gz to compress\n",
     110, recover}};
const registrar dump_registrar{
    {"dump",
     "  dump    what a running process's live queue holds now (PID), read from the crash\n"
     "          file it maps\n"
     "            -o FILE (required): .json or .pftrace, .gz to compress\n",
     115, dump}};

}  // namespace recover_command
}  // namespace tracemodel_cli
