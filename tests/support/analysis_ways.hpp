// `analyze` against the three algorithms it fuses: everything either writes into a table, as
// text, and a comparison of every way the engine can run (one thread or two, the second thread
// reporting after every row or every few, the tree's replay row by row or in chunks of several
// sizes; PyTorch's ties and HTA's). Used by the algorithm tests, the concurrency tests and the
// analysis fuzz targets (tests/fuzz/analyze_check.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include <tracemodel/algo/analyze.hpp>
#include <tracemodel/algo/detail/engine.hpp>

namespace fuzz {

namespace tmod = tracemodel;

/// `steps`: the three algorithms in order; `serial`, `parallel`: the engine on one thread or on
/// two (every table size); `api`: `analyze` as a user calls it.
enum class how { steps, serial, parallel, api };

/// Everything `analyze` writes, as text (one line per event, then the links and the counts):
/// the three public algorithms in order (`steps`), or the engine behind `analyze` on one thread
/// or on two. `progress_rows` and `replay_chunk`: the engine's knobs (how often the second
/// thread reports; the replay's chunks, 0 for row by row).
template <class TreePolicy = tmod::pytorch_tree>
std::string analysed(tmod::event_table t, how h, std::size_t progress_rows = 4096,
                     std::size_t replay_chunk = 512) {
  tmod::analysis a;
  if (h == how::steps) {
    a.fwd_bwd = tmod::link_forward_backward(t);
    a.device = tmod::link_device_activities(t);
    a.tree = tmod::build_tree(t, TreePolicy{});
  } else if (h == how::api) {
    a = tmod::analyze(t, TreePolicy{});
  } else {
    tmod::thread_options threads;
    threads.threads = h == how::parallel ? 2 : 1;
    tmod::detail::engine_options knobs;
    knobs.parallel_threshold = 0;
    knobs.progress_rows = progress_rows;
    knobs.replay_chunk = replay_chunk;
    tmod::detail::run_analysis<TreePolicy, tmod::pytorch_links, tmod::pytorch_device_links>(
        t, a, threads, knobs);
  }
  std::string out;
  for (const auto& e : t.events) {
    out += std::to_string(e.parent) + " " + std::to_string(static_cast<int>(e.link)) + " " +
           std::to_string(t.children_of(e).size()) + " " + std::to_string(e.end_ns());
    if (const auto* op = e.get_if<tmod::event_kind::op>())
      out += " " + std::to_string(op->sequence_number) + " " + std::to_string(op->fwd_thread_id);
    out += "\n";
  }
  for (const tmod::event_index c : t.children) out += std::to_string(c) + ",";
  out += "\n";
  for (const std::uint32_t o : t.child_offsets) out += std::to_string(o) + ",";
  out += "\n";
  for (const tmod::flow_link& l : t.links)
    out += std::to_string(static_cast<int>(l.kind)) + ":" + std::to_string(l.id) + ":" +
           std::to_string(l.from) + ">" + std::to_string(l.to) + "\n";
  out += std::to_string(a.fwd_bwd.links) + " " + std::to_string(a.fwd_bwd.backward_ops) + " " +
         std::to_string(a.fwd_bwd.wrappers) + " " + std::to_string(a.tree.roots) + " " +
         std::to_string(a.tree.fallback_parents) + " " + std::to_string(a.tree.borrowed_ends) +
         " " + std::to_string(a.device.by_flow) + " " + std::to_string(a.device.by_correlation) +
         " " + std::to_string(a.device.by_external_id) + " " +
         std::to_string(a.device.runtime_calls) + " " + std::to_string(a.device.unlinked) + " " +
         std::to_string(a.tree.linked_before) + " " + std::to_string(a.tree.events) + " " +
         std::to_string(a.tree.missing_ends) + " " +
         std::to_string(a.device.flow_ends_without_start) + " " +
         std::to_string(a.device.dangling_correlations) + " " +
         std::to_string(a.device.duplicate_flow_starts) + "\n";
  for (const std::uint64_t count : t.anomalies.n) out += std::to_string(count) + " ";
  return out;
}

enum class analysis_outcome { rejected, same, differs };

/// Every way of analysing `t` against the three public steps (see `check_analysis`).
inline analysis_outcome same_every_way(const tmod::event_table& t) {
  const std::string reference = analysed(t, how::steps);
  if (analysed(t, how::api) != reference) return analysis_outcome::differs;
  for (const std::size_t chunk :
       {std::size_t{0}, std::size_t{1}, std::size_t{3}, std::size_t{512}}) {
    if (analysed(t, how::serial, 4096, chunk) != reference) return analysis_outcome::differs;
    for (const std::size_t rows : {std::size_t{1}, std::size_t{4}})
      if (analysed(t, how::parallel, rows, chunk) != reference) return analysis_outcome::differs;
  }
  const std::string hta = analysed<tmod::sibling_ties_tree>(t, how::steps);
  if (analysed<tmod::sibling_ties_tree>(t, how::serial) != hta ||
      analysed<tmod::sibling_ties_tree>(t, how::parallel, 1) != hta)
    return analysis_outcome::differs;
  return analysis_outcome::same;
}

}  // namespace fuzz
