// tracemodel/formats — queue lengths and memory bandwidth as counter series of a written trace,
// which Perfetto and chrome://tracing draw as graphs beside the events (formats/export_view.hpp).
//
//   tracemodel::export_view view{table};
//   view.counters = tracemodel::counter_tracks(tracemodel::queue_length(table),
//                                              tracemodel::memory_bandwidth(table));
//   tracemodel::write_chrome_trace_file(view, "with_counters.json");
//
// Each stream's queue length is a track "Queue length (stream S)" of the process of its device
// (0 when it has none), a value per step; each memory kind's bandwidth a series named by the kind
// in one track "Memory bandwidth (GB/s)" of process 0 (a residue of summing up and down to
// within 1e-9 of 0 shows as 0). Times are nanoseconds (a layer whose results are in another unit
// converts them first: `hta::series_in_ns`).
#pragma once

#include <string>
#include <vector>

#include "tracemodel/algo/queue_length.hpp"
#include "tracemodel/config.hpp"
#include "tracemodel/formats/export_view.hpp"

TRACEMODEL_BEGIN_NAMESPACE

[[nodiscard]] inline std::vector<counter_series> counter_tracks(
    const row_list<stream_queue>& queues, const row_list<memory_bandwidth_series>& bandwidth) {
  std::vector<counter_series> out;
  for (const stream_queue& q : queues) {
    counter_series& c = out.emplace_back();
    c.track = "Queue length (stream " + std::to_string(q.stream) + ")";
    c.process = q.device < 0 ? 0 : q.device;
    c.value_name = "queue length";
    c.counts = true;
    c.points.reserve(q.steps.size());
    for (const queue_step& s : q.steps) c.points.push_back({s.ts, static_cast<double>(s.length)});
  }
  for (const memory_bandwidth_series& m : bandwidth) {
    counter_series& c = out.emplace_back();
    c.track = "Memory bandwidth (GB/s)";
    c.value_name = m.kind;
    c.points.reserve(m.steps.size());
    for (const bandwidth_step& x : m.steps)
      c.points.push_back({x.ts, x.gbps < 0 && x.gbps > -1e-9 ? 0.0 : x.gbps});
  }
  return out;
}

TRACEMODEL_END_NAMESPACE
