// The `tracemodel` program, run as a user runs it, against PyTorch's own answers.
#include <doctest/doctest.h>

#include <limits>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include <tracemodel/algo/pytorch_patterns.hpp>
#include <tracemodel/formats/chrome_trace_reader.hpp>
#include <tracemodel/formats/execution_trace.hpp>

#include "../support/crash_child.hpp"
#include "../support/oracle.hpp"

using namespace tracemodel;

namespace {

struct run_result {
  int status = -1;
  std::string out;
};

/// Runs the program with `args` (stderr folded into stdout when `with_stderr`).
run_result run(const std::string& args, bool with_stderr = false) {
  const std::string cmd =
      std::string("\"") + TRACEMODEL_CLI + "\" " + args + (with_stderr ? " 2>&1" : " 2>/dev/null");
  std::FILE* p = ::popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  run_result r;
  char buf[1 << 16];
  std::size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int st = ::pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

std::string quoted(const std::string& path) { return "\"" + path + "\""; }

using event_key = std::tuple<std::string, std::string, std::int64_t>;  // name, tid, ts_ns

/// A tid as text, from the program's JSON (a number or a string).
std::string tid_text(simdjson::dom::element tid) {
  if (tid.is_string()) return std::string(std::string_view(tid));
  return std::to_string(int64_t(tid));
}

struct cli_tree {
  std::vector<event_key> events;
  std::vector<std::int64_t> parents;  // -1: none
};

/// The rows of `tracemodel stats --json ARGS` (parsed by `p`, which owns them).
simdjson::dom::array stats_rows(simdjson::dom::parser& p, const std::string& args) {
  const run_result r = run("stats --json " + args);
  REQUIRE(r.status == 0);
  simdjson::dom::element root;
  REQUIRE_FALSE(p.parse(r.out).get(root));
  return root["rows"];
}

cli_tree tree_json(const std::string& path) {
  const run_result r = run("tree --json " + quoted(path));
  REQUIRE(r.status == 0);
  simdjson::dom::parser p;
  simdjson::dom::element root;
  REQUIRE_FALSE(p.parse(r.out).get(root));
  cli_tree t;
  std::int64_t id = 0;
  for (simdjson::dom::element e : simdjson::dom::array(root["events"])) {
    REQUIRE(int64_t(e["id"]) == id++);
    t.events.emplace_back(std::string(std::string_view(e["name"])), tid_text(e["tid"]),
                          int64_t(e["ts_ns"]));
    simdjson::dom::element parent = e["parent"];
    t.parents.push_back(parent.is_null() ? -1 : int64_t(parent));
    CHECK(e["kind"].is_string());
    CHECK(int64_t(e["dur_ns"]) >= 0);
  }
  return t;
}

}  // namespace

TEST_SUITE("tools") {
  TEST_CASE(
      "tracemodel tree --json: PyTorch's parent for every event of the Kineto-format oracles") {
    for (const char* w : tmtest::oracle_workloads) {
      INFO(w);
      tmtest::json_doc doc(tmtest::data_path(std::string("pytorch-1.13/") + w + ".oracle.json"));
      const cli_tree t =
          tree_json(tmtest::data_path(std::string("pytorch-1.13-kineto/") + w + ".kineto.json"));
      // Match events by name, thread and start.
      std::multimap<event_key, std::int64_t> ours;
      for (std::size_t i = 0; i < t.events.size(); ++i)
        ours.emplace(t.events[i], static_cast<std::int64_t>(i));
      std::vector<std::int64_t> node_of(t.events.size(), -1), ours_of;
      std::int64_t n = 0;
      for (simdjson::dom::element node : simdjson::dom::array(doc.root["event_tree"]["nodes"])) {
        const event_key k{std::string(std::string_view(node["name"])), tid_text(node["tid"]),
                          int64_t(node["start_ns"])};
        auto it = ours.find(k);
        REQUIRE(it != ours.end());
        node_of[static_cast<std::size_t>(it->second)] = n++;
        ours_of.push_back(it->second);
        ours.erase(it);
      }
      REQUIRE(static_cast<std::size_t>(n) == t.events.size());
      std::size_t mismatches = 0;
      std::int64_t k = 0;
      for (simdjson::dom::element node : simdjson::dom::array(doc.root["event_tree"]["nodes"])) {
        simdjson::dom::element parent = node["parent"];
        const std::int64_t want =
            parent.is_null() ? -1 : ours_of[static_cast<std::size_t>(int64_t(parent))];
        mismatches +=
            t.parents[static_cast<std::size_t>(ours_of[static_cast<std::size_t>(k++)])] != want ? 1
                                                                                                : 0;
      }
      CHECK(mismatches == 0);
    }
  }

  TEST_CASE(
      "tracemodel tree --json: the whole-microsecond export, with its ambiguities explained") {
    // PyTorch 1.13's own export (a bare array, whole microseconds, no Python events). Every
    // difference from the oracle must be one of two kinds:
    //  - touching: at whole-microsecond resolution an event ends exactly when the next starts,
    //    so PyTorch's rule (close only ends strictly before a start) keeps it open;
    //  - dropped frames: the oracle nests the event under a Python call this export lacks (a
    //    record_function scope entered from Python is a child of `_record_function_enter`).
    std::size_t touching = 0, dropped = 0, events = 0;
    for (const char* w : tmtest::oracle_workloads) {
      INFO(w);
      tmtest::json_doc doc(tmtest::data_path(std::string("pytorch-1.13/") + w + ".oracle.json"));
      simdjson::dom::array nodes = doc.root["event_tree"]["nodes"];
      std::map<std::uint64_t, std::int64_t> node_by_corr;
      for (simdjson::dom::element k : simdjson::dom::array(doc.root["kineto_events"]))
        if (!k["tree_node"].is_null())
          node_by_corr[uint64_t(k["correlation_id"])] = int64_t(k["tree_node"]);
      std::vector<simdjson::dom::element> node_vec(nodes.begin(), nodes.end());
      // The export's i-th event is the i-th x_event; it is sorted by ts, so the reader keeps it.
      std::vector<std::int64_t> node_of_x, dur_ns;  // the export's dur: whole microseconds
      std::map<std::int64_t, std::int64_t> x_of_node;
      for (simdjson::dom::element x : simdjson::dom::array(doc.root["chrome_trace"]["x_events"])) {
        const std::int64_t node = node_by_corr.at(uint64_t(x["correlation_id"]));
        x_of_node[node] = static_cast<std::int64_t>(node_of_x.size());
        node_of_x.push_back(node);
        dur_ns.push_back(int64_t(x["dur"]) * 1000);
      }
      const cli_tree t =
          tree_json(tmtest::data_path(std::string("pytorch-1.13/") + w + ".chrome_trace.json"));
      REQUIRE(t.events.size() == node_of_x.size());
      for (std::size_t i = 0; i < t.events.size(); ++i) {
        ++events;
        const simdjson::dom::element node = node_vec[static_cast<std::size_t>(node_of_x[i])];
        REQUIRE(std::get<0>(t.events[i]) == std::string_view(node["name"]));
        // The nearest ancestor the export has, and whether Python frames lie on the way.
        bool through_python = false;
        simdjson::dom::element p = node["parent"];
        std::int64_t want = -1;
        while (!p.is_null()) {
          const std::int64_t pn = int64_t(p);
          if (auto it = x_of_node.find(pn); it != x_of_node.end()) {
            want = it->second;
            break;
          }
          const std::string_view tag = node_vec[static_cast<std::size_t>(pn)]["tag"];
          through_python = through_python || tag == "PyCall" || tag == "PyCCall";
          p = node_vec[static_cast<std::size_t>(pn)]["parent"];
        }
        const std::int64_t got = t.parents[i];
        if (got == want) continue;
        // Touching: our parent (at whole microseconds) ends exactly when this event starts.
        const auto g = static_cast<std::size_t>(got);
        bool explained =
            got >= 0 && std::get<2>(t.events[g]) + dur_ns[g] == std::get<2>(t.events[i]);
        touching += explained ? 1 : 0;
        if (!explained && through_python) {
          ++dropped;
          explained = true;
        }
        CHECK(explained);
      }
    }
    CHECK(events == 1677);
    CHECK(touching == 4);
    CHECK(dropped == 141);
  }

  TEST_CASE("tracemodel links --json: every fwdbwd and ac2g flow of the real traces") {
    const char* files[] = {
        "amd_trace_mi250_minitoy_train_ROCm6_2_kineto.json.gz",
        "critical_path_alexnet_benchmark_result_2869224_1695835535_trace.json.gz",
        "critical_path_cuda_event_sync_event_sync_trace.json.gz",
        "execution_trace_benchmark_simple_add_trace.json.gz",
        "triton_example_triton_example.json.gz",
        "call_stack_backward_thread.json",
        "cpu_only_rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz"};
    std::size_t fwdbwd = 0, ac2g = 0;
    for (const char* f : files) {
      INFO(f);
      const std::string path = tmtest::data_path(std::string("kineto/") + f);
      // What the file states: its flows, bound to their events by the reader.
      event_table t = read_chrome_trace_file(path);
      auto key = [&t](event_index i) {
        const thread_key tid = t.events[i].tid;
        return event_key{std::string(t.name(i)),
                         event_table::is_string_key(tid)
                             ? std::string(t.key_label(tid))
                             : std::to_string(static_cast<std::int64_t>(tid)),
                         t.events[i].start_ns};
      };
      std::set<std::pair<event_key, event_key>> want_fb, want_dev;
      for (const flow_link& l : t.links) want_fb.emplace(key(l.from), key(l.to));
      std::map<std::uint64_t, event_index> starts;
      for (std::size_t i = 0; i < t.size(); ++i)
        if (const auto* d = t.events[i].get_if<event_kind::device_activity>())
          if (d->flow_type == flow_kind::async_cpu_gpu && d->flow_start)
            starts[d->flow_id] = static_cast<event_index>(i);
      for (std::size_t i = 0; i < t.size(); ++i)
        if (const auto* d = t.events[i].get_if<event_kind::device_activity>())
          if (d->flow_type == flow_kind::async_cpu_gpu && !d->flow_start &&
              starts.count(d->flow_id))
            want_dev.emplace(key(starts[d->flow_id]), key(static_cast<event_index>(i)));
      // What the program derives from the events' args.
      const run_result r = run("links --json " + quoted(path));
      REQUIRE(r.status == 0);
      simdjson::dom::parser p;
      simdjson::dom::element root;
      REQUIRE_FALSE(p.parse(r.out).get(root));
      std::set<std::pair<event_key, event_key>> got_fb, got_dev;
      auto endpoint = [](simdjson::dom::element e) {
        return event_key{std::string(std::string_view(e["name"])), tid_text(e["tid"]),
                         int64_t(e["ts_ns"])};
      };
      for (simdjson::dom::element l : simdjson::dom::array(root["links"])) {
        const std::string_view type = l["type"];
        (type == "fwdbwd" ? got_fb : got_dev).emplace(endpoint(l["from"]), endpoint(l["to"]));
      }
      CHECK(got_fb == want_fb);
      for (const auto& pair : want_dev) CHECK(got_dev.count(pair) == 1);
      fwdbwd += want_fb.size();
      ac2g += want_dev.size();
    }
    CHECK(fwdbwd == 4);
    CHECK(ac2g == 167);
  }

  TEST_CASE("tracemodel patterns --json: PyTorch's matches on every Kineto-format oracle") {
    // Per pattern: the events PyTorch's matcher found (name, thread, start ns), in its order,
    // and the same skip decision, for every pattern whose rule depends only on the trace.
    // FP32 MatMul is the exception by design: these traces show no device that supports TF32,
    // so it is skipped, where PyTorch 1.13 fires on CPU `aten::mm`.
    std::size_t compared = 0, matched_events = 0;
    for (const char* w : tmtest::oracle_workloads) {
      INFO(std::string(w));
      tmtest::json_doc doc(tmtest::data_path(std::string("pytorch-1.13/") + w + ".oracle.json"));
      const run_result r =
          run("patterns --json " +
              quoted(tmtest::data_path(std::string("pytorch-1.13-kineto/") + w + ".kineto.json")));
      REQUIRE(r.status == 0);
      simdjson::dom::parser p;
      simdjson::dom::element root;
      REQUIRE_FALSE(p.parse(r.out).get(root));
      std::map<std::string, simdjson::dom::element> ours;
      std::vector<std::string> order;
      for (simdjson::dom::element e : simdjson::dom::array(root["patterns"])) {
        order.emplace_back(std::string_view(e["name"]));
        ours.emplace(order.back(), e);
      }
      CHECK(order ==
            std::vector<std::string>{"Extra CUDA Copy Pattern", "For Loop Indexing Pattern",
                                     "FP32 MatMul Pattern", "Optimizer Single Tensor Pattern",
                                     "Synchronized DataLoader Pattern",
                                     "Gradient Set To Zero Instead of None Pattern",
                                     "Enabling Bias in Conv2d Followed By BatchNorm Pattern",
                                     "Matrix Multiplication Dimension Not Aligned Pattern"});
      for (auto [cls, pat] : simdjson::dom::object(doc.root["anti_patterns"]["patterns"])) {
        const std::string name{std::string_view(pat["name"])};
        INFO(name);
        REQUIRE(ours.count(name) == 1);
        simdjson::dom::element mine = ours[name];
        simdjson::dom::element skipped;
        const bool we_skip = !mine["skipped"].get(skipped);
        if (cls == "FP32MatMulPattern") {
          CHECK(we_skip);
          const std::string_view why = skipped;
          CHECK((why == "needs a device that supports TF32; the trace shows none" ||
                 (why == "needs input shapes; the trace has none" && bool(pat["skip"]))));
          continue;
        }
        CHECK(we_skip == bool(pat["skip"]));
        std::vector<event_key> want, got;
        simdjson::dom::array m;
        if (!pat["matched_events"].get_array().get(m))
          for (simdjson::dom::element e : m)
            want.emplace_back(std::string(std::string_view(e["name"])), tid_text(e["tid"]),
                              int64_t(e["start_ns"]));
        if (!we_skip)
          for (simdjson::dom::element e : simdjson::dom::array(mine["matches"])) {
            got.emplace_back(std::string(std::string_view(e["name"])), tid_text(e["tid"]),
                             int64_t(e["ts_ns"]));
            CHECK_FALSE(std::string_view(e["location"]).empty());
          }
        CHECK(got == want);
        ++compared;
        matched_events += want.size();
      }
    }
    CHECK(compared == 9 * 7);
    CHECK(matched_events == 5);  // one each: for-loop, optimizer, data loader, zero_grad, conv2d
  }

  TEST_CASE("tracemodel patterns: the report has PyTorch's layout and summary lines") {
    // conv_bn_infer: PyTorch's report has one match; ours has the same lines except our own
    // description and the location (the user frame rather than the line it was executing).
    tmtest::json_doc doc(tmtest::data_path("pytorch-1.13/conv_bn_infer.oracle.json"));
    const std::string_view theirs = doc.root["anti_patterns"]["report_all_anti_patterns"]["stdout"];
    const run_result r = run(
        "patterns " + quoted(tmtest::data_path("pytorch-1.13-kineto/conv_bn_infer.kineto.json")));
    REQUIRE(r.status == 0);
    auto lines = [](std::string_view s) {
      std::vector<std::string> out;
      while (!s.empty()) {
        const std::size_t nl = s.find('\n');
        out.emplace_back(s.substr(0, nl));
        s = nl == std::string_view::npos ? std::string_view{} : s.substr(nl + 1);
      }
      return out;
    };
    const auto a = lines(theirs), b = lines(r.out);
    REQUIRE(a.size() == 7);
    REQUIRE(b.size() == 7);
    for (const std::size_t k : {0u, 1u, 4u, 5u, 6u}) CHECK(a[k] == b[k]);
    CHECK(b[2] ==
          std::string(tracemodel::conv2d_bias_followed_by_batch_norm_pattern::description()));
    CHECK(b[3] == "[Source Code Location] workloads.py(154): conv_bn_infer_body");
    CHECK(a[3] == "[Source Code Location] workloads.py:157");
    // Options: a name pattern, the framework prefix, for-loop indexing off; bad usage.
    const run_result named = run(
        "patterns --json --name \"^aten::conv2d$\" --no-for-loop --framework-prefix workloads " +
        quoted(tmtest::data_path("pytorch-1.13-kineto/conv_bn_infer.kineto.json")));
    REQUIRE(named.status == 0);
    CHECK(
        named.out.find(
            "{\"name\":\"For Loop Indexing Pattern\",\"skipped\":\"disabled by configuration\"}") !=
        std::string::npos);
    CHECK(named.out.find(
              "{\"name\":\"^aten::conv2d$\",\"matches\":[\n{\"name\":\"aten::conv2d\",\"tid\":1,"
              "\"ts_ns\":1795325611861583102,\"location\":\"torch/nn/modules/conv.py(454): "
              "_conv_forward\"}]}") != std::string::npos);
    CHECK(run("patterns --name \"(\" x.json").status == 2);
  }

  TEST_CASE("tracemodel flame: writes a standalone SVG, -o is required") {
    const std::string svg = std::string(TRACEMODEL_TEST_BINARY_DIR) + "/flame_cli_test.svg";
    std::remove(svg.c_str());
    const run_result r =
        run("flame " + quoted(tmtest::data_path("pytorch-1.13-kineto/mlp_train.kineto.json")) +
            " -o " + quoted(svg) + " --width 800");
    REQUIRE(r.status == 0);
    CHECK(r.out.find("wrote ") == 0);
    std::FILE* f = std::fopen(svg.c_str(), "rb");
    REQUIRE(f != nullptr);
    std::string text;
    char buf[4096];
    std::size_t n = 0;
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, n);
    std::fclose(f);
    CHECK(text.find("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"820.00\"") !=
          std::string::npos);
    CHECK(text.ends_with("</svg>\n"));
    CHECK(run("flame " + quoted(tmtest::data_path("pytorch-1.13-kineto/mlp_train.kineto.json")))
              .status == 2);
    CHECK(run("flame x.json -o y.svg --width 5").status == 2);
  }

