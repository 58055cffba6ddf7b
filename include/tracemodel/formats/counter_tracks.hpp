// tracemodel/formats — queue lengths and memory bandwidth as counter tracks of a Chrome trace,
// which Perfetto and chrome://tracing draw as graphs beside the events.
//
//   tracemodel::write_chrome_trace(table, out, tracemodel::counter_tracks(
//       tracemodel::queue_length(table), tracemodel::memory_bandwidth(table)));
//
// Each stream's queue length is a track "Queue length (stream S)" of the process of its device
// (`pid` the device); each memory kind's bandwidth a track "Memory bandwidth (GB/s)" with one
// series per kind, in process 0. A step of a series is a counter record (`ph: "C"`) at its time.
// Times are nanoseconds (a layer whose results are in another unit converts them first:
// `hta::series_in_ns`).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "tracemodel/algo/queue_length.hpp"
#include "tracemodel/config.hpp"
#include "tracemodel/formats/chrome_trace_writer.hpp"
#include "tracemodel/formats/json_output.hpp"

TRACEMODEL_BEGIN_NAMESPACE

[[nodiscard]] inline extra_events counter_tracks(row_list<stream_queue> queues,
                                                 row_list<memory_bandwidth_series> bandwidth) {
  return [queues = std::move(queues), bandwidth = std::move(bandwidth)](
             json_output& out, std::int64_t base, const std::function<void()>& next) {
    for (const stream_queue& q : queues) {
      const std::string name = "Queue length (stream " + std::to_string(q.stream) + ")";
      for (const queue_step& s : q.steps) {
        next();
        out.raw("{\"ph\":\"C\",\"name\":").string(name).raw(",\"pid\":");
        out.integer(q.device < 0 ? 0 : q.device).raw(",\"ts\":");
        out.micros(s.ts - base).raw(",\"args\":{\"queue length\":");
        out.integer(s.length).raw("}}");
      }
    }
    for (const memory_bandwidth_series& m : bandwidth)
      for (const bandwidth_step& x : m.steps) {
        next();
        out.raw("{\"ph\":\"C\",\"name\":\"Memory bandwidth (GB/s)\",\"pid\":0,\"ts\":");
        out.micros(x.ts - base).raw(",\"args\":{").string(m.kind).ch(':');
        out.floating(x.gbps < 0 && x.gbps > -1e-9 ? 0.0 : x.gbps).raw("}}");
      }
  };
}

TRACEMODEL_END_NAMESPACE
