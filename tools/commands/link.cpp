// tracemodel link: an execution trace joined with its host/device trace, written as the
// enhanced execution trace.
#include <cstdio>
#include <string>

#include <tracemodel/algo/et_link.hpp>
#include <tracemodel/formats/execution_trace.hpp>
#include <tracemodel/formats/execution_trace_writer.hpp>

#include "../input.hpp"
#include "../program.hpp"

namespace tracemodel_cli {
namespace link_command {  // (named: the parts compile in batches)

void print_result(const tmod::execution_trace& et, const tmod::event_table& t,
                  const tmod::et_link_result& r, const std::string& output) {
  std::string in;
  if (r.iteration != tmod::no_event)
    in = r.iterations == 1 ? " in " + std::string(t.name(r.iteration))
                           : " in " + std::to_string(r.iterations) + " iterations from " +
                                 std::string(t.name(r.iteration));
  std::printf("matched %zu of %zu execution-trace ops by %s%s\n", r.matched, r.op_nodes,
              r.method.c_str(), in.c_str());
  for (const auto& u : r.unmatched)
    std::printf("  unmatched node %lld %s: %s\n", static_cast<long long>(et.nodes[u.node].id),
                et.nodes[u.node].name.c_str(), u.reason.c_str());
  std::printf(
      "device ops: %zu attached (%zu by correlation, %zu by external id, %zu by interval), %zu "
      "orphaned\n",
      r.device_ops.size(), r.by[0], r.by[1], r.by[2], r.orphaned);
  std::printf("wrote %s\n", output.c_str());
}

void write_result(const tmod::execution_trace& et, const tmod::event_table& t,
                  const tmod::et_link_result& r, const std::string& output) {
  json_to_stdout([&](tmod::json_output& out) {
    out.ch('{');
    write_repairs(out, t.anomalies);
    out.raw(",\"method\":").string(r.method).raw(",\"op_nodes\":").unsigned_integer(r.op_nodes);
    out.raw(",\"matched\":").unsigned_integer(r.matched).raw(",\"unmatched\":[");
    for (std::size_t k = 0; k < r.unmatched.size(); ++k) {
      const auto& n = et.nodes[r.unmatched[k].node];
      out.raw(k ? "," : "").raw("{\"id\":").integer(n.id).raw(",\"name\":").string(n.name);
      out.raw(",\"reason\":").string(r.unmatched[k].reason).ch('}');
    }
    out.raw("],\"matches\":[");
    bool first = true;
    for (std::size_t k = 0; k < et.nodes.size(); ++k) {
      if (r.node_host[k] == tmod::no_event) continue;
      const auto& e = t.events[r.node_host[k]];
      out.raw(first ? "\n" : ",\n").raw("{\"id\":").integer(et.nodes[k].id).raw(",\"name\":");
      out.string(t.name(e)).raw(",\"tid\":");
      write_tid(out, t, e.tid);
      out.raw(",\"ts_ns\":").integer(e.start_ns).ch('}');
      first = false;
    }
    out.raw("],\"device_ops\":{\"total\":").unsigned_integer(r.device_total);
    out.raw(",\"attached\":").unsigned_integer(r.device_ops.size());
    out.raw(",\"by_correlation\":").unsigned_integer(r.by[0]);
    out.raw(",\"by_external_id\":").unsigned_integer(r.by[1]);
    out.raw(",\"by_interval\":").unsigned_integer(r.by[2]);
    out.raw(",\"orphaned\":").unsigned_integer(r.orphaned);
    out.raw("},\"output\":").string(output).raw("}\n");
  });
}

int run(arguments& a) {
  std::string et_path, trace, output;
  a.text("--et", et_path);
  a.value("--trace", [&](const std::string& v) {
    if (!trace.empty()) throw usage_error{"more than one trace given"};
    trace = v;
  });
  a.text("-o", output);
  a.most_traces = 1;
  a.parse();
  if (!a.positional.empty()) {
    if (!trace.empty()) throw usage_error{"more than one trace given"};
    trace = a.positional.front();
  }
  if (trace.empty()) throw usage_error{"link needs --trace TRACE.json"};
  if (et_path.empty() || output.empty())
    throw usage_error{"link needs --et ET.json, --trace TRACE.json and -o OUT.json"};
  a.subject = trace;
  return with_trace(trace, reading::exact, true, [&](tmod::event_table& t) {
    tmod::execution_trace_file et;
    try {
      et = tmod::read_execution_trace_file(et_path);
    } catch (const tmod::input_error& e) {
      std::fprintf(stderr, "tracemodel: %s: %s\n", et_path.c_str(), e.what());
      return 1;
    }
    const tmod::et_link_result r = tmod::link_execution_trace(et, t);
    if (!write_file(output, tmod::enhanced_execution_trace(et, t, r))) return 1;
    if (a.json)
      write_result(et, t, r, output);
    else
      print_result(et, t, r, output);
    return 0;
  });
}

const registrar link{{"link",
                      "  link    join an execution trace with its host/device trace (TRACE is "
                      "--trace)\n"
                      "            --et ET.json  --trace TRACE.json  -o OUT.json (the enhanced "
                      "execution trace)\n",
                      50, run}};

}  // namespace link_command
}  // namespace tracemodel_cli