  TEST_CASE("tracemodel link: the real execution-trace pair, summary, JSON, errors") {
    const std::string out = std::string(TRACEMODEL_TEST_BINARY_DIR) + "/link_cli_test.json";
    const std::string et =
        quoted(tmtest::data_path("kineto/execution_trace_benchmark_simple_add_et.json.gz"));
    const std::string trace =
        quoted(tmtest::data_path("kineto/execution_trace_benchmark_simple_add_trace.json.gz"));
    const run_result text = run("link --et " + et + " --trace " + trace + " -o " + quoted(out));
    REQUIRE(text.status == 0);
    CHECK(text.out.find("matched 36 of 36 execution-trace ops by order\n") == 0);
    CHECK(text.out.find("device ops: 4 attached (0 by correlation, 0 by external id, 4 by "
                        "interval), 0 orphaned") != std::string::npos);
    const run_result js =
        run("link --json --et " + et + " --trace " + trace + " -o " + quoted(out));
    REQUIRE(js.status == 0);
    simdjson::dom::parser p;
    simdjson::dom::element root;
    REQUIRE_FALSE(p.parse(js.out).get(root));
    CHECK(std::string_view(root["method"]) == "order");
    CHECK(int64_t(root["matched"]) == 36);
    CHECK(simdjson::dom::array(root["unmatched"]).size() == 0);
    CHECK(simdjson::dom::array(root["matches"]).size() == 36);
    CHECK(int64_t(root["device_ops"]["attached"]) == 4);
    CHECK(int64_t(root["device_ops"]["orphaned"]) == 0);
    // The output is an execution trace again.
    const tracemodel::execution_trace back = tracemodel::read_execution_trace_file(out);
    CHECK(back.nodes.size() == 38 + 4);
    // Errors: a bad execution trace is a bad input file; missing options are bad usage.
    CHECK(
        run("link --et " +
            quoted(tmtest::data_path("kineto/execution_trace_benchmark_simple_add_trace.json.gz")) +
            " --trace " + trace + " -o " + quoted(out))
            .status == 1);
    CHECK(run("link --et " + et + " --trace " + trace).status == 2);
    CHECK(run("link --trace " + trace + " -o x.json").status == 2);
  }

