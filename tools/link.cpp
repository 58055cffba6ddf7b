// tracemodel flame and link.
#include <cstdio>
#include <stdexcept>
#include <string>

#include <tracemodel/algo/et_link.hpp>
#include <tracemodel/formats/execution_trace.hpp>
#include <tracemodel/formats/execution_trace_writer.hpp>
#include <tracemodel/formats/flame_svg.hpp>
#include <tracemodel/formats/json_output.hpp>

#include "cli.hpp"

namespace tracemodel_cli {

int cmd_flame(const options& o, tmod::event_table& t) {
  tmod::flame_options fo;
  fo.width = o.width;
  fo.title = o.trace.substr(o.trace.find_last_of('/') + 1);
  try {
    tmod::write_flame_svg_file(t, o.output, fo);
  } catch (const std::runtime_error& e) {
    std::fprintf(stderr, "tracemodel: %s\n", e.what());
    return 1;
  }
  if (o.json) {
    std::printf("{\"output\":\"%s\",\"events\":%zu}\n", o.output.c_str(), t.size());
  } else {
    std::printf("wrote %s (%zu events)\n", o.output.c_str(), t.size());
  }
  return 0;
}

int cmd_link(const options& o, tmod::event_table& t) {
  tmod::execution_trace et;
  try {
    et = tmod::read_execution_trace_file(o.et);
  } catch (const tmod::input_error& e) {
    std::fprintf(stderr, "tracemodel: %s: %s\n", o.et.c_str(), e.what());
    return 1;
  }
  const tmod::et_link_result r = tmod::link_execution_trace(et, t);
  {
    std::FILE* f = std::fopen(o.output.c_str(), "wb");
    const std::string plus = tmod::enhanced_execution_trace(et, t, r);
    if (f == nullptr || std::fwrite(plus.data(), 1, plus.size(), f) != plus.size()) {
      if (f != nullptr) std::fclose(f);
      std::fprintf(stderr, "tracemodel: cannot write %s\n", o.output.c_str());
      return 1;
    }
    std::fclose(f);
  }
  if (!o.json) {
    std::printf("matched %zu of %zu execution-trace ops by %s%s\n", r.matched, r.op_nodes,
                r.method.c_str(),
                r.iteration == tmod::no_event ? ""
                : r.iterations == 1           ? (" in " + std::string(t.name(r.iteration))).c_str()
                                    : (" in " + std::to_string(r.iterations) + " iterations from " +
                                       std::string(t.name(r.iteration)))
                                          .c_str());
    for (const auto& u : r.unmatched)
      std::printf("  unmatched node %lld %s: %s\n", static_cast<long long>(et.nodes[u.node].id),
                  et.nodes[u.node].name.c_str(), u.reason.c_str());
    std::printf(
        "device ops: %zu attached (%zu by correlation, %zu by external id, %zu by interval), %zu "
        "orphaned\n",
        r.device_ops.size(), r.by[0], r.by[1], r.by[2], r.orphaned);
    std::printf("wrote %s\n", o.output.c_str());
    return 0;
  }
  std::string s;
  tmod::json_output out = tmod::json_output::to_string(s);
  out.raw("{\"method\":").string(r.method).raw(",\"op_nodes\":").unsigned_integer(r.op_nodes);
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
    out.raw(first ? "\n" : ",\n")
        .raw("{\"id\":")
        .integer(et.nodes[k].id)
        .raw(",\"name\":")
        .string(t.name(e));
    out.raw(",\"tid\":");
    write_tid(out, t, e.tid);
    out.raw(",\"ts_ns\":").integer(e.start_ns).ch('}');
    first = false;
  }
  out.raw("],\"device_ops\":{\"total\":").unsigned_integer(r.device_total);
  out.raw(",\"attached\":").unsigned_integer(r.device_ops.size());
  out.raw(",\"by_correlation\":")
      .unsigned_integer(r.by[0])
      .raw(",\"by_external_id\":")
      .unsigned_integer(r.by[1]);
  out.raw(",\"by_interval\":")
      .unsigned_integer(r.by[2])
      .raw(",\"orphaned\":")
      .unsigned_integer(r.orphaned);
  out.raw("},\"output\":").string(o.output).raw("}\n");
  out.flush();
  std::fputs(s.c_str(), stdout);
  return 0;
}

}  // namespace tracemodel_cli
