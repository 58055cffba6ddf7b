// Execution traces: the reader, and their join with host/device traces (real pairs and
// hand-made cases: exact order, shifted order, inserted and missing ops, several threads,
// several iterations, record-function ids, kernels by correlation, external id and interval).
#include <doctest/doctest.h>

#include <map>
#include <random>
#include <string>
#include <vector>

#include <tracemodel/algo/analyze.hpp>
#include <tracemodel/algo/et_link.hpp>
#include <tracemodel/formats/chrome_trace_reader.hpp>
#include <tracemodel/formats/execution_trace.hpp>
#include <tracemodel/formats/execution_trace_writer.hpp>
#include <tracemodel/testing/builder.hpp>

#include "../support/oracle.hpp"

using namespace tracemodel;
using tracemodel::testing::table_builder;

namespace {

/// An execution trace of op nodes (name, tid), ids from 10 in this order, plus the two
/// synthetic nodes PyTorch writes.
std::string et_json(const std::vector<std::pair<std::string, int>>& ops,
                    const std::vector<std::int64_t>& rf = {}) {
  std::string s =
      R"({"schema":"1.0.1","pid":7,"nodes":[)"
      R"({"name":"[pytorch|profiler|execution_graph|process]","id":1,"parent":1,"tid":0},)"
      R"({"name":"[pytorch|profiler|execution_graph|thread]","id":2,"parent":1,"tid":1})";
  for (std::size_t k = 0; k < ops.size(); ++k) {
    s +=
        R"(,{"name":")" + ops[k].first + R"(","id":)" + std::to_string(10 + k) +
        R"(,"parent":2,"tid":)" + std::to_string(ops[k].second) + R"(,"rf_id":)" +
        std::to_string(k < rf.size() ? rf[k] : 0) +
        R"j(,"inputs":[[1,2]],"input_shapes":[[4]],"input_types":["Tensor(float)"],"outputs":[],"output_shapes":[],"output_types":[]})j";
  }
  return s + "]}";
}

/// Names of the host ops matched to op nodes 10, 11, ... ("-" for none).
std::vector<std::string> matched(const execution_trace& et, const event_table& t,
                                 const et_link_result& r) {
  std::vector<std::string> out;
  for (std::size_t k = 0; k < et.nodes.size(); ++k)
    if (!et.nodes[k].synthetic)
      out.push_back(r.node_host[k] == no_event
                        ? "-"
                        : std::string(t.name(r.node_host[k])) + "@" +
                              std::to_string(t.events[r.node_host[k]].start_ns));
  return out;
}

}  // namespace