  TEST_CASE("tracemodel stats --json: rows with exact totals") {
    simdjson::dom::parser p;
    simdjson::dom::array rows =
        stats_rows(p, "--sort count --top 3 " +
                          quoted(tmtest::data_path("pytorch-1.13-kineto/mlp_train.kineto.json")));
    REQUIRE(rows.size() == 3);
    simdjson::dom::element first = rows.at(0);
    CHECK(std::string_view(first["key"]) == "aten::as_strided");
    CHECK(int64_t(first["count"]) == 22);
    // The total is the sum of the durations PyTorch recorded.
    tmtest::json_doc doc(tmtest::data_path("pytorch-1.13/mlp_train.oracle.json"));
    std::int64_t total = 0;
    for (simdjson::dom::element n : simdjson::dom::array(doc.root["event_tree"]["nodes"]))
      if (std::string_view(n["name"]) == "aten::as_strided") total += int64_t(n["duration_ns"]);
    CHECK(int64_t(first["total_ns"]) == total);
    CHECK(int64_t(first["self_ns"]) <= total);
  }

  TEST_CASE("tracemodel: - reads the trace from standard input, gzip too") {
    for (const char* name :
         {"pytorch-1.13-kineto/mlp_train.kineto.json", "h100/cupti_kernels.json.gz"}) {
      CAPTURE(name);
      const std::string path = quoted(tmtest::data_path(name));
      const run_result from_file = run("stats --json " + path);
      const run_result from_stdin = run("stats --json - < " + path);
      REQUIRE(from_file.status == 0);
      CHECK(from_stdin.status == 0);
      CHECK(from_stdin.out == from_file.out);
      CHECK(from_file.out.find("{\"repairs\":{") == 0);
      CHECK(from_file.out.find("},\"rows\":[\n{\"key\":") != std::string::npos);
    }
    CHECK(run("stats - --bogus").status == 2);
  }

