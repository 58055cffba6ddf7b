// tracemodel memory: where the memory goes. The peak, the bytes per category there and the
// largest blocks live there; the timeline as JSON or a page; PyTorch's memory timeline files
// written (--export) and read (a file of `export_memory_timeline` as the TRACE).
#include <cstdio>
#include <string>

#include <zlib.h>

#include <tracemodel/algo/memory_timeline.hpp>
#include <tracemodel/formats/pytorch_memory.hpp>

#include "../input.hpp"
#include "../program.hpp"
#include "../render/memory.hpp"

namespace tracemodel_cli {
namespace memory_command {  // (named: the parts compile in batches)

/// Whether `path` holds a memory timeline file (told by its first bytes, gzip or not).
bool memory_file(const std::string& path) {
  if (path == "-") return false;
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr) return false;
  char head[256];
  const int n = gzread(f, head, sizeof head);
  gzclose(f);
  return n > 0 && tmod::looks_like_memory_timeline({head, static_cast<std::size_t>(n)});
}

tmod::memory_device device_named(const std::string& s) {
  static const std::pair<std::string_view, std::int8_t> types[] = {
      {"cpu", 0}, {"cuda", 1}, {"hip", 6}, {"xpu", 12}, {"mps", 13}, {"mtia", 19}};
  const std::size_t colon = s.find(':');
  const std::string_view type = std::string_view(s).substr(0, colon);
  for (const auto& [name, code] : types) {
    if (name != type) continue;
    if (code == 0) return {0, -1};
    if (colon == std::string::npos) return {code, 0};
    const std::size_t index = parse_count("--device", s.substr(colon + 1));
    if (index > 127) break;
    return {code, static_cast<std::int8_t>(index)};
  }
  throw usage_error{"--device takes cpu, cuda:N, hip:N, xpu:N, mps:N or mtia:N"};
}

int show(arguments& a, const memory_view& v, const tmod::anomaly_counts& repairs,
         const std::string& output, const std::string& title) {
  std::string json;
  {
    tmod::json_output out = tmod::json_output::to_string(json);
    out.ch('{');
    write_repairs(out, repairs);
    write_memory_json(v, out);
    out.flush();
  }
  if (a.json)
    std::fputs(json.c_str(), stdout);
  else
    print_memory(v);
  if (!output.empty()) {
    if (!write_file(output, memory_page(v, json, title))) return 1;
    if (!a.json) std::printf("\nwrote %s\n", output.c_str());
  }
  return 0;
}

int run(arguments& a) {
  std::string output, exported, device;
  std::size_t top = 20, points = 2000;
  a.text("-o", output);
  a.text("--export", exported);
  a.text("--device", device);
  a.count("--top", top);
  a.count("--points", points);
  a.most_traces = 1;
  a.parse();
  if (points == 0) throw usage_error{"--points takes 1 or more"};
  const std::string& path = a.one_trace();
  tmod::memory_timeline_options o;
  o.sample_limit = points;  // (the page's and the JSON's envelope, made as the samples pass)
  if (!device.empty()) {
    o.choose_device = false;
    o.device = device_named(device);
  }
  const std::string title = "tracemodel memory: " + file_name(path);
  if (memory_file(path)) {
    if (!exported.empty()) throw usage_error{"--export takes a trace, not a memory timeline file"};
    tmod::memory_timeline_file f;
    try {
      f = tmod::read_memory_timeline_file(path);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "tracemodel: %s: %s\n", path.c_str(), e.what());
      return 1;
    }
    return show(a, memory_view_of(f.samples, points), {}, output, title);
  }
  return with_trace(path, reading::exact, true, [&](tmod::event_table& t) {
    const tmod::memory_timeline_result m = tmod::memory_timeline(t, o);
    t.anomalies += m.repairs;  // said on stderr with what reading repaired
    if (!exported.empty()) {
      try {
        tmod::write_memory_timeline_file(m, exported);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "tracemodel: %s\n", e.what());
        return 1;
      }
    }
    return show(a, memory_view_of(t, m, top, points), t.anomalies, output, title);
  });
}

const registrar memory{
    {"memory",
     "  memory  where the memory goes: the peak, its bytes per category, the blocks live there\n"
     "            -o FILE.html                   the stacked timeline and the live blocks\n"
     "            --export FILE                  PyTorch's export_memory_timeline file:\n"
     "                                           *.raw.json.gz records, *.json[.gz] samples\n"
     "            --device cpu|cuda:N|...        --top N (20)   --points N (2000)\n"
     "            TRACE may be a file of PyTorch's export_memory_timeline\n",
     45, run}};

}  // namespace memory_command
}  // namespace tracemodel_cli
