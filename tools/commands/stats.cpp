// tracemodel stats: key averages per name, input shapes or stack.
#include <cstdio>
#include <string>

#include <tracemodel/algo/key_averages.hpp>

#include "../input.hpp"
#include "../program.hpp"

namespace tracemodel_cli {
namespace stats_command {  // (named: the parts compile in batches)

int run(arguments& a) {
  tmod::key_average_options ko;
  std::size_t top = 0;
  a.choice<tmod::group_by>("--group-by",
                           {{"name", tmod::group_by::name},
                            {"shapes", tmod::group_by::shapes},
                            {"stack", tmod::group_by::stack}},
                           "name, shapes or stack", ko.group);
  a.choice<tmod::sort_by>("--sort",
                          {{"self", tmod::sort_by::self},
                           {"total", tmod::sort_by::total},
                           {"count", tmod::sort_by::count},
                           {"device", tmod::sort_by::device_total},
                           {"self-device", tmod::sort_by::self_device}},
                          "self, total, count, device or self-device", ko.sort);
  a.count("--top", top);
  a.most_traces = 1;
  a.parse();
  return with_trace(a.one_trace(), reading::exact, true, [&](tmod::event_table& t) {
    const auto rows = tmod::key_averages(t, ko);
    if (!a.json) {
      std::fputs(tmod::format_key_averages(rows, top).c_str(), stdout);
      return 0;
    }
    json_to_stdout([&](tmod::json_output& out) {
      out.ch('{');
      write_repairs(out, t.anomalies);
      out.raw(",\"rows\":[");
      const std::size_t n = top == 0 || top > rows.size() ? rows.size() : top;
      for (std::size_t i = 0; i < n; ++i) {
        const auto& r = rows[i];
        out.raw(i ? ",\n" : "\n").raw("{\"key\":").string(r.key()).raw(",\"count\":");
        out.unsigned_integer(r.count).raw(",\"total_ns\":").integer(r.total_ns);
        out.raw(",\"self_ns\":").integer(r.self_ns);
        out.raw(",\"device_total_ns\":").integer(r.device_total_ns);
        out.raw(",\"self_device_ns\":").integer(r.self_device_ns);
        out.raw(",\"cpu_memory_bytes\":").integer(r.cpu_memory_bytes);
        out.raw(",\"self_cpu_memory_bytes\":").integer(r.self_cpu_memory_bytes);
        out.raw(",\"device_memory_bytes\":").integer(r.device_memory_bytes);
        out.raw(",\"self_device_memory_bytes\":").integer(r.self_device_memory_bytes);
        out.raw(",\"on_device\":").raw(r.device_activities ? "true" : "false").ch('}');
      }
      out.raw("\n]}\n");
    });
    return 0;
  });
}

const registrar stats{{"stats",
                       "  stats   key averages per name (or input shapes, or stack)\n"
                       "            --group-by name|shapes|stack   --top N\n"
                       "            --sort self|total|count|device|self-device\n",
                       10, run}};

}  // namespace stats_command
}  // namespace tracemodel_cli