  TEST_CASE("tracemodel convert: to Perfetto and back, and every command reads .pftrace as JSON") {
    const std::filesystem::path dir =
        std::filesystem::path(TRACEMODEL_TEST_BINARY_DIR) / "cli_convert";
    std::filesystem::create_directories(dir);
    // Without what reading the original repaired (its counts belong to that file).
    auto no_repairs = [](std::string s) {
      const std::size_t a = s.find("\"repairs\":{");
      if (a != std::string::npos) s.erase(a, s.find('}', a) + 1 - a);
      return s;
    };
    for (const char* name :
         {"kineto/critical_path_alexnet_benchmark_result_2869224_1695835535_trace.json.gz",
          "pytorch-1.13-kineto/mlp_train.kineto.json", "kineto/trace_compare_base_base.json.gz"}) {
      CAPTURE(name);
      const std::string json = quoted(tmtest::data_path(name));
      const std::string pf = quoted((dir / "t.pftrace").string());
      const std::string back = quoted((dir / "back.json.gz").string());
      REQUIRE(run("convert " + json + " -o " + pf).status == 0);
      REQUIRE(run("convert " + pf + " -o " + back).status == 0);
      for (const char* command : {"stats --json", "tree --json", "links --json", "gpu --json",
                                  "gpu --hta --json", "critical-path --json", "patterns --json"}) {
        CAPTURE(command);
        const run_result want = run(std::string(command) + " " + json);
        REQUIRE(want.status == 0);
        const run_result got = run(std::string(command) + " " + pf);
        CHECK(got.status == 0);
        CHECK(no_repairs(got.out) == no_repairs(want.out));
        CHECK(no_repairs(run(std::string(command) + " " + back).out) == no_repairs(want.out));
      }
      // By content, from standard input too.
      CHECK(no_repairs(run("stats --json - < " + pf).out) ==
            no_repairs(run("stats --json " + json).out));
    }
    const run_result done =
        run("convert " + quoted(tmtest::data_path("pytorch-1.13-kineto/mlp_train.kineto.json")) +
            " -o " + quoted((dir / "m.pftrace.gz").string()) + " --json");
    CHECK(done.status == 0);
    CHECK(done.out.find("\"events\":218") != std::string::npos);
    CHECK(run("convert " + quoted(tmtest::data_path("pytorch-1.13-kineto/mlp_train.kineto.json")))
              .status == 2);  // no -o
    CHECK(run("convert " + quoted(tmtest::data_path("pytorch-1.13-kineto/mlp_train.kineto.json")) +
              " -o out.txt")
              .status == 2);  // a format it does not write
  }

  TEST_CASE("tracemodel recover and dump: a killed recorder's crash file, a running one's") {
    const std::string file = tmtest::crash_temp_path("cli.crash");
    const std::filesystem::path dir =
        std::filesystem::path(TRACEMODEL_TEST_BINARY_DIR) / "cli_recover";
    std::filesystem::create_directories(dir);
    const std::string dumped = (dir / "dumped.json").string();
    const std::string recovered = (dir / "recovered.pftrace").string();
    {
      tmtest::crash_child c(file, "run", 2, "overwrite");
      REQUIRE(c.ready());
      // While it runs: read from the file it maps.
      const run_result d =
          run("dump " + std::to_string(c.pid) + " -o " + quoted(dumped) + " --json");
      CHECK(d.status == 0);
      CHECK(d.out.find("\"pid\":" + std::to_string(c.pid)) != std::string::npos);
      ::kill(c.pid, SIGKILL);
      CHECK(WIFSIGNALED(c.wait()));
    }
    CHECK(run("stats --json " + quoted(dumped)).status == 0);
    const run_result r = run("recover " + quoted(file) + " -o " + quoted(recovered) + " --json");
    REQUIRE(r.status == 0);
    simdjson::dom::parser p;
    simdjson::dom::element root;
    REQUIRE_FALSE(p.parse(r.out).get(root));
    const auto ops = std::uint64_t(root["ops"]);
    CHECK(ops > 0);
    CHECK(std::uint64_t(root["blocks"]) > 0);
    CHECK(std::uint64_t(root["other"]) == 0);  // (the child records ops alone)
    CHECK(std::uint64_t(root["torn_records"]) <= 2);
    CHECK(std::uint64_t(root["lost_blocks"]) == 0);
    // The counts on stderr too.
    const run_result said = run("recover " + quoted(file) + " -o " + quoted(recovered), true);
    CHECK(said.out.find("torn records") != std::string::npos);
    CHECK(said.out.find("lost blocks") != std::string::npos);
    // The trace written holds every op recovered.
    const run_result stats = run("tree --json " + quoted(recovered));
    REQUIRE(stats.status == 0);
    REQUIRE_FALSE(p.parse(stats.out).get(root));
    CHECK(simdjson::dom::array(root["events"]).size() == ops);
    // Errors: a file that is no crash file, a cut header, a process without one, usage.
    const run_result not_crash =
        run("recover " + quoted(tmtest::data_path("pytorch-1.13-kineto/mlp_train.kineto.json")) +
                " -o " + quoted(dumped),
            true);
    CHECK(not_crash.status == 1);
    CHECK(not_crash.out.find("not a tracemodel crash file") != std::string::npos);
    std::filesystem::resize_file(file, 1000);
    CHECK(run("recover " + quoted(file) + " -o " + quoted(dumped)).status == 1);
    const run_result none =
        run("dump " + std::to_string(::getpid()) + " -o " + quoted(dumped), true);
    CHECK(none.status == 1);
    CHECK(none.out.find("maps no crash file") != std::string::npos);
    // A process without a crash file whose own consumer serves dumps asked for by the signal.
    {
      tmtest::crash_child c("-", "serve", 2, "drop");
      REQUIRE(c.ready());
      const std::string asked = (dir / "asked.json").string();
      const run_result d =
          run("dump " + std::to_string(c.pid) + " -o " + quoted(asked) + " --json", true);
      CHECK(d.status == 0);
      CHECK(d.out.find("\"answered_by\":\"consumer\"") != std::string::npos);
      const run_result tree = run("tree --json " + quoted(asked));
      CHECK(tree.status == 0);
      CHECK(tree.out.find("\"name\":\"outer\"") != std::string::npos);
      ::kill(c.pid, SIGKILL);
      c.wait();
    }
    CHECK(run("recover " + quoted(file)).status == 2);  // no -o
    CHECK(run("dump self -o " + quoted(dumped)).status == 2);
    std::filesystem::remove(file);
  }

