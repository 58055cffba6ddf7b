// The properties the analysis fuzz targets check (analyze_fuzz.cpp on read traces,
// analyze_table_fuzz.cpp on tables made from bytes), shared with the concurrency tests: they
// compare the same renderings on generated tables, and check both properties on every build (the
// comparison on every real trace, the whole of `check_analysis` on the reader's fuzz inputs and
// on the inputs an analysis fuzz target once failed on, which go to tests/data/fuzz-analyze/,
// `table_of` on random byte tables).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <tracemodel/algo/analyze.hpp>
#include <tracemodel/algo/key_averages.hpp>
#include <tracemodel/algo/pytorch_patterns.hpp>
#include <tracemodel/algo/tensor_ids.hpp>
#include <tracemodel/formats/chrome_trace_reader.hpp>
#include <tracemodel/formats/chrome_trace_writer.hpp>
#include <tracemodel/testing/builder.hpp>

#include "../support/analysis_ways.hpp"

namespace fuzz {

namespace tmod = tracemodel;

/// A table made from bytes, six per event, for the table fuzz target: ops (forward ops with
/// sequence numbers, backward ops naming forward threads, evaluate_function wrappers, user
/// annotations, ops whose parent a linker set already), runtime calls and device activities
/// sharing correlation ids and flows, syncs, allocations and script frames, on 16 threads of
/// two processes and three streams; times that go back now and then, instants, ops without an
/// end and events that end before they start; some ops with a recorded depth. The first byte says
/// whether the table is sorted by start (as a read table is) or left in the order made.
inline tmod::event_table table_of(const std::uint8_t* data, std::size_t size) {
  tmod::testing::table_builder b;
  std::int64_t now = 1000;
  std::vector<std::pair<std::size_t, std::uint8_t>> preset;  // (event, how far back its parent is)
  std::size_t events = 0;
  for (std::size_t p = 1; p + 6 <= size; p += 6, ++events) {
    const std::uint8_t* x = data + p;
    const int kind = x[0] & 15;
    const auto thread = static_cast<tmod::thread_key>(1 + (x[0] >> 4));
    const auto pid = static_cast<tmod::process_key>(thread <= 12 ? 1 : 2);
    now += x[1] < 240 ? x[1] % 64 : -7 * (x[1] - 239);
    const std::int64_t end = x[2] == 255   ? tmod::no_end_ns
                             : x[2] >= 250 ? now - (x[2] - 249)
                                           : now + 3 * std::int64_t{x[2]};
    const std::int64_t seq = x[3] >= 224 ? -1 : x[3] % 32;
    const std::uint64_t fwd = x[4] % 6;
    const std::uint64_t id = 1 + x[5] % 32;
    const bool flag = (x[4] & 0x80) != 0;
    const auto stream = static_cast<tmod::thread_key>(100 + x[4] % 3);
    switch (kind) {
      case 0:
      case 1:
      case 2:
        b.op("aten::mm", now, end, thread, pid).seq(seq);
        if (kind == 2 && flag) b.depth(static_cast<std::uint16_t>(x[5] % 4));  // recorded
        break;
      case 3:
        b.op("aten::add", now, end, thread, pid).op_correlation(id);
        break;
      case 4:
        b.op("MmBackward0", now, end, thread, pid)
            .seq(seq, fwd)
            .scope(tmod::op_scope::backward_function);
        break;
      case 5:
        b.op("autograd::engine::evaluate_function: MmBackward0", now, end, thread, pid);
        break;
      case 6:
        b.annotation("ProfilerStep#1", now, end, thread, pid);
        break;
      case 7:
        b.device("cudaLaunchKernel", tmod::activity_type::cuda_runtime, now, end, thread, pid)
            .correlation(id)
            .external_id(flag ? id : 0);
        if (x[3] & 1) b.flow(id, true);
        break;
      case 8:
        b.device("gemm", tmod::activity_type::kernel, now, end, stream, 0)
            .correlation(flag ? 0 : id);
        if (x[3] & 1) b.flow(id, false);
        break;
      case 9:
        b.device("Memcpy HtoD", tmod::activity_type::gpu_memcpy, now, end, stream, 0)
            .correlation(id);
        break;
      case 10:
        b.device("Stream Sync", tmod::activity_type::cuda_sync, now, end, stream, 0)
            .correlation(id);
        break;
      case 11:
        b.device("cudaStreamSynchronize", tmod::activity_type::cuda_runtime, now, end, thread, pid)
            .correlation(id);
        break;
      case 12:
        b.allocation(0x1000 * id, flag ? -64 : 64, now, thread, pid);
        break;
      case 13:
        b.script("train.py(12): step", now, end, thread, pid);
        break;
      case 14:
        b.op("aten::copy_", now, end, thread, pid);
        preset.emplace_back(events, x[5]);
        break;
      default:
        b.device("cuLaunchKernel", tmod::activity_type::cuda_driver, now, end, thread, pid)
            .correlation(id)
            .flow(id, true);
        break;
    }
  }
  tmod::event_table t = b.take();
  // Parents a linker set before (some of them not events of the table).
  for (const auto& [i, back] : preset) {
    t.events[i].parent = static_cast<tmod::event_index>(back <= i ? i - back : i + back);
    t.events[i].link = tmod::parent_link::flow;
  }
  if (size > 0 && (data[0] & 1) != 0)
    std::stable_sort(t.events.begin(), t.events.end(),
                     [](const auto& x, const auto& y) { return x.start_ns < y.start_ns; });
  return t;
}

/// Reads `data` (rejected with input_error, or a table) and analyses the table every way there
/// is: the three public steps one after another, `analyze` on one thread and on two (the second
/// thread reporting after every row or every few, the tree's replay row by row, chunk by chunk
/// in small chunks, or in the default ones), with PyTorch's ties and with HTA's. Each must give
/// exactly what the steps give. The analysed table must then go through what comes after the
/// tree without a crash: tensor identities, key averages (by the tree and by containment),
/// PyTorch's patterns, and the writer, whose trace must read back. Anything else escapes as an
/// exception or a crash.
inline analysis_outcome check_analysis(const char* data, std::size_t size) {
  tmod::read_options opt;
  opt.threads = 1;
  tmod::event_table t;
  try {
    std::string text(data, size);
    t = tmod::read_chrome_trace(text, size, opt);
  } catch (const tmod::input_error&) {
    return analysis_outcome::rejected;
  }
  if (same_every_way(t) == analysis_outcome::differs) return analysis_outcome::differs;

  // What comes after the tree.
  tmod::analyze(t);
  (void)tmod::assign_tensor_ids(t);
  for (const auto nest : {tmod::nesting::tree, tmod::nesting::containment}) {
    tmod::key_average_options k;
    k.children = nest;
    (void)tmod::key_averages(t, k);
  }
  tmod::pattern_context c = tmod::context_of(t);
  c.has_shapes = c.has_stack = true;
  c.devices.push_back({0, "fuzz", 8, 0, false});
  const tmod::tree_view v(t);
  auto patterns = tmod::pytorch_patterns();
  (void)tmod::find_patterns(v, c, patterns);
  std::string written = tmod::chrome_trace_string(t);
  (void)tmod::read_chrome_trace(written, written.size(), opt);  // an input_error escapes
  return analysis_outcome::same;
}

}  // namespace fuzz
