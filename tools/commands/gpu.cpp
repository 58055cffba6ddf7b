// tracemodel gpu: device time per rank, by the exact rules or HTA's.
#include <filesystem>
#include <string>

#include <tracemodel/algo/queue_length.hpp>
#include <tracemodel/formats/chrome_trace_writer.hpp>
#include <tracemodel/formats/counter_tracks.hpp>

#include "../device_report.hpp"
#include "../input.hpp"
#include "../program.hpp"
#include "../render/gpu.hpp"

namespace tracemodel_cli {
namespace gpu_command {  // (named: the parts compile in batches)

int run(arguments& a) {
  bool hta = false;
  std::string counters, scheduler_file;
  a.flag("--hta", hta);
  a.text("--counters", counters);
  a.text("--scheduler-file", scheduler_file);
  a.parse();
  if (a.positional.empty()) throw usage_error{"missing TRACE"};
  if (!counters.empty() && !scheduler_file.empty())
    throw usage_error{
        "--counters writes files where the ranks are read: not with --scheduler-file"};
  tmod::gpu_report_options go;
  go.series = a.json;  // the text tables show summaries only
  if (!counters.empty()) {
    std::filesystem::create_directories(counters);
    go.each_rank = [&](std::int64_t rank, tmod::event_table& t) {  // (the exact series, in ns)
      tmod::export_view v{t};
      v.counters = tmod::counter_tracks(tmod::queue_length(t), tmod::memory_bandwidth(t));
      tmod::write_chrome_trace_file(v,
                                    counters + "/rank-" + std::to_string(rank) + ".counters.json");
    };
  }
  const device_report rep = read_device_report(a.positional, hta, go, scheduler_file);
  if (a.json)
    json_to_stdout([&](tmod::json_output& out) { write_gpu_json(rep.view(), out); });
  else
    print_gpu(rep.view());
  return rep.unread.empty() ? 0 : 1;  // (the ranks read are shown; the others said on stderr)
}

const registrar gpu{
    {"gpu",
     "  gpu     device time per rank: idle, compute and non-compute time, kernel types and\n"
     "          their overlaps, communication hidden behind computation (TRACE...: files of\n"
     "          one rank each, or folders of them)\n"
     "            --hta                          Holistic Trace Analysis's rules and columns\n"
     "            --counters DIR                 write each rank's trace with its queue length\n"
     "                                           and memory bandwidth as counter tracks\n"
     "            --scheduler-file FILE          read and analyse the ranks on the Dask cluster\n"
     "                                           FILE names (docs/cluster.md); a rank that\n"
     "                                           fails is named, the others shown (status 1)\n",
     70, run}};

}  // namespace gpu_command
}  // namespace tracemodel_cli