  TEST_CASE("tracemodel stats: device time columns, sorted by device time") {
    const std::string trace = quoted(tmtest::data_path("h100/torch-2.11_nostack.json.gz"));
    simdjson::dom::parser p;
    simdjson::dom::array rows = stats_rows(p, "--sort self-device --top 4 " + trace);
    REQUIRE(rows.size() == 4);
    // The top op by its own kernels' time, then the activities' rows (no CPU time) beside ops.
    std::int64_t last = std::numeric_limits<std::int64_t>::max();
    bool op_seen = false;
    for (simdjson::dom::element row : rows) {
      const std::int64_t self_device = int64_t(row["self_device_ns"]);
      CHECK(self_device <= last);
      CHECK(self_device > 0);
      CHECK(int64_t(row["device_total_ns"]) >= self_device);
      if (bool(row["on_device"])) {
        CHECK(int64_t(row["total_ns"]) == 0);
      } else {
        op_seen = true;
        CHECK(int64_t(row["total_ns"]) > 0);
      }
      last = self_device;
    }
    CHECK(op_seen);
    CHECK(std::string_view(rows.at(0)["key"]) == "aten::addmm");
    const run_result text = run("stats --sort device --top 3 " + trace);
    CHECK(text.status == 0);
    CHECK(text.out.find("Self device") != std::string::npos);
    CHECK(text.out.find("Self device time total: 382.437us") != std::string::npos);
    CHECK(run("stats --sort cuda " + trace).status == 2);
  }

  TEST_CASE("tracemodel: text output, exit status and messages") {
    const std::string trace = quoted(tmtest::data_path("kineto/call_stack_backward_thread.json"));
    const run_result tree = run("tree --depth 1 " + trace);
    CHECK(tree.status == 0);
    CHECK(tree.out.find("thread 3914/3914\n  ProfilerStep#552") != std::string::npos);
    CHECK(tree.out.find("## backward ##") == std::string::npos);  // below depth 1
    const run_result stats =
        run("stats --group-by shapes --sort self " +
            quoted(tmtest::data_path("pytorch-1.13-kineto/mlp_train.kineto.json")));
    CHECK(stats.status == 0);
    CHECK(stats.out.find("Self time total:") != std::string::npos);
    CHECK(stats.out.find("[[8, 16], [32, 16], [32]]") != std::string::npos);

    const std::string bad_file = std::string(TRACEMODEL_TEST_BINARY_DIR) + "/bad_trace.json";
    std::FILE* f = std::fopen(bad_file.c_str(), "wb");
    std::fputs("{\"traceEvents\": [{\"ph\":\"X\",\"ts\":\"x\"}]}", f);
    std::fclose(f);
    const run_result bad = run("tree " + quoted(bad_file), true);
    CHECK(bad.status == 1);
    CHECK(bad.out.find(bad_file + ": byte 32: ts: expected a number") != std::string::npos);
    CHECK(run("tree " + quoted(bad_file + ".missing")).status == 1);

    CHECK(run("").status == 2);
    CHECK(run("frobnicate x.json").status == 2);
    CHECK(run("tree").status == 2);
    CHECK(run("tree --depth -1 " + trace).status == 2);
    CHECK(run("stats --sort fastest " + trace).status == 2);
    CHECK(run("links --depth 2 " + trace).status == 2);
    const run_result help = run("--help");
    CHECK(help.status == 0);
    CHECK(help.out.find("usage: tracemodel") != std::string::npos);
    // docs/program.md shows the help as the program prints it.
    const std::string page =
        tmtest::read_file(std::string(TRACEMODEL_TEST_DATA_DIR) + "/../../docs/program.md");
    const std::size_t from = page.find("usage: tracemodel");
    const std::size_t to = page.find("2 bad usage.\n", from);
    REQUIRE(to != std::string::npos);
    CHECK(page.substr(from, to + 13 - from) == help.out);
  }

  TEST_CASE("tracemodel: what reading repaired, on stderr and in --json") {
    const std::string nccl =
        quoted(tmtest::data_path("kineto/nccl_parser_config_nccl_data.json.gz"));
    for (const char* command : {"stats", "tree", "links", "patterns", "gpu"}) {
      CAPTURE(command);
      const run_result text = run(std::string(command) + " " + nccl, true);  // stderr too
      CHECK(text.status == 0);
      CHECK(text.out.find("nccl_parser_config_nccl_data.json.gz: repaired 4878: 4878 "
                          "flow_end_without_start\n") != std::string::npos);
      const run_result json = run(std::string(command) + " --json " + nccl);
      CHECK(json.out.find("\"repairs\":{\"flow_end_without_start\":4878}") != std::string::npos);
    }
    // Nothing repaired: nothing said, an empty object.
    const std::string clean =
        quoted(tmtest::data_path("pytorch-1.13-kineto/mlp_train.kineto.json"));
    CHECK(run("stats " + clean, true).out.find("repaired") == std::string::npos);
    CHECK(run("stats --json " + clean).out.starts_with("{\"repairs\":{},"));
  }

