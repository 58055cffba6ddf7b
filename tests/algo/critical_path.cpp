// Critical path by the exact rules: a graph computed by hand, the longest path against brute
// force on random graphs, a deep nesting without recursion, and a real trace on which the exact
// rules give HTA's own summary (HTA's rules: tests/hta/critical_path.cpp).
#include <doctest/doctest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <tracemodel/algo/critical_path.hpp>
#include <tracemodel/formats/chrome_trace_reader.hpp>

#include "../support/device_traces.hpp"
#include "../support/json.hpp"

using namespace tracemodel;

namespace {
/// The exact rules' longest path over their topological order.
row_list<std::uint32_t> exact_longest_path(std::size_t n, const std::vector<cp_edge>& edges,
                                           std::int64_t* length, bool* acyclic) {
  const detail::topological_order o = detail::lowest_first_order(n, edges);
  *acyclic = o.acyclic;
  return detail::longest_path(o.nodes, n, edges, detail::tie_edge::by_source_order, length);
}
}  // namespace

TEST_CASE("critical path, exact: a launch, its kernel and a device sync, by hand") {
  // Step [0, 100) us; op A [10, 50) launches (L, [20, 25)) a kernel k [30, 90); op B [60, 70);
  // a cudaDeviceSynchronize S [70, 95) that waits (its Context Sync record) for k.
  // clang-format off
  std::string text = R"json({"traceEvents":[
{"ph":"X","cat":"user_annotation","name":"ProfilerStep#1","pid":1,"tid":1,"ts":0,"dur":100},
{"ph":"X","cat":"cpu_op","name":"A","pid":1,"tid":1,"ts":10,"dur":40},
{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":20,"dur":5,"args":{"correlation":1}},
{"ph":"X","cat":"kernel","name":"gemm","pid":0,"tid":7,"ts":30,"dur":60,"args":{"device":0,"stream":7,"correlation":1}},
{"ph":"X","cat":"cpu_op","name":"B","pid":1,"tid":1,"ts":60,"dur":10},
{"ph":"X","cat":"cuda_runtime","name":"cudaDeviceSynchronize","pid":1,"tid":1,"ts":70,"dur":25,"args":{"correlation":2}},
{"ph":"X","cat":"cuda_sync","name":"Context Sync","pid":0,"tid":7,"ts":70,"dur":20,"args":{"device":0,"stream":-1,"correlation":2}}
]})json";
  // clang-format on
  const event_table t = read_chrome_trace(text, text.size());
  const critical_path cp = critical_path_of(t, {.annotation = "ProfilerStep"});
  REQUIRE(cp.window);
  CHECK(cp.window->first == 0);
  CHECK(cp.window->second == 100000);
  CHECK(cp.nodes.size() == 10);  // A, L, k, B, S: a start and an end each
  std::map<cp_edge_type, int> types;
  for (const cp_edge& e : cp.edges) ++types[e.type];
  CHECK(types == std::map<cp_edge_type, int>{{cp_edge_type::operator_kernel, 6},
                                             {cp_edge_type::dependency, 2},
                                             {cp_edge_type::kernel_launch_delay, 1},
                                             {cp_edge_type::sync_dependency, 1}});
  CHECK(cp.acyclic);
  // A's start -> L's start (10, A's) -> k's start (launch, 10) -> k's end (60); the sync edge to
  // S's end adds nothing, and the first node to reach the greatest length ends the path.
  CHECK(cp.length == 80000);
  REQUIRE(cp.path.size() == 3);
  const std::vector<cp_edge_type> want = {cp_edge_type::operator_kernel,
                                          cp_edge_type::kernel_launch_delay,
                                          cp_edge_type::operator_kernel};
  for (std::size_t k = 0; k < want.size(); ++k) CHECK(cp.edges[cp.path[k]].type == want[k]);
  std::vector<std::string> names;
  for (const event_index i : cp.events) names.emplace_back(t.name(i));
  CHECK(names == std::vector<std::string>{"A", "cudaLaunchKernel", "gemm"});
  CHECK(cp.bound_by == std::map<std::string, std::int64_t>{{"", 0},
                                                           {"cpu_bound", 10000},
                                                           {"gpu_compute_bound", 60000},
                                                           {"gpu_kernel_launch_overhead", 10000}});
  // The synchronize's own time is explained by the sync edge: its operator edge weighs 0.
  for (const cp_edge& e : cp.edges)
    if (e.type == cp_edge_type::operator_kernel && t.name(e.charged) == "cudaDeviceSynchronize")
      CHECK(e.weight == 0);
  // No such annotation: an empty graph; the whole trace: the same path here.
  CHECK(critical_path_of(t, {.annotation = "nothing"}).nodes.empty());
  CHECK(critical_path_of(t).length == 80000);
}

