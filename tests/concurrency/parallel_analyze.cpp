// `analyze` on two threads (the forward/backward linker's pass and matching on the second, the
// device links and the tree on the calling one, the tree overlapping the matching) and on one,
// against the three public steps called one after another: the same parents, children, links,
// inherited keys and counts. ThreadSanitizer runs this group.
#include <doctest/doctest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include <tracemodel/algo/analyze.hpp>
#include <tracemodel/formats/chrome_trace_reader.hpp>
#include <tracemodel/testing/builder.hpp>

#include "../support/json.hpp"
#include "../support/real_traces.hpp"

namespace tmod = tracemodel;

namespace {

enum class how { steps, serial, parallel };

/// Everything `analyze` writes, as text (one line per event, then the links and the counts).
std::string analysed(tmod::event_table t, how h) {
  tmod::analysis a;
  if (h == how::steps) {
    a.device = tmod::link_device_activities(t);
    const auto fwd_bwd = tmod::link_forward_backward(t);
    a.tree = tmod::build_tree(t);
    a.fwd_bwd_links = fwd_bwd.size();
    t.links.assign(fwd_bwd.begin(), fwd_bwd.end());
    t.links.insert(t.links.end(), a.device.links.begin(), a.device.links.end());
  } else {
    tmod::analyze_options o;
    o.parallel = h == how::parallel;
    o.parallel_threshold = 0;
    a = tmod::analyze(t, o);
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
  out += std::to_string(a.fwd_bwd_links) + " " + std::to_string(a.tree.roots) + " " +
         std::to_string(a.tree.fallback_parents) + " " + std::to_string(a.tree.borrowed_ends) + " " +
         std::to_string(a.device.by_flow) + " " + std::to_string(a.device.by_correlation) + " " +
         std::to_string(a.device.by_external_id) + " " + std::to_string(a.device.runtime_calls) +
         " " + std::to_string(a.device.unlinked) + " " + std::to_string(a.tree.linked_before) + " " +
         std::to_string(a.tree.events) + " " + std::to_string(a.tree.missing_ends) + "\n";
  return out;
}

}  // namespace

TEST_SUITE("concurrency") {
  TEST_CASE("parallel analyze: every real trace gives what the serial steps give") {
    for (const char* f : tmtest::real_traces) {
      INFO(f);
      std::string text = tmtest::read_file(tmtest::data_path(f));
      const tmod::event_table t = tmod::read_chrome_trace(text, text.size());
      const std::string reference = analysed(t, how::steps);
      CHECK(analysed(t, how::serial) == reference);
      CHECK(analysed(t, how::parallel) == reference);
    }
  }

  TEST_CASE("parallel analyze: random training-like tables, sorted or not") {
    // Steps of forward ops with sequence numbers, backward ops (with their evaluate_function
    // wrappers) on a second thread, launches with flows and kernels.
    std::mt19937_64 rng(42);
    auto pick = [&](int n) { return static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(n)); };
    for (int round = 0; round < 20; ++round) {
      tmod::testing::table_builder b;
      std::int64_t t = 0;
      std::uint64_t corr = 1;
      const int steps = 1 + static_cast<int>(pick(30));
      std::int64_t seq = 0;
      for (int s = 0; s < steps; ++s) {
        const std::int64_t step_start = t;
        for (int k = 0; k < 5; ++k, ++seq) {
          b.op("aten::mm", t, t + 50, 1).seq(seq).op_correlation(corr);
          // Sometimes the kernel's clock puts it before its launch (the device linker then
          // places it in its second pass), and the launch names the next op (found later).
          const bool early = pick(8) == 0;
          b.device("cudaLaunchKernel", tmod::activity_type::cuda_runtime, t + 10, t + 20, 1, 1)
              .correlation(corr).external_id(pick(6) == 0 ? corr + 1 : pick(2) == 0 ? corr : 0)
              .flow(corr, true);
          b.device("gemm", tmod::activity_type::kernel, early ? t + 5 : t + 30, t + 90 + pick(50), 7, 0)
              .correlation(corr).flow(pick(10) == 0 ? corr + 1000 : corr, false);
          ++corr;
          t += 60;
        }
        for (std::int64_t k = seq - 1; k >= seq - 5; --k) {
          b.op("autograd::engine::evaluate_function: MmBackward0", t, t + 40, 2);
          b.op("MmBackward0", t + 5, t + 35 + pick(10), 2).seq(k, 1).scope(tmod::op_scope::backward_function);
          t += 50;
        }
        b.annotation("ProfilerStep", step_start, t, 1);
        t += 10;
      }
      tmod::event_table table = b.take();
      // A few events arrive linked already (an earlier step placed them): every step leaves
      // them alone.
      for (std::size_t i = 1; i < table.size(); i += 1 + static_cast<std::size_t>(pick(40))) {
        table.events[i].parent = static_cast<tmod::event_index>(pick(static_cast<int>(i)));
        table.events[i].link = tmod::parent_link::flow;
      }
      if (round % 2 == 1)
        std::shuffle(table.events.begin(), table.events.end(), rng);
      else  // the step annotation was added after its ops
        std::stable_sort(table.events.begin(), table.events.end(),
                         [](const auto& x, const auto& y) { return x.start_ns < y.start_ns; });
      INFO("round " << round << " events " << table.size());
      const std::string reference = analysed(table, how::steps);
      CHECK(analysed(table, how::serial) == reference);
      CHECK(analysed(table, how::parallel) == reference);
    }
  }
}