  TEST_CASE("tracemodel memory: the peak of PyTorch's allocations, live blocks, files, errors") {
    const std::string trace = tmtest::data_path("pytorch-1.13-kineto/memory_profile.kineto.json");
    // The peak, independently: the running sum of the file's [memory] events in time order.
    std::int64_t peak = 0;
    {
      tmtest::json_doc doc(trace);
      std::vector<std::pair<double, std::int64_t>> allocations;
      for (simdjson::dom::element e : simdjson::dom::array(doc.root["traceEvents"]))
        if (std::string_view(e["name"]) == "[memory]")
          allocations.emplace_back(double(e["ts"]), int64_t(e["args"]["Bytes"]));
      std::stable_sort(allocations.begin(), allocations.end(),
                       [](auto& a, auto& b) { return a.first < b.first; });
      std::int64_t sum = 0;
      for (auto [ts, bytes] : allocations) peak = std::max(peak, sum += bytes);
      REQUIRE(allocations.size() == 36);
    }
    CHECK(peak == 90404);
    const std::string dir = std::string(TRACEMODEL_TEST_BINARY_DIR) + "/memory_cli";
    std::filesystem::create_directories(dir);
    const run_result json = run("memory --json --top 100 " + quoted(trace) + " --export " +
                                quoted(dir + "/m.raw.json.gz") + " -o " + quoted(dir + "/m.html"));
    REQUIRE(json.status == 0);
    simdjson::dom::parser p;
    simdjson::dom::element root;
    REQUIRE_FALSE(p.parse(json.out).get(root));
    CHECK(std::string_view(root["device"]) == "cpu");
    CHECK(int64_t(root["peak"]["bytes"]) == peak);
    CHECK(int64_t(root["peak"]["by_category"]["unknown"]) == peak);  // no tensor addresses
    std::int64_t live = 0;
    for (simdjson::dom::element r : simdjson::dom::array(root["live_at_peak"]))
      live += int64_t(r["bytes"]);
    CHECK(live == peak);
    CHECK(uint64_t(root["live_blocks"]) == 8);
    CHECK(uint64_t(root["timeline"]["samples"]) == 36);
    CHECK(std::filesystem::file_size(dir + "/m.html") < 5'000'000);
    // The exported files read back with the same peak, PyTorch's raw records and its samples.
    const run_result again = run("memory --json " + quoted(dir + "/m.raw.json.gz"));
    REQUIRE(again.status == 0);
    simdjson::dom::parser p2;
    REQUIRE_FALSE(p2.parse(again.out).get(root));
    CHECK(int64_t(root["peak"]["bytes"]) == peak);
    REQUIRE(run("memory " + quoted(trace) + " --export " + quoted(dir + "/m.json")).status == 0);
    const run_result samples = run("memory " + quoted(dir + "/m.json"));
    CHECK(samples.out.find("peak 88.29 Kb (90404 bytes)") != std::string::npos);
    // The text: the peak, every category, the largest block first.
    const run_result text = run("memory --top 3 " + quoted(trace));
    CHECK(text.out.starts_with("memory on cpu: peak 88.29 Kb (90404 bytes)"));
    CHECK(text.out.find("largest blocks live at the peak (3 of 8)") != std::string::npos);
    CHECK(text.out.find("32768  unknown          aten::cat") != std::string::npos);
    // `tracemodel report`: a memory section, its numbers in the page's JSON under "memory_".
    REQUIRE(run("report " + quoted(trace) + " -o " + quoted(dir + "/report.html")).status == 0);
    const std::string report = tmtest::read_file(dir + "/report.html");
    CHECK(report.find("<h2>Memory (rank 0)</h2>") != std::string::npos);
    CHECK(report.find("\"memory_peak\":{\"time_ns\":") != std::string::npos);
    CHECK(report.find("\"bytes\":90404,") != std::string::npos);
    CHECK(report.find("data-check=\"memory_live_at_peak.0.bytes\"") != std::string::npos);
    // Errors: a broken memory timeline file names the byte; an unknown device is a usage error.
    {
      std::FILE* f = std::fopen((dir + "/bad.raw.json").c_str(), "wb");
      std::fputs("[[1, 2, 300, 7], [2, 9, 1, 7]]", f);
      std::fclose(f);
    }
    const run_result bad = run("memory " + quoted(dir + "/bad.raw.json"), true);
    CHECK(bad.status == 1);
    CHECK(bad.out.find("an action is 1 to 4") != std::string::npos);
    CHECK(run("memory --device tpu " + quoted(trace), true).status == 2);
    CHECK(run("memory --points 0 " + quoted(trace), true).status == 2);
    // Repairs: said on stderr and in --json.
    {
      std::FILE* f = std::fopen((dir + "/repairs.json").c_str(), "wb");
      std::fputs(
          "{\"traceEvents\":[{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"cpu_instant_event\","
          "\"name\":\"[memory]\",\"pid\":1,\"tid\":1,\"ts\":1,\"args\":{\"Addr\":16,\"Bytes\":-8,"
          "\"Total Allocated\":-8,\"Total Reserved\":0}}]}",
          f);
      std::fclose(f);
    }
    const run_result repaired = run("memory " + quoted(dir + "/repairs.json"), true);
    CHECK(repaired.status == 0);
    CHECK(repaired.out.find("repaired 2: 1 free_without_allocation, 1 negative_memory_total") !=
          std::string::npos);
    CHECK(run("memory --json " + quoted(dir + "/repairs.json"))
              .out.starts_with("{\"repairs\":{\"free_without_allocation\":1,"
                               "\"negative_memory_total\":1},"));
  }