TEST_CASE("critical path: the longest path against brute force, on random graphs") {
  std::mt19937_64 rng(11);
  for (int round = 0; round < 400; ++round) {
    const auto n = std::uniform_int_distribution<std::uint32_t>(1, 8)(rng);
    std::vector<std::uint32_t> order(n);  // a topological order that is not the ids' order
    for (std::uint32_t k = 0; k < n; ++k) order[k] = k;
    std::shuffle(order.begin(), order.end(), rng);
    std::vector<cp_edge> edges;
    for (std::uint32_t a = 0; a < n; ++a)
      for (std::uint32_t b = a + 1; b < n; ++b)
        if (std::uniform_int_distribution<int>(0, 2)(rng) == 0)
          edges.push_back({order[a], order[b],
                           std::uniform_int_distribution<std::int64_t>(-5, 20)(rng),
                           cp_edge_type::operator_kernel, no_event});
    std::int64_t length = -1;
    bool acyclic = false;
    const auto path = exact_longest_path(n, edges, &length, &acyclic);
    CHECK(acyclic);
    // Brute force: the best sum over every path, from every node.
    std::function<std::int64_t(std::uint32_t)> from = [&](std::uint32_t v) {
      std::int64_t best = 0;
      for (const cp_edge& e : edges)
        if (e.from == v) best = std::max(best, std::max<std::int64_t>(0, e.weight) + from(e.to));
      return best;
    };
    std::int64_t want = 0;
    for (std::uint32_t v = 0; v < n; ++v) want = std::max(want, from(v));
    CAPTURE(round);
    CHECK(length == want);
    std::int64_t sum = 0;  // the path is connected and weighs what it says
    for (std::size_t k = 0; k < path.size(); ++k) {
      if (k > 0) CHECK(edges[path[k - 1]].to == edges[path[k]].from);
      sum += std::max<std::int64_t>(0, edges[path[k]].weight);
    }
    CHECK(sum == length);
    if (n >= 2) {  // a cycle is reported
      std::vector<cp_edge> cyclic = edges;
      cyclic.push_back({order[0], order[1], 1, cp_edge_type::dependency, no_event});
      cyclic.push_back({order[1], order[0], 1, cp_edge_type::dependency, no_event});
      (void)exact_longest_path(n, cyclic, &length, &acyclic);
      CHECK_FALSE(acyclic);
    }
  }
}

TEST_CASE("critical path: 20,000 nested ops and a chain of a million nodes, no recursion") {
  const int depth = 20000;
  std::string text = tmtest::nested_ops_trace(depth);
  const event_table t = read_chrome_trace(text, text.size());
  const critical_path cp = critical_path_of(t);
  CHECK(cp.nodes.size() == 2 * depth);
  CHECK(cp.length == 2 * depth * 1000);  // down the starts and up the ends: the outer op's time
  CHECK(cp.bound_by.at("cpu_bound") == 2 * depth * 1000);
  std::vector<cp_edge> chain;
  for (std::uint32_t k = 0; k + 1 < 1'000'000; ++k)
    chain.push_back({k, k + 1, 1, cp_edge_type::dependency, no_event});
  std::int64_t length = 0;
  bool acyclic = false;
  CHECK(exact_longest_path(1'000'000, chain, &length, &acyclic).size() == 999'999);
  CHECK(length == 999'999);
}

TEST_CASE("critical path, exact: cuda_event_sync's step 0 gives HTA's own summary") {
  // HTA's answer (its .hta.json): 54 nodes, 57 edges (38 operator, 10 dependency, 5 launch,
  // 4 sync), 2,411 us, cpu_bound 2,365, gpu_compute_bound 36, launch overhead 10. The exact
  // rules agree on this trace (on others they differ: see docs/gpu.md).
  const event_table t = read_chrome_trace_file(
      tmtest::data_path("kineto/critical_path_cuda_event_sync_event_sync_trace.json.gz"));
  const critical_path cp = critical_path_of(t, {.annotation = "ProfilerStep", .instance = 0});
  CHECK(cp.nodes.size() == 54);
  CHECK(cp.edges.size() == 57);
  std::map<cp_edge_type, int> types;
  for (const cp_edge& e : cp.edges) ++types[e.type];
  CHECK(types[cp_edge_type::operator_kernel] == 38);
  CHECK(types[cp_edge_type::dependency] == 10);
  CHECK(types[cp_edge_type::kernel_launch_delay] == 5);
  CHECK(types[cp_edge_type::sync_dependency] == 4);
  CHECK(cp.length == 2'411'000);
  CHECK(cp.bound_by == std::map<std::string, std::int64_t>{{"", 0},
                                                           {"cpu_bound", 2'365'000},
                                                           {"gpu_compute_bound", 36'000},
                                                           {"gpu_kernel_launch_overhead", 10'000}});
}
