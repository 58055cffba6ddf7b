// The main job's outputs: the example runtime runs, its trace reads back, every backward op of
// its autograd engine is linked to its forward op, and exactly the expected patterns fire.
#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include <tracemodel/algo/analyze.hpp>
#include <tracemodel/algo/key_averages.hpp>
#include <tracemodel/algo/patterns.hpp>
#include <tracemodel/algo/pytorch_patterns.hpp>
#include <tracemodel/formats/chrome_trace_reader.hpp>
#include <tracemodel/formats/chrome_trace_writer.hpp>
#include <tracemodel/formats/perfetto_reader.hpp>
#include <tracemodel/formats/pytorch_memory.hpp>

using namespace tracemodel;

namespace {
std::string run(const std::string& cmd, int& status) {
  std::FILE* p = ::popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  std::string out;
  char buf[4096];
  std::size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  const int st = ::pclose(p);
  status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return out;
}
}  // namespace

TEST_SUITE("examples") {
  TEST_CASE("mini_runtime: trace, links, patterns") {
    const std::filesystem::path dir =
        std::filesystem::path(TRACEMODEL_TEST_BINARY_DIR) / "mini_runtime_test";
    std::filesystem::remove_all(dir);
    int status = -1;
    const std::string out =
        run("\"" MINI_RUNTIME "\" --steps 4 --out \"" + dir.string() + "\"", status);
    REQUIRE(status == 0);
    // The report is printed and written, and fits on a screen.
    std::ifstream report_file(dir / "report.txt");
    std::stringstream report;
    report << report_file.rdbuf();
    CHECK(report.str() == out);
    CHECK(std::count(out.begin(), out.end(), '\n') <= 60);
    CHECK(out.find("mini_runtime: 4 training steps") == 0);
    // Every parameter and gradient block is categorized as the runtime knows it: 4 parameters
    // and 4 gradients a step.
    CHECK(out.find("parameter and gradient blocks as the runtime knows them: 20 right, 0 wrong") !=
          std::string::npos);
    {
      const memory_timeline_file f =
          read_memory_timeline_file((dir / "memory.raw.json.gz").string());
      REQUIRE(f.raw);
      std::int64_t parameter = 0, peak = 0;
      for (const memory_sample& m : f.samples) {
        parameter = std::max(parameter, m.bytes[std::size_t(memory_category::parameter)]);
        peak = std::max(peak, m.total());
      }
      CHECK(parameter == (8 * 32 + 32 + 32 + 1) * 4);  // the MLP's weights and biases
      CHECK(out.find("memory: peak " + format_memory(peak) + ";") != std::string::npos);
    }

    event_table t = read_chrome_trace_file((dir / "trace.json").string());
    // The Perfetto trace beside it holds the same table.
    CHECK(chrome_trace_string(read_perfetto_trace_file((dir / "trace.pftrace").string())) ==
          chrome_trace_string(t));
    CHECK(out.find("recorded " + std::to_string(t.size()) + " events on 2 threads") !=
          std::string::npos);
    const analysis a = analyze(t);
    // Every backward op (not the evaluate_function wrappers) is the end of one link, from the
    // forward op with its sequence number on the forward thread.
    std::set<event_index> linked;
    for (std::size_t k = 0; k < a.fwd_bwd.links; ++k) {
      const flow_link& l = t.links[k];
      const auto& from = t.events[l.from].get<event_kind::op>();
      const auto& to = t.events[l.to].get<event_kind::op>();
      CHECK(from.fwd_thread_id == 0);
      CHECK(from.sequence_number == to.sequence_number);
      CHECK(t.events[l.from].tid == to.fwd_thread_id);
      CHECK(t.events[l.to].tid != t.events[l.from].tid);  // backward runs on its own thread
      linked.insert(l.to);
    }
    // Every name is one the runtime gives (names made at run time are copied, not dangling).
    for (const auto& e : t.events) {
      const std::string_view n = t.name(e);
      INFO(std::string(n));
      CHECK((n.starts_with("aten::") || n.starts_with("autograd::engine::evaluate_function: ") ||
             n.starts_with("ProfilerStep#") || n.starts_with("main.cpp(") ||
             n.starts_with("Optimizer.step#") || n == "optim::sgd::_single_tensor_sgd" ||
             n == "torch::autograd::AccumulateGrad" || n == "[memory]" ||
             (n.ends_with("Backward0") && n.find_first_of(" :") == std::string_view::npos)));
    }
    std::size_t backward_ops = 0, steps = 0, frees = 0, in_modules = 0;
    for (event_index i = 0; i < t.size(); ++i) {
      const auto& e = t.events[i];
      if (const auto* op = e.get_if<event_kind::op>()) {
        if (op->fwd_thread_id > 0 && !t.name(e).starts_with("autograd::engine")) {
          ++backward_ops;
          INFO("backward op " << std::string(t.name(e)) << " seq " << op->sequence_number
                              << " start " << e.start_ns << " end " << op->end_ns);
          CHECK(linked.count(i) == 1);
        }
        steps += t.name(e).starts_with("ProfilerStep#") ? 1 : 0;
        for (const attribute& at : t.attrs_of(e))
          if (t.strings.view(at.key) == "Module Hierarchy") ++in_modules;
      }
      if (const auto* m = e.get_if<event_kind::allocation>()) frees += m->alloc_size < 0 ? 1 : 0;
    }
    // Per step, 8 forward ops have a backward function: t, mm and add of each layer, relu, loss.
    CHECK(backward_ops == 4 * 8);
    CHECK(linked.size() == backward_ops);
    CHECK(out.find("forward/backward links: 32 (backward ops: 32)") != std::string::npos);
    CHECK(steps == 4);
    CHECK(frees > 0);
    CHECK(in_modules > 0);

    // Exactly the two patterns the runtime provokes, once per step each.
    const tree_view view(t);
    auto patterns = pytorch_patterns();
    const auto results = find_patterns(view, context_of(t), patterns);
    for (const auto& r : results) {
      INFO(r.name);
      if (r.name == "For Loop Indexing Pattern" || r.name == "Optimizer Single Tensor Pattern")
        CHECK(r.matches.size() == 4);
      else
        CHECK(r.matches.empty());
    }
    CHECK(out.find("For Loop Indexing Pattern: 4 events matched.") != std::string::npos);
    CHECK(out.find("Optimizer Single Tensor Pattern: 4 events matched.") != std::string::npos);
  }
}