TEST_SUITE("formats") {
  TEST_CASE("execution trace reader: nodes, synthetic nodes, errors") {
    const execution_trace_file et = read_execution_trace_string(et_json({{"aten::add", 1}}, {5}));
    CHECK(et.schema == "1.0.1");
    CHECK(et.pid == 7);
    REQUIRE(et.nodes.size() == 3);
    CHECK(et.nodes[0].synthetic);
    CHECK(et.nodes[1].synthetic);
    CHECK_FALSE(et.nodes[2].synthetic);
    CHECK(et.nodes[2].id == 10);
    CHECK(et.nodes[2].parent == 2);
    CHECK(et.nodes[2].rf_id == 5);
    CHECK(et.io_json[2].starts_with(R"("inputs":[[1,2]],"input_shapes":[[4]])"));
    // ctrl_deps instead of parent (newer schemas).
    CHECK(read_execution_trace_string(R"({"nodes":[{"id":3,"name":"x","ctrl_deps":[1]}]})")
              .nodes[0]
              .parent == 1);
    CHECK_THROWS_WITH_AS(read_execution_trace_string(""), doctest::Contains("empty"), input_error);
    CHECK_THROWS_WITH_AS(read_execution_trace_string("{\"nodes\":[{\"id\":1,"),
                         doctest::Contains("invalid JSON"), input_error);
    CHECK_THROWS_WITH_AS(read_execution_trace_string("\x01\x02garbage"),
                         doctest::Contains("invalid JSON"), input_error);
    CHECK_THROWS_WITH_AS(read_execution_trace_string(R"({"traceEvents":[]})"),
                         doctest::Contains("not an execution trace"), input_error);
    CHECK_THROWS_WITH_AS(read_execution_trace_string(R"({"nodes":[{"name":"x"}]})"),
                         doctest::Contains("no integer \"id\""), input_error);
    CHECK_THROWS_WITH_AS(read_execution_trace_string(R"({"nodes":[{"id":1,"name":5}]})"),
                         doctest::Contains("\"name\" is not a string"), input_error);
    CHECK_THROWS_WITH_AS(
        read_execution_trace_string(R"({"nodes":[{"id":1,"name":"x","rf_id":"a"}]})"),
        doctest::Contains("\"rf_id\" is not an integer"), input_error);
    CHECK_THROWS_WITH_AS(read_execution_trace_string(R"([1,2])"),
                         doctest::Contains("not an object"), input_error);
  }

  TEST_CASE("execution trace schema 1.1: node fields in attrs, the top level first") {
    const execution_trace_file et =
        read_execution_trace_string(R"({"schema":"1.1.1-chakra.0.0.4","nodes":[
      {"id":2,"name":"[pytorch|profiler|execution_trace|thread]","ctrl_deps":1,"attrs":[{"name":"tid","type":"uint64","value":1}]},
      {"id":3,"name":"aten::mm","ctrl_deps":2,"attrs":[{"name":"rf_id","type":"uint64","value":7},
        {"name":"seq_id","type":"int64","value":-1},{"name":"tid","type":"uint64","value":1},
        {"name":"fw_tid","type":"uint64","value":0},{"name":"scope","type":"uint64","value":0},
        {"name":"op_schema","type":"string","value":"aten::mm(Tensor self, Tensor mat2) -> Tensor"}, 5]},
      {"id":4,"name":"aten::add","rf_id":9,"ctrl_deps":2,"attrs":[{"name":"rf_id","type":"uint64","value":8}]}]})");
    REQUIRE(et.nodes.size() == 3);
    CHECK(et.nodes[0].synthetic);
    CHECK(et.nodes[1].rf_id == 7);
    CHECK(et.nodes[1].parent == 2);
    CHECK(et.nodes[1].tid == 1);
    CHECK(et.nodes[1].scope == 0);
    CHECK(et.nodes[1].op_schema == "aten::mm(Tensor self, Tensor mat2) -> Tensor");
    CHECK(et.nodes[1].fw_parent == -1);  // absent everywhere: the default
    CHECK(et.nodes[2].rf_id == 9);       // the top level wins
    CHECK_THROWS_WITH_AS(
        read_execution_trace_string(
            R"({"nodes":[{"id":1,"name":"a","attrs":[{"name":"rf_id","type":"string","value":"x"}]}]})"),
        doctest::Contains("\"rf_id\" is not an integer"), input_error);
  }

  TEST_CASE("et link: exact order, an inserted host op and a missing one") {
    const execution_trace_file et =
        read_execution_trace_string(et_json({{"A", 1}, {"B", 1}, {"C", 1}, {"D", 1}, {"E", 1}}));
    table_builder b;
    b.op("A", 0, 10).op("X", 20, 30).op("B", 40, 50).op("C", 60, 70).op("E", 80, 90);
    event_table t = b.take();
    analyze(t);
    const et_link_result r = link_execution_trace(et, t);
    CHECK(r.method == "order");
    CHECK(matched(et, t, r) == std::vector<std::string>{"A@0", "B@40", "C@60", "-", "E@80"});
    REQUIRE(r.unmatched.size() == 1);
    CHECK(et.nodes[r.unmatched[0].node].name == "D");
    CHECK(r.unmatched[0].reason.find("no host op named \"D\"") == 0);
    CHECK(r.matched == 4);
  }

  TEST_CASE("et link: a shifted order (warm-up ops first), several threads") {
    const execution_trace_file et = read_execution_trace_string(
        et_json({{"fwd", 1}, {"mm", 1}, {"relu", 1}, {"bwd", 2}, {"mm_bwd", 2}}));
    table_builder b;
    b.op("warmup", 0, 5, 501).op("mm", 6, 8, 501).op("relu", 9, 10, 501);  // before the traced part
    b.op("fwd", 20, 50, 501).op("mm", 21, 30, 501).op("relu", 31, 40, 501);
    b.op("bwd", 60, 90, 777).op("mm_bwd", 61, 80, 777);
    event_table t = b.take();
    analyze(t);
    const et_link_result r = link_execution_trace(et, t);
    CHECK(matched(et, t, r) ==
          std::vector<std::string>{"fwd@20", "mm@21", "relu@31", "bwd@60", "mm_bwd@61"});
    CHECK(r.unmatched.empty());
  }

  TEST_CASE("et link: the iteration named in the execution trace") {
    const execution_trace_file et =
        read_execution_trace_string(et_json({{"ProfilerStep#2", 1}, {"op", 1}, {"op", 1}}));
    table_builder b;
    b.annotation("ProfilerStep#1", 0, 100).op("op", 10, 20).op("op", 30, 40);
    b.annotation("ProfilerStep#2", 200, 300).op("op", 210, 220).op("op", 230, 240);
    event_table t = b.take();
    analyze(t);
    const et_link_result r = link_execution_trace(et, t);
    REQUIRE(r.iteration != no_event);
    CHECK(t.name(r.iteration) == "ProfilerStep#2");
    CHECK(matched(et, t, r) == std::vector<std::string>{"ProfilerStep#2@200", "op@210", "op@230"});
  }

  TEST_CASE("et link: by record-function id, whatever the order") {
    const execution_trace_file et =
        read_execution_trace_string(et_json({{"B", 1}, {"A", 1}, {"C", 1}}, {12, 11, 99}));
    table_builder b;
    b.op("A", 0, 10).op("B", 20, 30);
    event_table t = b.take();
    t.add_int_attr(t.events[0], t.strings.intern("Record function id"), 11);
    t.add_int_attr(t.events[1], t.strings.intern("Record function id"), 12);
    analyze(t);
    const et_link_result r = link_execution_trace(et, t);
    CHECK(r.method == "rf_id");
    CHECK(matched(et, t, r) == std::vector<std::string>{"B@20", "A@0", "-"});
    REQUIRE(r.unmatched.size() == 1);
    CHECK(r.unmatched[0].reason == "no host op has Record function id 99");
  }

  TEST_CASE("et link: device ops by correlation, by external id, by interval, the enhanced trace") {
    const execution_trace_file et = read_execution_trace_string(
        et_json({{"aten::mm", 1}, {"aten::add", 1}, {"aten::copy_", 1}}));
    table_builder b;
    b.op("aten::mm", 0, 100).op_correlation(41);  // 0
    b.device("cudaLaunchKernel", activity_type::cuda_runtime, 10, 20, 1, 1)
        .correlation(5)
        .external_id(41);
    b.device("gemm", activity_type::kernel, 150, 180, 7, 0).correlation(5);  // 2: correlation
    b.op("aten::add", 200, 300).op_correlation(42);                          // 3
    b.device("cudaLaunchKernel", activity_type::cuda_runtime, 210, 220, 1, 1)
        .correlation(6)
        .flow(6, true);
    b.device("add_kernel", activity_type::kernel, 320, 330, 7, 0)
        .flow(6, false);                               // 5: flow, no ext id
    b.op("aten::copy_", 400, 500).op_correlation(43);  // 6
    b.device("Memcpy HtoD", activity_type::gpu_memcpy, 510, 520, 8, 0)
        .external_id(43);  // 7: external id
    b.device("lost_kernel", activity_type::kernel, 600, 610, 7, 0).correlation(999);  // 8: orphan
    event_table t = b.take();
    analyze(t);
    const et_link_result r = link_execution_trace(et, t);
    CHECK(r.device_total == 4);
    CHECK(r.orphaned == 1);
    REQUIRE(r.device_ops.size() == 3);
    std::map<std::string, std::pair<std::string, attach_by>> got;
    for (const et_device_op& d : r.device_ops)
      got[std::string(t.name(d.device))] = {et.nodes[d.node].name, d.how};
    CHECK(got["gemm"] == std::make_pair(std::string("aten::mm"), attach_by::correlation));
    CHECK(got["add_kernel"] == std::make_pair(std::string("aten::add"), attach_by::interval));
    CHECK(got["Memcpy HtoD"] == std::make_pair(std::string("aten::copy_"), attach_by::external_id));
    CHECK(r.by[0] == 1);
    CHECK(r.by[1] == 1);
    CHECK(r.by[2] == 1);
    // The enhanced trace: ts/dur on matched nodes (µs), device nodes with fresh ids above the
    // largest (12), their host node's inputs, category and stream.
    const std::string plus = enhanced_execution_trace(et, t, r);
    const execution_trace_file back = read_execution_trace_string(plus);
    REQUIRE(back.nodes.size() == 2 + 3 + 3);
    CHECK(back.node_json[2].ends_with(R"(,"ts":0,"dur":0.1})"));
    CHECK(back.node_json[3].ends_with(R"(,"ts":0.2,"dur":0.1})"));
    std::vector<std::int64_t> ids, parents;
    for (std::size_t k = 5; k < back.nodes.size(); ++k) {
      ids.push_back(back.nodes[k].id);
      parents.push_back(back.nodes[k].parent);
      CHECK(back.io_json[k] == et.io_json[static_cast<std::size_t>(back.nodes[k].parent - 10 + 2)]);
    }
    CHECK(ids == std::vector<std::int64_t>{13, 14, 15});
    CHECK(parents == std::vector<std::int64_t>{10, 11, 12});
    CHECK(plus.find(R"("name":"gemm","id":13,"parent":10)") != std::string::npos);
    CHECK(plus.find(
              R"("cat":"kernel","stream":7,"ts":0.15,"dur":0.03,"attached_by":"correlation"})") !=
          std::string::npos);
    CHECK(plus.find(R"("cat":"gpu_memcpy","stream":8)") != std::string::npos);
  }

  TEST_CASE("et link: the real pair (PyTorch 2.x execution trace and its Kineto trace)") {
    const execution_trace_file et = read_execution_trace_file(
        tmtest::data_path("kineto/execution_trace_benchmark_simple_add_et.json.gz"));
    event_table t = read_chrome_trace_file(
        tmtest::data_path("kineto/execution_trace_benchmark_simple_add_trace.json.gz"));
    analyze(t);
    const et_link_result r = link_execution_trace(et, t);
    CHECK(r.op_nodes == 36);
    CHECK(r.matched == 36);
    // Every matched node's host op has its name and thread order.
    for (std::size_t k = 0; k < et.nodes.size(); ++k)
      if (r.node_host[k] != no_event) CHECK(t.name(r.node_host[k]) == et.nodes[k].name);
    // The four kernels: the two uniform_ kernels under the two aten::uniform_ nodes (8, 13), the
    // two add kernels under the two aten::add nodes (36, 58). The launches' External ids here
    // are CUPTI correlation ids, not op ids, so the interval decides.
    CHECK(r.device_total == 4);
    std::vector<std::int64_t> parents;
    for (const et_device_op& d : r.device_ops) parents.push_back(et.nodes[d.node].id);
    std::sort(parents.begin(), parents.end());
    CHECK(parents == std::vector<std::int64_t>{8, 13, 36, 58});
    const std::string plus = enhanced_execution_trace(et, t, r);
    CHECK(plus.find(R"("name":"aten::add","id":36,)") != std::string::npos);
    CHECK(plus.find(R"(,"ts":1689360808135120,"dur":199})") !=
          std::string::npos);  // as the host trace states
  }

  TEST_CASE(
      "et link: every PyTorch 1.13 execution trace with its host events, as the oracle joins "
      "them") {
    std::size_t total = 0;
    for (const char* w : tmtest::oracle_workloads) {
      INFO(std::string(w));
      tmtest::json_doc doc(tmtest::data_path(std::string("pytorch-1.13/") + w + ".oracle.json"));
      const execution_trace_file et = read_execution_trace_file(
          tmtest::data_path(std::string("pytorch-1.13/") + w + ".execution_trace.json"));
      event_table t = read_chrome_trace_file(
          tmtest::data_path(std::string("pytorch-1.13-kineto/") + w + ".kineto.json"));
      analyze(t);
      const et_link_result r = link_execution_trace(et, t);
      CHECK(r.method == "order");
      CHECK(r.unmatched.empty());
      // The oracle's join: execution-trace id -> PyTorch's tree node ("Ev Idx" in the host trace).
      std::map<std::int64_t, std::int64_t> want;
      for (simdjson::dom::element j :
           simdjson::dom::array(doc.root["execution_trace"]["derived_join"]))
        want[int64_t(j["eg_id"])] = int64_t(j["tree_node"]);
      std::size_t checked = 0;
      for (std::size_t k = 0; k < et.nodes.size(); ++k) {
        if (et.nodes[k].synthetic) continue;
        REQUIRE(r.node_host[k] != no_event);
        std::int64_t ev = -1;
        for (const attribute& a : t.attrs_of(t.events[r.node_host[k]]))
          if (t.strings.view(a.key) == "Ev Idx") ev = a.i;
        CHECK(want.at(et.nodes[k].id) == ev);
        ++checked;
      }
      CHECK(checked == want.size());
      total += checked;
    }
    MESSAGE("execution-trace op nodes joined as the oracle joins them: " << total);
  }

  TEST_CASE("et link: the aligner recovers random sparse edits exactly (property)") {
    std::mt19937 rng(8);
    for (int round = 0; round < 200; ++round) {
      const std::size_t n = 50 + rng() % 400;
      std::vector<std::uint32_t> a(n);
      for (auto& x : a) x = static_cast<std::uint32_t>(rng() % 20);  // a few names, many repeats
      // The host side: a copy with ops removed and foreign ops inserted, edits far apart.
      std::vector<std::uint32_t> b;
      std::vector<std::pair<std::size_t, std::size_t>> want;
      std::size_t next_edit = 5 + rng() % 40;
      for (std::size_t k = 0; k < n; ++k) {
        if (k == next_edit) {
          next_edit += 40 + rng() % 40;
          if (rng() % 2) continue;  // missing on the host
          for (auto m = static_cast<std::uint32_t>(rng() % 3 + 1); m > 0; --m)
            b.push_back(1000 + m);  // inserted
        }
        want.emplace_back(k, b.size());
        b.push_back(a[k]);
      }
      // Against brute force: a common subsequence (equal names, both sides increasing) as long
      // as the longest one (dynamic programming); with sparse edits nothing is lost.
      const auto got = detail::align_by_name(a, b, 32);
      for (std::size_t k = 0; k < got.size(); ++k) {
        REQUIRE(a[got[k].first] == b[got[k].second]);
        if (k > 0) REQUIRE((got[k - 1].first < got[k].first && got[k - 1].second < got[k].second));
      }
      std::vector<std::vector<std::uint16_t>> lcs(a.size() + 1,
                                                  std::vector<std::uint16_t>(b.size() + 1, 0));
      for (std::size_t x = a.size(); x-- > 0;)
        for (std::size_t y = b.size(); y-- > 0;)
          lcs[x][y] = a[x] == b[y] ? static_cast<std::uint16_t>(lcs[x + 1][y + 1] + 1)
                                   : std::max(lcs[x + 1][y], lcs[x][y + 1]);
      CHECK(got.size() == lcs[0][0]);
      CHECK(got.size() == want.size());
    }
  }
}
