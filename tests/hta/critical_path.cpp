// Critical path by HTA's rules: graphs computed by hand, networkx's longest path against brute
// force, every summary HTA gave reproduced, and random traces under both rules.
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
#include <tracemodel/hta/critical_path.hpp>
#include <tracemodel/hta/read.hpp>

#include "../support/device_traces.hpp"
#include "../support/json.hpp"

using namespace tracemodel;

namespace {
std::map<cp_edge_type, int> count_types(const critical_path& cp) {
  std::map<cp_edge_type, int> types;
  for (const cp_edge& e : cp.edges) ++types[e.type];
  return types;
}
/// The edge from the node of `a` (its start or end) to the node of `b`, if the graph has it.
const cp_edge* edge_between(const critical_path& cp, const event_table& t, std::string_view a,
                            bool a_start, std::string_view b, bool b_start) {
  for (const cp_edge& e : cp.edges) {
    const cp_node &x = cp.nodes[e.from], &y = cp.nodes[e.to];
    if (t.name(x.event) == a && x.start == a_start && t.name(y.event) == b && y.start == b_start)
      return &e;
  }
  return nullptr;
}
std::vector<std::string> names_of(const critical_path& cp, const event_table& t) {
  std::vector<std::string> names;
  for (const event_index i : cp.events) names.emplace_back(t.name(i));
  return names;
}
event_table read_in_file_order(std::string text) {
  return read_chrome_trace(text, text.size(), hta::reading());
}
}  // namespace

TEST_CASE("critical path, HTA's rules: 20,000 nested ops, no recursion") {
  const int depth = 20000;
  std::string text = tmtest::nested_ops_trace(depth);
  const event_table t = read_chrome_trace(text, text.size());
  const critical_path cp = hta::critical_path_of(t);  // its walk of the stack
  CHECK(cp.nodes.size() == 2 * depth);
  CHECK(cp.length == 2 * depth * 1000);
}

