// tracemodel/formats — a trace with its critical path drawn on it (as HTA's overlaid trace).
//
//   const tracemodel::critical_path cp = tracemodel::critical_path_of(table, {...});
//   tracemodel::write_critical_path_overlay(table, cp, "overlaid.json");
//
// The table as `write_chrome_trace` writes it, each event on the path with `args.critical = 1`,
// and each critical edge between two events as a flow (`ph` "s" then "f" with `bp` "e", category
// and name `critical_path`, ids from 1, `args` with the edge's `type` and `weight` in ns): Perfetto
// and chrome://tracing draw them as arrows from event to event. A flow leaves an end node a
// microsecond (or its whole length, if shorter) before the event's end, so that it stays inside
// the event it belongs to.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "tracemodel/algo/critical_path.hpp"
#include "tracemodel/config.hpp"
#include "tracemodel/formats/chrome_trace_writer.hpp"
#include "tracemodel/formats/json_output.hpp"
#include "tracemodel/model/table.hpp"

TRACEMODEL_BEGIN_NAMESPACE

namespace detail {
template <class Schema>
void critical_path_flows(const basic_event_table<Schema>& t, const critical_path& cp,
                         json_output& out, std::int64_t base, const std::function<void()>& next) {
  auto key = [&](std::uint64_t k) {
    if (basic_event_table<Schema>::is_string_key(k))
      out.string(t.key_label(k));
    else
      out.integer(static_cast<std::int64_t>(k));
  };
  auto at = [&](const cp_node& n) {  // a node's time, inside its event
    if (n.start) return n.ts;
    const std::int64_t length = n.ts - t.events[n.event].start_ns;
    return n.ts - std::min<std::int64_t>(1000, std::max<std::int64_t>(0, length));
  };
  std::int64_t id = 0;
  for (const std::uint32_t k : cp.path) {
    const cp_edge& e = cp.edges[k];
    const cp_node &a = cp.nodes[e.from], &b = cp.nodes[e.to];
    if (a.event == b.event) continue;  // within one event: the mark says it
    ++id;
    for (const cp_node* n : {&a, &b}) {
      const auto& ev = t.events[n->event];
      next();
      out.raw(n == &a ? "{\"ph\":\"s\"" : "{\"ph\":\"f\",\"bp\":\"e\"");
      out.raw(",\"cat\":\"critical_path\",\"name\":\"critical_path\",\"id\":").integer(id);
      out.raw(",\"pid\":");
      key(static_cast<std::uint64_t>(ev.pid));
      out.raw(",\"tid\":");
      key(ev.tid);
      out.raw(",\"ts\":").micros(at(*n) - base).raw(",\"args\":{\"type\":");
      out.string(cp_edge_type_names[static_cast<std::size_t>(e.type)]);
      out.raw(",\"weight\":").integer(e.weight).raw("}}");
    }
  }
}
}  // namespace detail

/// Writes `t` with `cp` drawn on it to `json` (see above).
template <class Schema>
void write_critical_path_overlay(const basic_event_table<Schema>& t, const critical_path& cp,
                                 json_output& out) {
  std::vector<bool> critical(t.size(), false);
  for (const event_index i : cp.events) critical[i] = true;
  write_chrome_trace(
      t, out,
      extra_events([&](json_output& o, std::int64_t base, const std::function<void()>& next) {
        detail::critical_path_flows(t, cp, o, base, next);
      }),
      extra_args([&](event_index i, const std::function<json_output&(std::string_view)>& arg) {
        if (critical[i]) arg("critical").integer(1);
      }));
}

/// The same to a file (gzip when `path` ends in ".gz").
template <class Schema>
void write_critical_path_overlay(const basic_event_table<Schema>& t, const critical_path& cp,
                                 const std::string& path) {
  trace_file_sink file(path);
  json_output out(file.as_sink());
  write_critical_path_overlay(t, cp, out);
  file.commit();
}

TRACEMODEL_END_NAMESPACE