  TEST_CASE("tracemodel gpu: HTA's numbers with --hta, exact ones without, ranks, errors") {
    const std::string r0 = tmtest::data_path("kineto/trace_filter_sampled_rank-0.json.gz");
    const std::string r1 = tmtest::data_path("kineto/trace_filter_sampled_rank-1.json.gz");
    // Given in the wrong order: rows come by rank.
    const run_result hta = run("gpu --hta --json " + quoted(r1) + " " + quoted(r0));
    REQUIRE(hta.status == 0);
    simdjson::dom::parser p;
    const simdjson::dom::element got = p.parse(hta.out);
    CHECK(std::string_view(got["policy"]) == "hta");
    CHECK(std::string_view(got["unit"]) == "us");
    const tmtest::json_doc want(tmtest::data_path("kineto/hta/trace_filter_2ranks.hta.json"));
    for (const char* analysis : {"temporal_breakdown", "comm_comp_overlap"}) {
      CAPTURE(analysis);
      simdjson::dom::array a = got[analysis], b = want.root[analysis];
      REQUIRE(a.size() == b.size());
      for (std::size_t k = 0; k < a.size(); ++k) {
        for (const simdjson::dom::key_value_pair kv : simdjson::dom::object(b.at(k))) {
          const std::string_view key = kv.key;
          if (key == "index") continue;
          CAPTURE(key);
          CHECK(double(a.at(k)[key]) == double(kv.value));
        }
      }
    }
    // Across the two ranks: their 10 SendRecv collectives matched, rank 1 started 8 of them last.
    simdjson::dom::array collectives = got["rank_spread"]["collectives"];
    CHECK(collectives.size() == 10);
    CHECK(std::string_view(collectives.at(0)["name"]) == "sendrecv #0");
    simdjson::dom::array stragglers = got["rank_spread"]["stragglers"];
    CHECK(int64_t(stragglers.at(1)["collectives_started_last"]) == 8);
    simdjson::dom::array types = got["kernel_type_breakdown"];
    CHECK(types.size() == 7);
    CHECK(std::string_view(types.at(0)["kernel_type"]) == "COMMUNICATION");
    CHECK(int64_t(types.at(0)["sum"]) == 305584);
    CHECK(double(types.at(0)["percentage"]) == 55.5);

    // The exact policy: nanoseconds, no step dropped, CPU ops never device work.
    const run_result exact = run("gpu --json " + quoted(r0));
    REQUIRE(exact.status == 0);
    simdjson::dom::parser q;
    const simdjson::dom::element e = q.parse(exact.out);
    CHECK(std::string_view(e["unit"]) == "ns");
    const simdjson::dom::element row = simdjson::dom::array(e["temporal_breakdown"]).at(0);
    CHECK(int64_t(row["kernel_time(ns)"]) > 600058 * 1000);  // the last step's kernels too

    const run_result text = run("gpu --hta " + quoted(r0) + " " + quoted(r1));
    CHECK(text.status == 0);
    CHECK(text.out.find(
              "     0         321378         106252         172428         600058   53.56") !=
          std::string::npos);
    CHECK(text.out.find("  rank 1: 20.05%") != std::string::npos);

    // Two files of one rank, a missing file, a folder without traces, bad usage.
    const std::string base = tmtest::data_path("kineto/trace_compare_base_base.json.gz");
    const std::string test = tmtest::data_path("kineto/trace_compare_test_test.json.gz");
    const run_result twice = run("gpu " + quoted(base) + " " + quoted(test), true);
    CHECK(twice.status == 1);
    CHECK(twice.out.find("rank 1 is in two files: " + base + " and " + test) != std::string::npos);
    CHECK(run("gpu " + quoted(r0 + ".missing")).status == 1);
    CHECK(run("gpu " + quoted(tmtest::data_path("kineto/hta"))).status == 1);
    CHECK(run("gpu").status == 2);
    // The report: a page that carries gpu --json's object.
    const std::string page = std::string(TRACEMODEL_TEST_BINARY_DIR) + "/report.html";
    const run_result report =
        run("report " + quoted(r0) + " " + quoted(r1) + " -o " + quoted(page));
    CHECK(report.status == 0);
    CHECK(report.out == "wrote " + page + " (2 ranks)\n");
    const std::string html = tmtest::read_file(page);
    CHECK(html.starts_with("<!DOCTYPE html>"));
    CHECK(html.find(
              "<script type=\"application/json\" id=\"tracemodel-data\">{\"policy\":\"exact\"") !=
          std::string::npos);
    CHECK(html.find("data-check=\"temporal_breakdown.1.idle_time_pctg\"") != std::string::npos);
    CHECK(html.find("CPU: key averages") != std::string::npos);
    CHECK(html.find("data-check=\"critical_path.1.critical_path_length_us\"") != std::string::npos);
    CHECK(html.find("<td class=\"l\">ProfilerStep#") != std::string::npos);  // each rank's step
    CHECK(run("report " + quoted(r0)).status == 2);                          // no -o

    // Counter tracks: each rank's trace again, with its queue lengths and bandwidth as `C`
    // records (which the reader counts as records it does not model).
    const std::string dir = std::string(TRACEMODEL_TEST_BINARY_DIR) + "/counters";
    CHECK(run("gpu --counters " + quoted(dir) + " " + quoted(r0) + " " + quoted(r1)).status == 0);
    const std::string with_counters = tmtest::read_file(dir + "/rank-0.counters.json");
    std::size_t records = 0;
    for (std::size_t at = with_counters.find("\"ph\":\"C\""); at != std::string::npos;
         at = with_counters.find("\"ph\":\"C\"", at + 1))
      ++records;
    CHECK(records > 1000);
    CHECK(with_counters.find("\"name\":\"Queue length (stream 7)\"") != std::string::npos);
    const event_table again = read_chrome_trace_file(dir + "/rank-0.counters.json");
    const event_table original = read_chrome_trace_file(r0);
    CHECK(again.size() == original.size());
    CHECK(again.anomalies[anomaly::unsupported_record] ==
          original.anomalies[anomaly::unsupported_record] + records);
    CHECK(run("gpu --depth 1 " + quoted(r0)).status == 2);
  }

  TEST_CASE("tracemodel diff: HTA's rows with --hta, exact totals without, errors") {
    const std::string base = quoted(tmtest::data_path("kineto/trace_compare_base_base.json.gz"));
    const std::string test = quoted(tmtest::data_path("kineto/trace_compare_test_test.json.gz"));
    // HTA's defaults: the first rank, the first step (1009); then step 1010, short names.
    const run_result first = run("diff --hta --json " + base + " " + test);
    REQUIRE(first.status == 0);
    simdjson::dom::parser p;
    const simdjson::dom::element f = p.parse(first.out);
    CHECK(int64_t(f["control"]["iteration"]) == 1009);
    CHECK(int64_t(f["test"]["rank"]) == 1);
    const run_result r =
        run("diff --hta --json --short-names --iteration 1010 " + base + " " + test);
    REQUIRE(r.status == 0);
    simdjson::dom::parser q;
    const simdjson::dom::element got = q.parse(r.out);
    CHECK(std::string_view(got["unit"]) == "us");
    std::map<std::string, std::map<std::string, int>> categories;
    for (const char* device : {"cpu", "gpu", "all"})
      for (simdjson::dom::element row : simdjson::dom::array(got[device]))
        ++categories[device][std::string(std::string_view(row["counts_change_categories"]))];
    CHECK(categories["cpu"] == std::map<std::string, int>{{"+", 3}, {"-", 1}, {"=", 5}});
    CHECK(categories["gpu"] == std::map<std::string, int>{{"-", 1}});
    const simdjson::dom::element step = simdjson::dom::array(got["cpu"]).at(3);
    CHECK(std::string_view(step["name"]) == "ProfilerStep#1010");
    CHECK(int64_t(step["control_total_duration"]) == 122149);
    CHECK(int64_t(step["diff_counts"]) == 0);
    simdjson::dom::array deleted = got["ops_diff"]["cpu"]["deleted"];
    REQUIRE(deleted.size() == 1);
    CHECK(std::string_view(deleted.at(0)) == "nccl:all_reduce");

    // Exact: nanoseconds, every event by default; the text's lists.
    const run_result text = run("diff --iteration 1010 --device cpu " + base + " " + test);
    CHECK(text.status == 0);
    CHECK(text.out.find("9 names: 3 added, 1 deleted, 0 more often, 0 less often, 5 as often") !=
          std::string::npos);
    CHECK(text.out.find("+311000") != std::string::npos);  // All2All_Pooled_Req, 311 us
    const run_result whole = run("diff --json " + base + " " + base);
    REQUIRE(whole.status == 0);
    simdjson::dom::parser w;
    const simdjson::dom::element same = w.parse(whole.out);
    CHECK(same["control"]["iteration"].is_null());
    for (simdjson::dom::element row : simdjson::dom::array(same["all"]))
      CHECK(int64_t(row["diff_duration"]) == 0);

    // The page: both runs' device time, the largest changes, the diff's JSON inside.
    const std::string page = std::string(TRACEMODEL_TEST_BINARY_DIR) + "/diff.html";
    const run_result html =
        run("diff --iteration 1010 -o " + quoted(page) + " " + base + " " + test);
    CHECK(html.status == 0);
    CHECK(html.out == "wrote " + page + "\n");
    const std::string text_of_page = tmtest::read_file(page);
    CHECK(text_of_page.find("data-check=\"control_temporal_breakdown.0.kernel_time(ns)\"") !=
          std::string::npos);
    CHECK(text_of_page.find("data-check=\"all.") != std::string::npos);
    CHECK(text_of_page.find("Names only in the test run (3)") != std::string::npos);
    CHECK(text_of_page.find("\"test_temporal_breakdown\":[") != std::string::npos);

    // A step that one side lacks, one trace only, a bad device.
    const run_result missing = run("diff --iteration 7 " + base + " " + test, true);
    CHECK(missing.status == 1);
    CHECK(missing.out.find("no step ProfilerStep#7") != std::string::npos);
    CHECK(run("diff " + base).status == 2);
    CHECK(run("diff --device tpu " + base + " " + test).status == 2);
  }

