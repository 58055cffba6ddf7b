// tracemodel flame: a per-thread flame chart as a standalone SVG.
#include <cstdio>
#include <stdexcept>
#include <string>

#include <tracemodel/formats/flame_svg.hpp>

#include "../input.hpp"
#include "../program.hpp"

namespace tracemodel_cli {
namespace flame_command {  // (named: the parts compile in batches)

int run(arguments& a) {
  std::string output;
  double width = 1600;
  a.text("-o", output);
  a.value("--width", [&](const std::string& v) {
    width = static_cast<double>(parse_count("--width", v));
    if (width < 100 || width > 100000) throw usage_error{"--width takes 100 to 100000 pixels"};
  });
  a.most_traces = 1;
  a.parse();
  const std::string& trace = a.one_trace();
  if (output.empty()) throw usage_error{"flame needs -o FILE.svg"};
  return with_trace(trace, reading::exact, true, [&](tmod::event_table& t) {
    tmod::flame_options fo;
    fo.width = width;
    fo.title = file_name(trace);
    try {
      tmod::write_flame_svg_file(t, output, fo);
    } catch (const std::runtime_error& e) {
      std::fprintf(stderr, "tracemodel: %s\n", e.what());
      return 1;
    }
    if (a.json)
      json_to_stdout([&](tmod::json_output& out) {
        out.ch('{');
        write_repairs(out, t.anomalies);
        out.raw(",\"output\":").string(output).raw(",\"events\":").unsigned_integer(t.size());
        out.raw("}\n");
      });
    else
      std::printf("wrote %s (%zu events)\n", output.c_str(), t.size());
    return 0;
  });
}

const registrar flame{{"flame",
                       "  flame   a per-thread flame chart as a standalone SVG\n"
                       "            -o FILE.svg (required)         --width PIXELS (default 1600)\n",
                       40, run}};

}  // namespace flame_command
}  // namespace tracemodel_cli