TEST_CASE("critical path, HTA's rules: the CUDA runtime lock across threads, by hand") {
  // Thread 1: op X [0, 100) launches L1 [10, 30) and L3 [50, 60); thread 2: cudaHostAlloc H
  // [5, 40). Kernels k1 [35, 45) and k3 [70, 80) on stream 7.
  // clang-format off
  const std::string text = R"json({"traceEvents":[
{"ph":"X","cat":"cpu_op","name":"X","pid":1,"tid":1,"ts":0,"dur":100},
{"ph":"X","cat":"cuda_runtime","name":"cudaHostAlloc","pid":1,"tid":2,"ts":5,"dur":35},
{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":10,"dur":20,"args":{"correlation":1}},
{"ph":"X","cat":"kernel","name":"k1","pid":0,"tid":7,"ts":35,"dur":10,"args":{"device":0,"stream":7,"correlation":1}},
{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":50,"dur":10,"args":{"correlation":3}},
{"ph":"X","cat":"kernel","name":"k3","pid":0,"tid":7,"ts":70,"dur":10,"args":{"device":0,"stream":7,"correlation":3}}
]})json";
  // clang-format on
  const event_table t = read_in_file_order(text);
  const critical_path cp = hta::critical_path_of(t);
  CHECK(cp.nodes.size() == 12);
  // The lock: each launch's own time (operator), the host alloc's start to the first launch's
  // end and that end to the alloc's end (dependency: the alloc waited for the lock, then held
  // it); the thread: X's start to L1's, L1's end to L3's start (X's time), L3's end to X's; the
  // alloc's own start-to-end edge is left out (both lock nodes); the launches' edges.
  CHECK(count_types(cp) == std::map<cp_edge_type, int>{{cp_edge_type::operator_kernel, 7},
                                                       {cp_edge_type::dependency, 2},
                                                       {cp_edge_type::kernel_launch_delay, 2}});
  CHECK(edge_between(cp, t, "cudaHostAlloc", true, "cudaLaunchKernel", false) != nullptr);
  const cp_edge* held = edge_between(cp, t, "cudaLaunchKernel", false, "cudaHostAlloc", false);
  REQUIRE(held != nullptr);
  CHECK(held->type == cp_edge_type::dependency);
  CHECK(edge_between(cp, t, "cudaHostAlloc", true, "cudaHostAlloc", false) == nullptr);
  const cp_edge* gap = edge_between(cp, t, "cudaLaunchKernel", false, "cudaLaunchKernel", true);
  REQUIRE(gap != nullptr);
  CHECK(gap->weight == 20'000);
  CHECK(t.name(gap->charged) == "X");  // between two children: their parent's time
  CHECK(cp.length == 100'000);
  CHECK(names_of(cp, t) == std::vector<std::string>{"X", "cudaLaunchKernel", "cudaLaunchKernel"});
  CHECK(cp.bound_by == std::map<std::string, std::int64_t>{{"", 0}, {"cpu_bound", 100'000}});
}

TEST_CASE("critical path, HTA's rules: the backward thread merged, a stream sync, ties") {
  // Thread 1: "forward" F [0, 50) launches ka [30, 40) (La [10, 15)) and kb [40, 80) (Lb [20,
  // 25)) on stream 7; thread 2: an autograd op B [60, 100) with cudaStreamSynchronize S [70, 95),
  // whose Stream Sync record ends at 85.
  // clang-format off
  const std::string text = R"json({"traceEvents":[
{"ph":"X","cat":"cpu_op","name":"forward","pid":1,"tid":1,"ts":0,"dur":50},
{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":10,"dur":5,"args":{"correlation":1}},
{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":20,"dur":5,"args":{"correlation":2}},
{"ph":"X","cat":"kernel","name":"ka","pid":0,"tid":7,"ts":30,"dur":10,"args":{"device":0,"stream":7,"correlation":1}},
{"ph":"X","cat":"kernel","name":"kb","pid":0,"tid":7,"ts":40,"dur":40,"args":{"device":0,"stream":7,"correlation":2}},
{"ph":"X","cat":"cpu_op","name":"autograd::engine::evaluate_function: MulBackward0","pid":1,"tid":2,"ts":60,"dur":40},
{"ph":"X","cat":"cuda_runtime","name":"cudaStreamSynchronize","pid":1,"tid":2,"ts":70,"dur":25,"args":{"correlation":4}},
{"ph":"X","cat":"cuda_sync","name":"Stream Sync","pid":0,"tid":7,"ts":78,"dur":7,"args":{"device":0,"stream":7,"correlation":4}}
]})json";
  // clang-format on
  const event_table t = read_in_file_order(text);
  const critical_path cp = hta::critical_path_of(t);
  // The Stream Sync record's nodes have no edge, so the graph does not hold them.
  CHECK(cp.nodes.size() == 14);
  CHECK(count_types(cp) == std::map<cp_edge_type, int>{{cp_edge_type::operator_kernel, 10},
                                                       {cp_edge_type::dependency, 1},
                                                       {cp_edge_type::kernel_launch_delay, 2},
                                                       {cp_edge_type::kernel_kernel_delay, 1},
                                                       {cp_edge_type::sync_dependency, 1}});
  // The two threads are one stack: forward's end to the backward op's start.
  const cp_edge* next = edge_between(cp, t, "forward", false,
                                     "autograd::engine::evaluate_function: MulBackward0", true);
  REQUIRE(next != nullptr);
  CHECK(next->type == cp_edge_type::dependency);
  // ka was queued behind nothing but its call's queue was 1 then 1: no launch delay, only the
  // zero-weight launch edge; kb follows ka (kernel to kernel) and gets a zero-weight launch edge.
  const cp_edge* la = edge_between(cp, t, "cudaLaunchKernel", true, "ka", true);
  REQUIRE(la != nullptr);
  CHECK(la->weight == 0);
  CHECK(edge_between(cp, t, "ka", false, "kb", true)->type == cp_edge_type::kernel_kernel_delay);
  // The blocking call's own time weighs 0; the stream's last kernel ends it.
  CHECK(
      edge_between(cp, t, "cudaStreamSynchronize", true, "cudaStreamSynchronize", false)->weight ==
      0);
  CHECK(edge_between(cp, t, "kb", false, "cudaStreamSynchronize", false)->type ==
        cp_edge_type::sync_dependency);
  // Three paths of 65 us tie; networkx's order (the first longest predecessor, predecessors in
  // the order their edges were added: the thread's before the sync's) keeps the host one.
  CHECK(cp.length == 65'000);
  CHECK(names_of(cp, t) ==
        std::vector<std::string>{"forward", "cudaLaunchKernel", "cudaLaunchKernel",
                                 "autograd::engine::evaluate_function: MulBackward0",
                                 "cudaStreamSynchronize"});
  CHECK(cp.bound_by == std::map<std::string, std::int64_t>{{"", 0}, {"cpu_bound", 65'000}});
  // Without the zero-weight launch edges (HTA's default outside its tests) two edges go.
  CHECK(hta::critical_path_of(t, {.zero_weight_launch_edges = false}).edges.size() ==
        cp.edges.size() - 2);
}

TEST_CASE("critical path, both rules: a stream waits for an event recorded on another") {
  // L1 [0, 5) launches k1 [10, 50) on stream 7; cudaEventRecord R [6, 8) records on stream 7;
  // cudaStreamWaitEvent W [9, 11) makes stream 20 wait; L2 [12, 15) launches k2 [51, 60) there.
  // clang-format off
  const std::string text = R"json({"traceEvents":[
{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":0,"dur":5,"args":{"correlation":1}},
{"ph":"X","cat":"kernel","name":"k1","pid":0,"tid":7,"ts":10,"dur":40,"args":{"device":0,"stream":7,"correlation":1}},
{"ph":"X","cat":"cuda_runtime","name":"cudaEventRecord","pid":1,"tid":1,"ts":6,"dur":2,"args":{"correlation":2}},
{"ph":"X","cat":"cuda_runtime","name":"cudaStreamWaitEvent","pid":1,"tid":1,"ts":9,"dur":2,"args":{"correlation":3}},
{"ph":"X","cat":"cuda_sync","name":"Stream Wait Event","pid":0,"tid":20,"ts":12,"dur":1,"args":{"device":0,"stream":20,"correlation":3,"wait_on_stream":7,"wait_on_cuda_event_record_corr_id":2}},
{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":12,"dur":3,"args":{"correlation":4}},
{"ph":"X","cat":"kernel","name":"k2","pid":0,"tid":20,"ts":51,"dur":9,"args":{"device":0,"stream":20,"correlation":4}}
]})json";
  // clang-format on
  const event_table t = read_in_file_order(text);
  const critical_path cp = hta::critical_path_of(t);
  CHECK(cp.nodes.size() == 12);
  CHECK(count_types(cp) == std::map<cp_edge_type, int>{{cp_edge_type::operator_kernel, 6},
                                                       {cp_edge_type::dependency, 3},
                                                       {cp_edge_type::kernel_launch_delay, 2},
                                                       {cp_edge_type::sync_dependency, 1}});
  const cp_edge* wait = edge_between(cp, t, "k1", false, "k2", true);
  REQUIRE(wait != nullptr);
  CHECK(wait->type == cp_edge_type::sync_dependency);
  // k2's launch is no delay (what it waited for ended after the call): a zero-weight edge.
  CHECK(edge_between(cp, t, "cudaLaunchKernel", true, "k2", true)->weight == 0);
  CHECK(cp.length == 59'000);
  CHECK(names_of(cp, t) == std::vector<std::string>{"cudaLaunchKernel", "k1", "k2"});
  CHECK(cp.bound_by == std::map<std::string, std::int64_t>{{"", 0},
                                                           {"gpu_compute_bound", 49'000},
                                                           {"gpu_kernel_launch_overhead", 10'000}});
  // The exact rules see the same wait (without it k2 would follow its own launch: 57 us).
  const critical_path exact = critical_path_of(t);
  const cp_edge* waited = edge_between(exact, t, "k1", false, "k2", true);
  REQUIRE(waited != nullptr);
  CHECK(waited->type == cp_edge_type::sync_dependency);
  CHECK(exact.length == 59'000);
  CHECK(names_of(exact, t) == std::vector<std::string>{"cudaLaunchKernel", "k1", "k2"});
}

TEST_CASE("critical path, HTA's rules: networkx's longest path against brute force") {
  std::mt19937_64 rng(23);
  for (int round = 0; round < 400; ++round) {
    const auto n = std::uniform_int_distribution<std::uint32_t>(1, 8)(rng);
    std::vector<std::uint32_t> order(n);
    for (std::uint32_t k = 0; k < n; ++k) order[k] = k;
    std::shuffle(order.begin(), order.end(), rng);
    hta::detail::nx_digraph g(n);
    std::vector<cp_edge> edges;  // as added (a pair may be added twice: the later one counts)
    for (std::uint32_t a = 0; a < n; ++a)
      for (std::uint32_t b = a + 1; b < n; ++b)
        for (int again = 0; again < 2; ++again)
          if (std::uniform_int_distribution<int>(0, 3)(rng) == 0) {
            const cp_edge e{order[a], order[b],
                            std::uniform_int_distribution<std::int64_t>(-5, 20)(rng),
                            cp_edge_type::operator_kernel, no_event};
            g.add(e);
            edges.push_back(e);
          }
    std::int64_t length = -1;
    const tracemodel::detail::topological_order topo = hta::detail::generation_order(g, n);
    CHECK(topo.acyclic);
    const auto path = tracemodel::detail::longest_path(
        topo.nodes, n, g.edges, tracemodel::detail::tie_edge::by_edge_order, &length);
    std::map<std::pair<std::uint32_t, std::uint32_t>, std::int64_t> weight;  // the last added
    for (const cp_edge& e : edges) weight[{e.from, e.to}] = std::max<std::int64_t>(0, e.weight);
    CHECK(g.edges.size() == weight.size());
    std::function<std::int64_t(std::uint32_t)> from = [&](std::uint32_t v) {
      std::int64_t best = 0;
      for (const auto& [pair, w] : weight)
        if (pair.first == v) best = std::max(best, w + from(pair.second));
      return best;
    };
    std::int64_t want = 0;
    for (std::uint32_t v = 0; v < n; ++v) want = std::max(want, from(v));
    CAPTURE(round);
    CHECK(length == want);
    std::int64_t sum = 0;
    for (std::size_t k = 0; k < path.size(); ++k) {
      if (k > 0) CHECK(g.edges[path[k - 1]].to == g.edges[path[k]].from);
      sum += std::max<std::int64_t>(0, g.edges[path[k]].weight);
    }
    CHECK(sum == length);
  }
}

TEST_CASE("critical path, HTA's rules: every critical-path summary HTA gave is reproduced") {
  struct case_t {
    const char* file;
    const char* answers;
  };
  const case_t cases[] = {
      {"critical_path_alexnet_benchmark_result_2869224_1695835535_trace.json.gz", "alexnet"},
      {"critical_path_cuda_event_sync_event_sync_trace.json.gz", "cuda_event_sync"},
      {"amd_trace_mi250_minitoy_train_ROCm6_2_kineto.json.gz", "amd"},
      {"nccl_parser_config_nccl_data.json.gz", "nccl_parser_config"},
      {"trace_diff_control_control.json.gz", "trace_diff_control"},
  };
  for (const case_t& c : cases) {
    CAPTURE(c.answers);
    const tmtest::json_doc doc(
        tmtest::data_path(std::string("kineto/hta/") + c.answers + ".hta.json"));
    const simdjson::dom::element want = doc.root["critical_path"];
    const event_table t = hta::read_trace_file(tmtest::data_path(std::string("kineto/") + c.file));
    hta::critical_path_options o;
    o.annotation = std::string(std::string_view(want["annotation"]));
    o.instance = static_cast<std::size_t>(int64_t(want["instance_id"]));
    const critical_path cp = hta::critical_path_of(t, o);
    CHECK(cp.acyclic == bool(want["success"]));
    CHECK(cp.nodes.size() == std::size_t(int64_t(want["nodes"])));
    CHECK(cp.edges.size() == std::size_t(int64_t(want["edges"])));
    std::map<std::string, std::int64_t> types, want_types;
    for (const auto& [type, count] : count_types(cp))
      types[std::string(cp_edge_type_names[static_cast<std::size_t>(type)])] = count;
    for (const auto field : simdjson::dom::object(want["edge_types"]))
      want_types[std::string(field.key)] = int64_t(field.value);
    CHECK(types == want_types);
    CHECK(cp.events.size() == std::size_t(int64_t(want["critical_path_events"])));
    CHECK(cp.length == int64_t(want["critical_path_length_us"]) * 1000);
    std::map<std::string, std::int64_t> want_bound;
    for (const auto field : simdjson::dom::object(want["bound_by_us"]))
      want_bound[std::string(field.key)] = int64_t(field.value) * 1000;
    CHECK(cp.bound_by == want_bound);
  }
}

namespace {
/// A random Kineto-like trace: ops on two threads (one "forward", one "autograd"), launches of
/// several names with their kernels on three streams (some calls without work, some work without
/// a call), event records, stream waits, syncs, steps, times with three decimals (HTA rounds
/// them, so short events end before they start) and some durations of 0.
std::string random_kineto_trace(std::mt19937_64& rng) {
  auto pick = [&](int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng); };
  auto time = [&](int us) { return std::to_string(us) + "." + std::to_string(100 + pick(900)); };
  std::string s = R"({"traceEvents":[)";
  bool first = true;
  auto add = [&](const std::string& e) {
    s += (first ? "" : ",\n") + e;
    first = false;
  };
  for (int k = 0; k < 2; ++k)
    add(R"({"ph":"X","cat":"user_annotation","name":"ProfilerStep#)" + std::to_string(k) +
        R"(","pid":1,"tid":1,"ts":)" + std::to_string(k * 400) + R"(,"dur":400})");
  static const char* const calls[] = {
      "cudaLaunchKernel",      "cudaMemcpyAsync",      "cudaHostAlloc",        "cuLaunchKernel",
      "cudaStreamSynchronize", "cudaEventSynchronize", "cudaDeviceSynchronize"};
  int corr = 1;
  const int n = 5 + pick(40);
  for (int k = 0; k < n; ++k) {
    const int tid = 1 + pick(2);
    const int ts = pick(800);
    const std::string op = tid == 1 ? "forward" : "autograd::engine::evaluate_function: X";
    add(R"({"ph":"X","cat":"cpu_op","name":")" + op + R"(","pid":1,"tid":)" + std::to_string(tid) +
        R"(,"ts":)" + time(ts) + R"(,"dur":)" + time(pick(3) == 0 ? 0 : 1 + pick(60)) + "}");
    const int c = corr++;
    const int call_ts = ts + pick(30);
    const std::string name = calls[pick(7)];
    if (pick(8) != 0)
      add(R"({"ph":"X","cat":"cuda_runtime","name":")" + name + R"(","pid":1,"tid":)" +
          std::to_string(tid) + R"(,"ts":)" + time(call_ts) + R"(,"dur":)" + time(pick(10)) +
          R"(,"args":{"correlation":)" + std::to_string(c) + "}}");
    const int stream = 7 + 13 * pick(3);
    if (name.starts_with("cudaLaunch") || name == "cudaMemcpyAsync" || name == "cuLaunchKernel") {
      if (pick(8) != 0)
        add(R"({"ph":"X","cat":"kernel","name":"k)" + std::to_string(pick(4)) +
            R"(","pid":0,"tid":)" + std::to_string(stream) + R"(,"ts":)" +
            time(call_ts + pick(50)) + R"(,"dur":)" + time(pick(40)) +
            R"(,"args":{"device":0,"stream":)" + std::to_string(stream) + R"(,"correlation":)" +
            std::to_string(c) + "}}");
    } else if (name.ends_with("Synchronize")) {
      const char* kind = name == "cudaStreamSynchronize"  ? "Stream Sync"
                         : name == "cudaEventSynchronize" ? "Event Sync"
                                                          : "Context Sync";
      add(R"({"ph":"X","cat":"cuda_sync","name":")" + std::string(kind) + R"(","pid":0,"tid":)" +
          std::to_string(stream) + R"(,"ts":)" + time(call_ts + pick(5)) + R"(,"dur":)" +
          time(pick(20)) + R"(,"args":{"device":0,"stream":)" +
          (std::string(kind) == "Stream Sync" ? std::to_string(stream) : std::string("-1")) +
          R"(,"correlation":)" + std::to_string(c) + R"(,"wait_on_stream":)" +
          std::to_string(7 + 13 * pick(3)) + R"(,"wait_on_cuda_event_record_corr_id":)" +
          std::to_string(1 + pick(corr)) + "}}");
    }
    if (pick(6) == 0) {  // an event recorded, and a stream that waits for it
      const int record = corr++, wait = corr++;
      add(R"({"ph":"X","cat":"cuda_runtime","name":"cudaEventRecord","pid":1,"tid":)" +
          std::to_string(tid) + R"(,"ts":)" + time(call_ts + 1) +
          R"(,"dur":1,"args":{"correlation":)" + std::to_string(record) + "}}");
      add(R"({"ph":"X","cat":"cuda_runtime","name":"cudaStreamWaitEvent","pid":1,"tid":)" +
          std::to_string(tid) + R"(,"ts":)" + time(call_ts + 2) +
          R"(,"dur":1,"args":{"correlation":)" + std::to_string(wait) + "}}");
      add(R"({"ph":"X","cat":"cuda_sync","name":"Stream Wait Event","pid":0,"tid":)" +
          std::to_string(stream) + R"(,"ts":)" + time(call_ts + 3) +
          R"(,"dur":0,"args":{"device":0,"stream":)" + std::to_string(stream) +
          R"(,"correlation":)" + std::to_string(wait) + R"(,"wait_on_stream":)" +
          std::to_string(7 + 13 * pick(3)) + R"(,"wait_on_cuda_event_record_corr_id":)" +
          std::to_string(record) + "}}");
    }
  }
  return s + "]}";
}

/// The graph's own invariants, and its length against a longest path found by brute force.
void check_graph(const critical_path& cp, bool one_edge_per_pair) {
  const std::size_t n = cp.nodes.size();
  std::set<std::pair<std::uint32_t, std::uint32_t>> pairs;
  std::vector<std::vector<std::pair<std::uint32_t, std::int64_t>>> out(n);
  for (const cp_edge& e : cp.edges) {
    REQUIRE(e.from < n);
    REQUIRE(e.to < n);
    pairs.emplace(e.from, e.to);
    out[e.from].emplace_back(e.to, std::max<std::int64_t>(0, e.weight));
  }
  if (one_edge_per_pair) CHECK(pairs.size() == cp.edges.size());
  if (!cp.acyclic) return;
  std::vector<std::int64_t> memo(n, -1);
  std::function<std::int64_t(std::uint32_t)> from = [&](std::uint32_t v) {
    if (memo[v] >= 0) return memo[v];
    std::int64_t best = 0;
    for (const auto& [w, weight] : out[v]) best = std::max(best, weight + from(w));
    return memo[v] = best;
  };
  std::int64_t want = 0;
  for (std::uint32_t v = 0; v < n; ++v) want = std::max(want, from(v));
  CHECK(cp.length == want);
  std::int64_t sum = 0;
  for (std::size_t k = 0; k < cp.path.size(); ++k) {
    if (k > 0) CHECK(cp.edges[cp.path[k - 1]].to == cp.edges[cp.path[k]].from);
    sum += std::max<std::int64_t>(0, cp.edges[cp.path[k]].weight);
  }
  CHECK(sum == cp.length);
  CHECK(std::set<event_index>(cp.events.begin(), cp.events.end()).size() == cp.events.size());
}
}  // namespace

TEST_CASE("critical path, both rules: random traces give sound graphs and their longest paths") {
  std::mt19937_64 rng(47);
  for (int round = 0; round < 300; ++round) {
    CAPTURE(round);
    const event_table t = read_in_file_order(random_kineto_trace(rng));
    for (const char* annotation : {"", "ProfilerStep"}) {
      const std::size_t instance = static_cast<std::size_t>(round % 2);
      check_graph(critical_path_of(t, {.annotation = annotation, .instance = instance}), false);
      check_graph(hta::critical_path_of(t, {.annotation = annotation, .instance = instance}), true);
    }
  }
}
