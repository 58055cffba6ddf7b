// tracemodel convert: a trace from one format into another (Chrome JSON and Perfetto, either
// way, gzip or not), by the output's name.
#include <cstdio>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <tracemodel/formats/ranks.hpp>
#include <tracemodel/formats/trace_file.hpp>

#include "../input.hpp"
#include "../program.hpp"

namespace tracemodel_cli {
namespace convert_command {  // (named: the parts compile in batches)

int run(arguments& a) {
  std::string output;
  a.text("-o", output);
  a.most_traces = 1;
  a.parse();
  const std::string& trace = a.one_trace();
  if (output.empty()) throw usage_error{"convert needs -o FILE (.json, .pftrace, with .gz or not)"};
  check_output_name("convert", output);
  std::vector<tmod::counter_series> counters;  // a Perfetto trace's counter tracks, kept
  tmod::event_table t = tmod::read_trace_file(trace, {}, &counters);
  tmod::export_view view{t};
  view.counters = std::move(counters);
  if (!write_trace(view, output)) return 1;
  if (a.json)
    json_to_stdout([&](tmod::json_output& out) {
      out.ch('{');
      write_repairs(out, t.anomalies);
      out.raw(",\"output\":").string(output).raw(",\"events\":").unsigned_integer(t.size());
      out.raw(",\"counter_tracks\":").unsigned_integer(view.counters.size()).raw("}\n");
    });
  else
    std::printf("wrote %s (%zu events)\n", output.c_str(), t.size());
  report_repairs(trace, t.anomalies);
  return 0;
}

const registrar convert{{"convert",
                         "  convert a trace into another format (Chrome JSON <-> Perfetto)\n"
                         "            -o FILE (required): .json or .pftrace, .gz to compress\n",
                         45, run}};

}  // namespace convert_command
}  // namespace tracemodel_cli