  TEST_CASE("tracemodel critical-path: the summary, HTA's key names in --json, errors") {
    const std::string trace =
        quoted(tmtest::data_path("kineto/critical_path_cuda_event_sync_event_sync_trace.json.gz"));
    const run_result r = run("critical-path --json --annotation ProfilerStep " + trace);
    REQUIRE(r.status == 0);
    simdjson::dom::parser p;
    const simdjson::dom::element got = p.parse(r.out);
    CHECK(int64_t(got["nodes"]) == 54);
    CHECK(int64_t(got["edges"]) == 57);
    CHECK(int64_t(got["edge_types"]["critical_path_sync_dependency"]) == 4);
    CHECK(double(got["critical_path_length_us"]) == 2411.0);
    CHECK(double(got["bound_by_us"]["cpu_bound"]) == 2365.0);
    CHECK(bool(got["success"]));
    CHECK(std::string_view(simdjson::dom::array(got["top_events"]).at(0)["name"]) == "aten::empty");
    const run_result text = run("critical-path --annotation ProfilerStep " + trace);
    CHECK(text.status == 0);
    CHECK(text.out.find("54 nodes, 57 edges: 38 operator, 10 dependency, 5 launch") !=
          std::string::npos);
    CHECK(text.out.find("cpu_bound                          2365.000 us  98.09%") !=
          std::string::npos);
    // The overlaid trace: the path's events marked, its edges between events as flows (which a
    // reader that does not know their category counts as records it does not model).
    const std::string overlaid = std::string(TRACEMODEL_TEST_BINARY_DIR) + "/overlaid.json";
    const run_result written =
        run("critical-path --annotation ProfilerStep -o " + quoted(overlaid) + " " + trace);
    CHECK(written.status == 0);
    CHECK(written.out == "wrote " + overlaid + " (20 critical events)\n");
    simdjson::dom::parser o;
    const simdjson::dom::element doc = o.load(overlaid);
    std::size_t marked = 0;
    std::map<int64_t, std::string> flows;  // id -> phases seen
    for (simdjson::dom::element e : simdjson::dom::array(doc["traceEvents"])) {
      int64_t critical = 0;
      if (e["args"]["critical"].get(critical) == simdjson::SUCCESS && critical == 1) ++marked;
      std::string_view cat;
      if (e["cat"].get(cat) == simdjson::SUCCESS && cat == "critical_path")
        flows[int64_t(e["id"])] += std::string(std::string_view(e["ph"]));
    }
    CHECK(marked == 20);
    REQUIRE(!flows.empty());
    for (const auto& f : flows) CHECK(f.second == "sf");
    const event_table back = read_chrome_trace_file(overlaid);
    const event_table original = read_chrome_trace_file(
        tmtest::data_path("kineto/critical_path_cuda_event_sync_event_sync_trace.json.gz"));
    CHECK(back.size() == original.size());
    CHECK(back.anomalies[anomaly::unsupported_record] == 2 * flows.size());

    const run_result missing = run("critical-path --annotation NoSuchStep " + trace, true);
    CHECK(missing.status == 1);
    CHECK(missing.out.find("no event named like 'NoSuchStep'") != std::string::npos);
    CHECK(run("critical-path --instance x " + trace).status == 2);

    // A folder of ranks: --rank picks one.
    const std::string ranks = std::string(TRACEMODEL_TEST_BINARY_DIR) + "/cp_ranks";
    std::filesystem::create_directories(ranks);
    for (const char* f :
         {"trace_filter_sampled_rank-0.json.gz", "trace_filter_sampled_rank-1.json.gz"})
      std::filesystem::copy_file(tmtest::data_path(std::string("kineto/") + f), ranks + "/" + f,
                                 std::filesystem::copy_options::overwrite_existing);
    const run_result one =
        run("critical-path --json --rank 1 --annotation ProfilerStep " + quoted(ranks));
    REQUIRE(one.status == 0);
    simdjson::dom::parser q;
    CHECK(int64_t(q.parse(one.out)["nodes"]) == 4612);
    const run_result first = run("critical-path --json --annotation ProfilerStep " + quoted(ranks));
    REQUIRE(first.status == 0);
    simdjson::dom::parser q0;
    CHECK(int64_t(q0.parse(first.out)["nodes"]) == 4734);  // rank 0's
    const run_result absent = run("critical-path --rank 5 " + quoted(ranks), true);
    CHECK(absent.status == 1);
    CHECK(absent.out.find("no rank 5") != std::string::npos);
  }

  TEST_CASE("tracemodel critical-path --hta: HTA's summary of alexnet, its key for key") {
    const run_result r =
        run("critical-path --hta --json --instance 1 --annotation "
            "'[param|pytorch.model.alex_net|0|0|0|measure|forward]' " +
            quoted(tmtest::data_path(
                "kineto/critical_path_alexnet_benchmark_result_2869224_1695835535_trace.json.gz")));
    REQUIRE(r.status == 0);
    simdjson::dom::parser p;
    const simdjson::dom::element got = p.parse(r.out);
    const tmtest::json_doc answers(tmtest::data_path("kineto/hta/alexnet.hta.json"));
    const simdjson::dom::element want = answers.root["critical_path"];
    CHECK(std::string_view(got["policy"]) == "hta");
    for (const char* key : {"nodes", "edges", "critical_path_events"})
      CHECK(int64_t(got[key]) == int64_t(want[key]));
    CHECK(double(got["critical_path_length_us"]) ==
          double(int64_t(want["critical_path_length_us"])));
    for (const char* group : {"edge_types", "bound_by_us"}) {
      CAPTURE(group);
      CHECK(simdjson::dom::object(got[group]).size() == simdjson::dom::object(want[group]).size());
      for (const auto field : simdjson::dom::object(want[group]))
        CHECK(double(got[group][field.key]) == double(int64_t(field.value)));
    }
    const run_result text =
        run("critical-path --hta --annotation ProfilerStep --instance 1 " +
            quoted(tmtest::data_path("kineto/trace_diff_control_control.json.gz")));
    CHECK(text.out.find("critical path (HTA's rules) of ProfilerStep #1") != std::string::npos);
    CHECK(text.out.find("19846 nodes, 21145 edges: 16600 operator, 1668 dependency, 1575 launch, "
                        "1302 kernel to kernel, 0 sync") != std::string::npos);
  }
}
