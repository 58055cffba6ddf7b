// tracemodel/formats — a trace with its critical path drawn on it (as HTA's overlaid trace): the
// path as flows and marks of an export view (formats/export_view.hpp), for any trace writer.
//
//   const tracemodel::critical_path cp = tracemodel::critical_path_of(table, {...});
//   tracemodel::write_critical_path_overlay(table, cp, "overlaid.json");
//
// Each event on the path is marked `critical = 1`, and each critical edge between two events is a
// flow (category and name `critical_path`, ids from 1, args with the edge's `type` and `weight`
// in ns): Perfetto and chrome://tracing draw them as arrows from event to event. A flow leaves an
// end node a microsecond (or its whole length, if shorter) before the event's end, so that it
// stays inside the event it belongs to.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

#include "tracemodel/algo/critical_path_graph.hpp"
#include "tracemodel/config.hpp"
#include "tracemodel/formats/chrome_trace_writer.hpp"
#include "tracemodel/formats/export_view.hpp"
#include "tracemodel/model/table.hpp"

TRACEMODEL_BEGIN_NAMESPACE

/// `t` with `cp` drawn on it (see above): a view that refers to `t`.
template <class Schema>
[[nodiscard]] basic_export_view<Schema> critical_path_overlay(const basic_event_table<Schema>& t,
                                                              const critical_path& cp) {
  basic_export_view<Schema> v{t};
  for (const event_index i : cp.events) v.marks.push_back({i, "critical", std::int64_t{1}});
  auto at = [&](const cp_node& n) {  // a node's time, inside its event
    if (n.start) return n.ts;
    const std::int64_t length = n.ts - t.events[n.event].start_ns;
    return n.ts - std::min<std::int64_t>(1000, std::max<std::int64_t>(0, length));
  };
  std::uint64_t id = 0;
  for (const std::uint32_t k : cp.path) {
    const cp_edge& e = cp.edges[k];
    const cp_node &a = cp.nodes[e.from], &b = cp.nodes[e.to];
    if (a.event == b.event) continue;  // within one event: the mark says it
    export_flow& f = v.flows.emplace_back();
    f.category = "critical_path";
    f.id = ++id;
    f.from = a.event;
    f.to = b.event;
    f.from_ts = at(a);
    f.to_ts = at(b);
    f.args = {{"type", std::string(cp_edge_type_names[static_cast<std::size_t>(e.type)])},
              {"weight", std::int64_t{e.weight}}};
  }
  return v;
}

/// Writes `t` with `cp` drawn on it to `out` (Chrome's JSON).
template <class Schema>
void write_critical_path_overlay(const basic_event_table<Schema>& t, const critical_path& cp,
                                 json_output& out) {
  write_chrome_trace(critical_path_overlay(t, cp), out);
}

/// The same to a file (gzip when `path` ends in ".gz").
template <class Schema>
void write_critical_path_overlay(const basic_event_table<Schema>& t, const critical_path& cp,
                                 const std::string& path) {
  write_chrome_trace_file(critical_path_overlay(t, cp), path);
}

TRACEMODEL_END_NAMESPACE
