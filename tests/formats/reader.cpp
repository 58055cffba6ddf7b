#include <doctest/doctest.h>

#include <chrono>
#include <csignal>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#if defined(__linux__)
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#endif

#include <tracemodel/collect.hpp>
#include <tracemodel/formats/chrome_trace_reader.hpp>
#include <tracemodel/formats/chrome_trace_writer.hpp>
#include <tracemodel/formats/device_properties.hpp>

#include "../collect/test_values.hpp"
#include "../support/json.hpp"
#include "../support/real_traces.hpp"

using namespace tracemodel;

namespace {

using tmtest::real_traces;

/// Events (X, i, I, B) in a file, counted independently of the reader.
std::size_t count_events(const std::string& path) {
  tmtest::json_doc doc(path);
  simdjson::dom::array events;
  if (doc.root.is_array())
    events = doc.root;
  else
    events = doc.root["traceEvents"];
  std::size_t n = 0;
  for (simdjson::dom::element e : events) {
    const std::string_view ph = e["ph"];
    n += ph == "X" || ph == "i" || ph == "I" || ph == "B" ? 1 : 0;
  }
  return n;
}

struct policies_with_values : default_record_policies {
  using value_traits = tmtest::value_traits;
};

}  // namespace

TEST_SUITE("formats") {
  TEST_CASE("read_chrome_trace: every real trace reads, gzip included, with every event") {
    for (const char* f : real_traces) {
      INFO(f);
      const std::string path = tmtest::data_path(f);
      event_table t = read_chrome_trace_file(path);
      CHECK(t.size() == count_events(path));
      CHECK(std::is_sorted(t.events.begin(), t.events.end(),
                           [](const auto& a, const auto& b) { return a.start_ns < b.start_ns; }));
    }
  }

  TEST_CASE("read_chrome_trace: exact nanoseconds from baseTimeNanoseconds + ts") {
    tmtest::json_doc doc(tmtest::data_path("pytorch-1.13/mlp_train.oracle.json"));
    event_table t =
        read_chrome_trace_file(tmtest::data_path("pytorch-1.13-kineto/mlp_train.kineto.json"));
    // Every oracle node appears with its exact start and end.
    std::multiset<std::tuple<std::string, std::int64_t, std::int64_t>> got, want;
    for (const auto& e : t.events) got.emplace(std::string(t.name(e)), e.start_ns, e.end_ns());
    for (simdjson::dom::element n : simdjson::dom::array(doc.root["event_tree"]["nodes"]))
      want.emplace(std::string(std::string_view(n["name"])), int64_t(n["start_ns"]),
                   int64_t(n["end_ns"]));
    CHECK(got == want);
  }

  TEST_CASE("read_chrome_trace: kinds, fields, inputs and attributes from args") {
    event_table t =
        read_chrome_trace_file(tmtest::data_path("pytorch-1.13-kineto/mlp_train.kineto.json"));
    const auto* linear = &t.events[0];
    for (const auto& e : t.events)
      if (t.name(e) == "aten::linear") {
        linear = &e;
        break;
      }
    const auto& op = linear->get<event_kind::op>();
    CHECK(op.correlation_id == 6);
    CHECK(op.sequence_number == 0);
    CHECK(op.fwd_thread_id == 0);
    const auto ins = t.inputs_of(*linear);
    REQUIRE(ins.size() == 3);
    CHECK(t.strings[ins[0].dtype] == "float");
    CHECK(std::vector<std::int64_t>(t.sizes(ins[1]).begin(), t.sizes(ins[1]).end()) ==
          std::vector<std::int64_t>{32, 16});
    REQUIRE(t.find_attr(*linear, "Ev Idx") != nullptr);
    CHECK(t.find_attr(*linear, "Ev Idx")->i == 5);

    event_table m =
        read_chrome_trace_file(tmtest::data_path("pytorch-1.13-kineto/memory_profile.kineto.json"));
    std::size_t allocations = 0;
    for (const auto& e : m.events)
      if (const auto* a = e.get_if<event_kind::allocation>()) {
        ++allocations;
        CHECK(a->ptr != 0);
        CHECK(e.instant_scope == 't');
      }
    CHECK(allocations == 36);

    event_table d = read_chrome_trace_file(
        tmtest::data_path("pytorch-1.13-kineto/dataloader_sync.kineto.json"));
    std::size_t script = 0, native = 0;
    for (const auto& e : d.events) {
      script += e.is<event_kind::script_call>() ? 1 : 0;
      native += e.is<event_kind::native_call>() ? 1 : 0;
    }
    CHECK(script == 269);
    CHECK(native == 145);
  }

  TEST_CASE("read_chrome_trace: flows become links and device flow fields") {
    event_table t = read_chrome_trace_file(
        tmtest::data_path("kineto/amd_trace_mi250_minitoy_train_ROCm6_2_kineto.json.gz"));
    REQUIRE(t.links.size() == 4);
    // In the order of their forward ops: aten::t's link first, the loss's last.
    CHECK(t.name(t.links[0].from) == "aten::t");
    CHECK(t.name(t.links[0].to) == "TBackward0");
    CHECK(t.name(t.links[3].from) == "aten::mse_loss");
    CHECK(t.name(t.links[3].to) == "MseLossBackward0");
    for (std::size_t k = 1; k < t.links.size(); ++k) CHECK(t.links[k - 1].from < t.links[k].from);
    std::size_t starts = 0, ends = 0;
    for (const auto& e : t.events)
      if (const auto* d = e.get_if<event_kind::device_activity>())
        if (d->flow_type == flow_kind::async_cpu_gpu) (d->flow_start ? starts : ends)++;
    CHECK(starts == 16);
    CHECK(ends == 16);
    CHECK(t.anomalies[anomaly::flow_end_without_start] == 5);  // on runtime calls, no start
    CHECK(t.info.records.size() == 60);
    CHECK(t.info.has_base_time);
    CHECK(t.info.base_time_ns == 1735632360000000000);
  }

  TEST_CASE("round trip: write -> read -> write is byte-identical") {
    SUBCASE("a recorded table with every side stream") {
      using queue_t = record_queue<default_schema, record_features::all(), policies_with_values>;
      queue_t q;
      using tmtest::value;
      std::vector<value> in{
          value::tensor({8, 16}, {16, 1}, 0, 1, 2),
          value::tensor({3, 4}, {1, 3}, 1),
          value::scalar_of(scalar_value::floating(0.5)),
          value::scalar_of(scalar_value::integer(3)),
          value::scalar_of(scalar_value::boolean(true)),
          value::undefined(),
          value::other(),
          value::list(input_kind::tensor_list,
                      {value::tensor({2}, {1}, 0),
                       value::list(input_kind::tensor_list, {value::tensor({5, 5}, {5, 1}, 2)})}),
          value::list(input_kind::scalar_list, {value::scalar_of(scalar_value::integer(1)),
                                                value::scalar_of(scalar_value::floating(2.5))}),
          value::list(input_kind::tensor_list, {})};
      auto h = q.begin_op({.name = "aten::cat", .sequence_number = 9}, std::span<const value>(in));
      const std::string_view stack[] = {"train.py(10): main", "model.py(3): forward"};
      q.record_call_stack(h, stack);
      const std::string_view modules[] = {"TOP(Net)::forward", "fc(Linear)::forward"};
      q.record_module_hierarchy(h, modules);
      const extra_arg args[] = {extra_arg::floating("flops", 1e9),
                                extra_arg::string("note", "a \"b\"")};
      q.record_extra_args(h, args);
      q.record_allocation(0x1000, 256, 256, 1024);
      q.end_op(h);
      q.begin_op({.name = "never ends"});
      event_table t = materialize(q);
      t.set_process_name(t.events[0].pid, "trainer");
      const std::string a = chrome_trace_string(t);
      const std::string b = chrome_trace_string(read_chrome_trace_string(a));
      CHECK(a == b);
      event_table back = read_chrome_trace_string(a);
      const auto ins = back.inputs_of(back.events[0]);
      CHECK(ins.size() == t.inputs_of(t.events[0]).size());
      CHECK(back.find_attr(back.events[0], "Call stack")->type == attr_type::string_list);
    }
    SUBCASE("every real trace") {
      for (const char* f : real_traces) {
        INFO(f);
        const std::string a = chrome_trace_string(read_chrome_trace_file(tmtest::data_path(f)));
        const std::string b = chrome_trace_string(read_chrome_trace_string(a));
        CHECK(a == b);
      }
    }
  }

  TEST_CASE("read_chrome_trace: anomalies real profilers produce are repaired and counted") {
    const std::string json = R"({"traceEvents":[
      {"ph":"X","cat":"cpu_op","name":"backwards","pid":1,"tid":1,"ts":10,"dur":-5},
      {"ph":"B","cat":"cpu_op","name":"begin only","pid":1,"tid":1,"ts":20},
      {"ph":"E","pid":1,"tid":2,"ts":25},
      {"ph":"B","cat":"cpu_op","name":"paired","pid":1,"tid":3,"ts":30},
      {"ph":"E","pid":1,"tid":3,"ts":32.5},
      {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":40,"dur":1,"args":{"correlation":5}},
      {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":50,"dur":1,"args":{"correlation":6}},
      {"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":60,"dur":1,"args":{"correlation":5}},
      {"ph":"s","id":5,"pid":1,"tid":1,"ts":40,"cat":"ac2g","name":"ac2g"},
      {"ph":"s","id":5,"pid":1,"tid":1,"ts":50,"cat":"ac2g","name":"ac2g"},
      {"ph":"f","id":5,"pid":0,"tid":7,"ts":60,"cat":"ac2g","name":"ac2g","bp":"e"},
      {"ph":"f","id":99,"pid":0,"tid":7,"ts":60,"cat":"ac2g","name":"ac2g","bp":"e"},
      {"ph":"s","id":7,"pid":5,"tid":5,"ts":1,"cat":"ac2g","name":"ac2g"},
      {"ph":"C","name":"counter","pid":1,"ts":1,"args":{"v":1}}
    ]})";
    event_table t = read_chrome_trace_string(json);
    CHECK(t.size() == 6);  // E, flow and counter records are not events
    CHECK(t.anomalies[anomaly::end_before_start] == 1);
    CHECK(t.anomalies[anomaly::unfinished_op] == 1);
    CHECK(t.anomalies[anomaly::unmatched_end] == 1);
    CHECK(t.anomalies[anomaly::duplicate_flow_start] == 1);
    CHECK(t.anomalies[anomaly::flow_end_without_start] == 1);
    CHECK(t.anomalies[anomaly::unbound_flow] == 1);
    CHECK(t.anomalies[anomaly::unsupported_record] == 1);
    for (const auto& e : t.events) {
      if (t.name(e) == "backwards") CHECK(e.end_ns() == e.start_ns);
      if (t.name(e) == "paired") CHECK(e.end_ns() - e.start_ns == 2500);
      if (t.name(e) == "begin only") CHECK(e.get<event_kind::op>().unfinished());
    }
    // The first start of flow 5 won: the kernel's flow ends at the launch at ts 40.
    const auto* k = &t.events[0];
    for (const auto& e : t.events)
      if (t.name(e) == "k") k = &e;
    CHECK(k->get<event_kind::device_activity>().flow_id == 5);
  }

  TEST_CASE("read_chrome_trace: keys with escapes mean what they spell") {
    const std::string json = R"({"traceEvents":[
      {"p\u0068":"X","n\u0061me":"aten::add","ts":1,"dur":2,"args":{"Sequence \u006eumber":4,"k\"q":1}}
    ]})";
    event_table t = read_chrome_trace_string(json);
    REQUIRE(t.size() == 1);
    CHECK(t.name(t.events[0]) == "aten::add");
    CHECK(t.events[0].get<event_kind::op>().sequence_number == 4);
    const attribute* a = t.find_attr(t.events[0], "k\"q");
    REQUIRE(a != nullptr);
    CHECK(a->i == 1);
  }

  TEST_CASE("read_chrome_trace: a device activity carries one flow, the first that binds to it") {
    // Found by the fuzzer: flow 2's start binds to the launch of flow 1 (it encloses ts 41).
    // Letting it overwrite flow 1 wrote a trace whose flow 1 had lost its start.
    const std::string json = R"({"traceEvents":[
      {"ph":"X","cat":"cuda_runtime","name":"cudaMemcpyAsync","pid":1,"tid":1,"ts":40,"dur":2,"args":{"correlation":1}},
      {"ph":"X","cat":"gpu_memcpy","name":"Memcpy DtoH","pid":0,"tid":7,"ts":45,"dur":1,"args":{"correlation":1}},
      {"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":50,"dur":1,"args":{"correlation":2}},
      {"ph":"f","id":1,"pid":0,"tid":7,"ts":45,"cat":"ac2g","name":"ac2g","bp":"e"},
      {"ph":"s","id":1,"pid":1,"tid":1,"ts":40,"cat":"ac2g","name":"ac2g"},
      {"ph":"s","id":2,"pid":1,"tid":1,"ts":41,"cat":"ac2g","name":"ac2g"},
      {"ph":"f","id":2,"pid":0,"tid":7,"ts":50,"cat":"ac2g","name":"ac2g","bp":"e"},
      {"ph":"f","id":1,"pid":0,"tid":7,"ts":50,"cat":"ac2g","name":"ac2g","bp":"e"}
    ]})";
    event_table t = read_chrome_trace_string(json);
    CHECK(t.anomalies[anomaly::unbound_flow] == 1);            // flow 2's start
    CHECK(t.anomalies[anomaly::flow_end_without_start] == 1);  // flow 2's end
    CHECK(t.anomalies[anomaly::duplicate_flow_end] == 1);      // flow 1's second end
    std::map<std::string, std::pair<std::uint64_t, bool>> flow;
    for (const auto& e : t.events) {
      const auto& d = e.get<event_kind::device_activity>();
      flow[std::string(t.name(e))] = {d.flow_type == flow_kind::none ? 0 : d.flow_id, d.flow_start};
    }
    CHECK(flow["cudaMemcpyAsync"] == std::pair<std::uint64_t, bool>{1, true});
    CHECK(flow["Memcpy DtoH"] == std::pair<std::uint64_t, bool>{1, false});
    CHECK(flow["k"] == std::pair<std::uint64_t, bool>{0, false});
    const std::string once = chrome_trace_string(t);
    CHECK(chrome_trace_string(read_chrome_trace_string(once)) == once);
  }

  TEST_CASE("read_chrome_trace: device flow starts of one start time, and starts without an end") {
    // Found by the fuzzer (tests/data/fuzz/lone-device-flow-start.json): a start that bound
    // by enclosing time to an event sharing its start with another was written at that start;
    // read back, it chose the other event (a runtime call ranks first), which already carried
    // a flow, and was lost. Starts now pass over activities that carry a flow; and a start
    // whose end never binds keeps no mark (it draws nothing, as for fwdbwd flows).
    const std::string json = R"({"traceEvents":[
      {"ph":"X","cat":"cuda_runtime","name":"c","pid":1,"tid":1,"ts":100,"dur":0},
      {"ph":"X","cat":"cc","name":"x","pid":1,"tid":1,"ts":100,"dur":94},
      {"ph":"X","cat":"cuda_runtime","name":"lone","pid":1,"tid":1,"ts":200,"dur":3},
      {"ph":"X","cat":"kernel","name":"k1","pid":0,"tid":7,"ts":300,"dur":5},
      {"ph":"X","cat":"kernel","name":"k2","pid":0,"tid":7,"ts":400,"dur":5},
      {"ph":"s","id":1511,"pid":1,"tid":1,"ts":100,"cat":"ac2g"},
      {"ph":"s","id":1512,"pid":1,"tid":1,"ts":150,"cat":"ac2g"},
      {"ph":"s","id":1513,"pid":1,"tid":1,"ts":200,"cat":"ac2g"},
      {"ph":"f","id":1511,"pid":0,"tid":7,"ts":300,"cat":"ac2g","bp":"e"},
      {"ph":"f","id":1512,"pid":0,"tid":7,"ts":400,"cat":"ac2g","bp":"e"}
    ]})";
    auto flows = [](const event_table& t) {
      std::map<std::string, std::pair<std::uint64_t, bool>> flow;
      for (const auto& e : t.events) {
        const auto& d = e.get<event_kind::device_activity>();
        flow[std::string(t.name(e))] = {d.flow_type == flow_kind::none ? 0 : d.flow_id,
                                        d.flow_start};
      }
      return flow;
    };
    const event_table t = read_chrome_trace_string(json);
    using mark = std::pair<std::uint64_t, bool>;
    const std::map<std::string, mark> expected = {{"c", {1511, true}},
                                                  {"x", {1512, true}},
                                                  {"lone", {0, false}},
                                                  {"k1", {1511, false}},
                                                  {"k2", {1512, false}}};
    CHECK(flows(t) == expected);
    CHECK(t.anomalies.total() == 0);
    const std::string once = chrome_trace_string(t);
    CHECK(once.find("\"id\":1513") == std::string::npos);
    const event_table again = read_chrome_trace_string(once);
    CHECK(flows(again) == expected);
    CHECK(chrome_trace_string(again) == once);
  }

  TEST_CASE("read_chrome_trace: bad input is an error naming the byte offset and the problem") {
    struct bad {
      std::string json;
      std::size_t offset;
      std::string message;
    };
    std::string deep(100'000, '[');
    const bad cases[] = {
        {"", 0, "empty input"},
        {"   \n ", 0, "empty input"},
        {"{\"traceEvents\": [{\"ph\":\"X\",\"ts\":1,\"dur\":2", 41, "truncated"},
        {"{\"traceEvents\": [", 17, "truncated"},
        {"\x01\x02garbage", 0, "not a trace"},
        {"{\"traceEvents\": [{\"ph\":\"X\",\"ts\":1}] } trailing", 38, "after the end"},
        {"{\"a\": 1}", 0, "no traceEvents"},
        {"[1, 2]", 1, "expected an object"},
        {"\"just a string\"", 0, "not a trace"},
        {"{\"traceEvents\": {}}", 16, "expected an array"},
        {"{\"traceEvents\": [{\"ph\":\"X\",\"ts\":\"abc\"}]}", 32, "ts: expected a number"},
        {"{\"traceEvents\": [{\"ph\":\"X\",\"ts\":1,\"pid\":{}}]}", 40, "pid: expected a number"},
        {"{\"traceEvents\": [{\"ph\":\"X\",\"ts\":1,\"args\":[1]}]}", 41,
         "args: expected an object"},
        {"{\"traceEvents\": [{\"ph\":\"X\",\"ts\":NaN}]}", 32, "invalid JSON"},
        {"{\"traceEvents\": [{\"ph\":\"X\",\"ts\":Infinity}]}", 32, "invalid JSON"},
        {"{\"traceEvents\": [{\"ph\":\"X\",\"ts\":1e999}]}", 32, "out of range"},
        {"{\"traceEvents\": [{\"ph\":\"X\",\"ts\":1,\"args\":{\"x\":1e999}}]}", 46, "out of range"},
        {"{\"traceEvents\": [{\"ts\":1}]}", 17, "without \"ph\""},
        {"{\"traceEvents\": [{\"ph\":\"X\"}]}", 17, "without \"ts\""},
        {"{\"traceEvents\": [" + deep, 17 + 1023, "nesting deeper"},  // the 1025th bracket
        {"{\"traceEvents\": [{\"ph\":\"X\",\"ts\":1,,}]}", 34, "invalid JSON"},  // the second comma
        {"{\"traceEvents\": [{\"ph\":\"X\",\"ts\":1},]}", 34, "trailing ','"},
        // A dims entry is a tensor's sizes or a list of entries, not both (the fuzzer found the
        // first order reading past the entries).
        {"{\"traceEvents\": [{\"ph\":\"X\",\"cat\":\"cpu_op\",\"ts\":1,\"args\":{\"Input "
         "Dims\":[[1,[2]]]}}]}",
         74, "mixed numbers and lists"},
        {"{\"traceEvents\": [{\"ph\":\"X\",\"cat\":\"cpu_op\",\"ts\":1,\"args\":{\"Input "
         "Dims\":[[[2],1]]}}]}",
         76, "mixed numbers and lists"},
        // Misspelled literals (found by the fuzzer: they once escaped as simdjson exceptions).
        {"{\"traceEvents\": [{\"ph\":\"X\",\"ts\":1,\"args\":{\"x\":nulx}}]}", 46,
         "invalid literal"},
        {"{\"traceEvents\": [{\"ph\":\"X\",\"ts\":1,\"args\":{\"x\":tru}}]}", 46, "x"},
        {"{\"traceEvents\": [{\"ph\":\"X\",\"ts\":1,\"x\":nul}]}", 38, "invalid literal"},
        // Numeric ids that would read back as string thread keys (they once hit an assertion).
        {"{\"traceEvents\": [{\"ph\":\"X\",\"ts\":1,\"tid\":4611686018427387904}]}", 40,
         "tid: numbers from 2^62"},
        {"{\"traceEvents\": [{\"ph\":\"X\",\"ts\":1,\"pid\":9223372036854775807}]}", 40,
         "pid: numbers from 2^62"},
    };
    for (const bad& c : cases) {
      INFO(c.json.substr(0, 80));
      try {
        (void)read_chrome_trace_string(c.json);
        FAIL("no error");
      } catch (const input_error& e) {
        INFO(e.what());
        CHECK(std::string(e.what()).find(c.message) != std::string::npos);
        CHECK(e.offset() == c.offset);
      }
    }
  }

  TEST_CASE("read_chrome_trace: op input lists read from the text equal simdjson's reading") {
    auto op = [](const std::string& args) {
      return R"({"traceEvents":[{"ph":"X","cat":"cpu_op","name":"f","pid":1,"tid":1,"ts":1,"dur":1,"args":{)" +
             args + "}}]}";
    };
    auto read = [](const std::string& json, bool fast) {
      read_options o;
      o.fast_paths = fast;
      std::string copy = json;
      return read_chrome_trace(copy, copy.size(), o);
    };
    // Usual and unusual shapes: both paths give the same table.
    const std::string shapes[] = {
        R"("Input Dims":[[4, 8], [], [[1], [2, 3]], [[[]]], [-5, 0]],"Input type":["float","","TensorList","TensorList","long"])",
        R"("Input Dims" : [ [ 1 ,2 ] ] , "Input Strides":[[2,1]], "Input type" : [ "float" ])",
        R"("Input Dims":[[123456789012345678]],"Input type":["fl\u006fat"])",  // an escape:
                                                                               // simdjson
        R"("Input Dims":[[1234567890123456789]],"Input type":["float"])",  // 19 digits: simdjson
        R"("Input Dims":[[],[]],"Input type":["Scalar","ScalarList"],"Concrete Inputs":["2.5","[1, 2]"])",
        R"("Input Dims":[[1]],"Input type":["Scalar"],"Concrete Inputs":[3])",  // a number:
                                                                                // simdjson
        R"("Input Dims":[],"Input type":[])",
    };
    for (const std::string& a : shapes) {
      INFO(a);
      const event_table fast = read(op(a), true), slow = read(op(a), false);
      CHECK(chrome_trace_string(fast) == chrome_trace_string(slow));
    }
    // Exact inputs of the first shape.
    const event_table t = read(op(shapes[0]), true);
    const auto ins = t.inputs_of(t.events[0]);
    REQUIRE(ins.size() == 9);
    auto dims = [&t](const input_value& v) {
      return std::vector<std::int64_t>(t.sizes(v).begin(), t.sizes(v).end());
    };
    CHECK(ins[0].kind == input_kind::tensor);
    CHECK(dims(ins[0]) == std::vector<std::int64_t>{4, 8});
    CHECK(ins[1].kind == input_kind::other);  // no type, no dims
    CHECK(ins[2].kind == input_kind::tensor_list);
    CHECK(ins[2].rank == 2);
    CHECK(dims(ins[3]) == std::vector<std::int64_t>{1});
    CHECK(dims(ins[4]) == std::vector<std::int64_t>{2, 3});
    CHECK(ins[5].kind == input_kind::tensor_list);
    CHECK(ins[6].kind == input_kind::tensor_list);  // the inner list
    CHECK(ins[7].kind == input_kind::tensor);       // its empty entry: a tensor of rank 0
    CHECK(ins[7].rank == 0);
    CHECK(dims(ins[8]) == std::vector<std::int64_t>{-5, 0});
    // Malformed lists: the same error from both paths (the fast path leaves them to simdjson).
    const std::string bad[] = {
        R"("Input Dims":[[1,]])",
        R"("Input Dims":[[1.5]])",
        R"("Input Dims":[[01]])",
        R"("Input Dims":[[1,[2]]])",
        R"("Input Dims":[1])",
        R"("Input Dims":[[1 2]])",
        R"("Input Dims":)" + std::string(70, '[') + std::string(70, ']'),
        R"("Input type":["a",])",
        R"("Input type":["a" "b"])",
    };
    for (const std::string& a : bad) {
      INFO(a);
      std::string fast_error = "none", slow_error = "none";
      try {
        (void)read(op(a), true);
      } catch (const input_error& e) {
        fast_error = e.what() + std::string(" @") + std::to_string(e.offset());
      }
      try {
        (void)read(op(a), false);
      } catch (const input_error& e) {
        slow_error = e.what() + std::string(" @") + std::to_string(e.offset());
      }
      CHECK(fast_error != "none");
      CHECK(fast_error == slow_error);
    }
  }

  TEST_CASE("read_chrome_trace: integers and strings read from the text equal simdjson's reading") {
    auto read = [](const std::string& json, bool fast) {
      read_options o;
      o.fast_paths = fast;
      std::string copy = json;
      return read_chrome_trace(copy, copy.size(), o);
    };
    auto outcome = [&read](const std::string& json, bool fast) {
      try {
        const event_table t = read(json, fast);
        std::string attrs;
        for (const auto& e : t.events)
          for (const attribute& a : t.attrs_of(e))
            attrs += std::string(t.strings.view(a.key)) + ":" +
                     std::to_string(static_cast<int>(a.type)) + ";";
        return chrome_trace_string(t) + attrs;
      } catch (const input_error& e) {
        return std::string("error: ") + e.what() + " @" + std::to_string(e.offset());
      }
    };
    auto event = [](const std::string& fields, const std::string& args) {
      return R"({"traceEvents":[{"ph":"X","cat":"cpu_op","ts":1,"dur":1,)" + fields +
             R"(,"args":{)" + args + "}}]}";
    };
    // Values on both sides of every line the fast paths draw: sign, zero, int64 range, forms
    // that are numbers but not integers, escapes, whitespace, and malformed tokens.
    const std::string values[] = {"0",
                                  "-0",
                                  "7",
                                  "-7",
                                  "007",
                                  "-",
                                  "9223372036854775807",
                                  "9223372036854775808",
                                  "-9223372036854775808",
                                  "-9223372036854775809",
                                  "18446744073709551615",
                                  "18446744073709551616",
                                  "1.5",
                                  "-0.0",
                                  "1e3",
                                  "1E-3",
                                  "12x",
                                  "1 ",
                                  " 2",
                                  R"("")",
                                  R"("plain")",
                                  R"("caf\u00e9")",
                                  R"("tab\there")",
                                  R"("q\"uote")",
                                  R"("\\")",
                                  R"("unterminated)",
                                  "true",
                                  "null",
                                  "[1,2]",
                                  R"({"a":1})"};
    for (const std::string& v : values) {
      INFO(v);
      const std::string as_arg = event(R"("name":"f","pid":1,"tid":1)", R"("External id":)" + v);
      CHECK(outcome(as_arg, true) == outcome(as_arg, false));
      const std::string as_attr = event(R"("name":"f","pid":1,"tid":1)", R"("my arg":)" + v);
      CHECK(outcome(as_attr, true) == outcome(as_attr, false));
      const std::string as_tid = event(R"("name":"f","pid":1,"tid":)" + v, R"("a":1)");
      CHECK(outcome(as_tid, true) == outcome(as_tid, false));
      const std::string as_name = event(R"("pid":1,"tid":1,"name":)" + v, R"("a":1)");
      CHECK(outcome(as_name, true) == outcome(as_name, false));
      const std::string as_cat = event(R"("pid":1,"tid":1,"name":"f","cat":)" + v, R"("a":1)");
      CHECK(outcome(as_cat, true) == outcome(as_cat, false));
    }
    // Exact values from the fast paths.
    const event_table t = read(event(R"("name":"a\"b","pid":-3,"tid":"w")",
                                     R"("External id":-42,"Big":18446744073709551615,"Name":"x y",)"
                                     R"("Esc":"\u0041")"),
                               true);
    REQUIRE(t.size() == 1);
    CHECK(t.strings.view(t.events[0].template get<event_kind::op>().name) == "a\"b");
    std::map<std::string, attribute> got;
    for (const attribute& a : t.attrs_of(t.events[0])) got[std::string(t.strings.view(a.key))] = a;
    REQUIRE(got.size() == 4);
    CHECK(got["External id"].type == attr_type::integer);
    CHECK(got["External id"].i == -42);
    CHECK(got["Big"].type == attr_type::unsigned_integer);
    CHECK(got["Big"].u == 18446744073709551615u);
    CHECK(got["Name"].type == attr_type::string);
    CHECK(t.strings.view(got["Name"].s) == "x y");
    CHECK(t.strings.view(got["Esc"].s) == "A");
  }

  TEST_CASE("read_chrome_trace: a base time after the events (as Kineto writes it) shifts them") {
    const std::string events =
        R"("traceEvents": [{"ph":"X","cat":"cpu_op","name":"f","pid":1,"tid":1,"ts":10.5,"dur":3},)"
        R"({"ph":"B","cat":"cpu_op","name":"open","pid":1,"tid":2,"ts":11},)"
        R"({"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":11,"dur":1,"args":{"correlation":4}},)"
        R"({"ph":"s","id":4,"pid":1,"tid":1,"ts":11,"cat":"ac2g","name":"ac2g"},)"
        R"({"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":12.25,"dur":2,"args":{"correlation":4}},)"
        R"({"ph":"f","id":4,"pid":0,"tid":7,"ts":12.25,"cat":"ac2g","name":"ac2g","bp":"e"}])";
    const event_table before =
        read_chrome_trace_string("{\"baseTimeNanoseconds\": 1700000000000000000, " + events + "}");
    const event_table after =
        read_chrome_trace_string("{" + events + ", \"baseTimeNanoseconds\": 1700000000000000000}");
    CHECK(chrome_trace_string(after) == chrome_trace_string(before));
    REQUIRE(after.size() == 4);
    CHECK(after.events[0].start_ns == 1700000000000010500);
    CHECK(after.events[0].end_ns() == 1700000000000013500);
    CHECK(after.events[1].end_ns() == no_end_ns);  // never ended: stays without an end
    const auto& k = after.events[3].get<event_kind::device_activity>();
    CHECK(after.events[3].start_ns == 1700000000000012250);
    CHECK(k.flow_id == 4);
    CHECK_FALSE(k.flow_start);
  }

  TEST_CASE("read_chrome_trace: times that overflow with the base time, a second traceEvents") {
    auto error_of = [](const std::string& json) -> std::pair<std::string, std::size_t> {
      try {
        (void)read_chrome_trace_string(json);
      } catch (const input_error& e) {
        return {e.what(), e.offset()};
      }
      return {"no error", 0};
    };
    const std::string big_ts = R"([{"ph":"X","ts":9000000000000000,"dur":1}])";
    const std::string base = R"("baseTimeNanoseconds": 9000000000000000000)";
    const std::string base_first = "{" + base + R"(, "traceEvents": )" + big_ts + "}";
    auto [what, at] = error_of(base_first);
    CHECK(what.find("out of range") != std::string::npos);
    CHECK(at == base_first.find("{\"ph\""));  // the event
    const std::string base_last = R"({"traceEvents": )" + big_ts + ", " + base + "}";
    std::tie(what, at) = error_of(base_last);
    CHECK(what.find("out of range") != std::string::npos);
    CHECK(at == base_last.find("9000000000000000000"));  // the base
    const std::string twice = R"({"traceEvents": [{"ph":"X","ts":1}], "traceEvents": []})";
    std::tie(what, at) = error_of(twice);
    CHECK(what.find("appears twice") != std::string::npos);
    CHECK(at == 37);
  }

  TEST_CASE("read_chrome_trace_file: truncated and corrupt gzip") {
    const std::string dir = TRACEMODEL_TEST_BINARY_DIR;
    std::FILE* f =
        std::fopen(tmtest::data_path("kineto/triton_example_triton_example.json.gz").c_str(), "rb");
    REQUIRE(f != nullptr);
    std::string raw(1 << 20, '\0');
    raw.resize(std::fread(raw.data(), 1, raw.size(), f));
    std::fclose(f);
    auto write = [&dir](const std::string& name, const std::string& bytes) {
      std::FILE* o = std::fopen((dir + "/" + name).c_str(), "wb");
      std::fwrite(bytes.data(), 1, bytes.size(), o);
      std::fclose(o);
      return dir + "/" + name;
    };
    const std::string truncated = write("truncated.json.gz", raw.substr(0, raw.size() / 2));
    CHECK_THROWS_WITH_AS((void)read_chrome_trace_file(truncated),
                         doctest::Contains("truncated gzip"), input_error);
    std::string corrupt = raw;
    for (std::size_t i = 20; i < 60 && i < corrupt.size(); ++i) corrupt[i] = '\x55';
    const std::string bad = write("corrupt.json.gz", corrupt);
    CHECK_THROWS_AS((void)read_chrome_trace_file(bad), input_error);
    const std::string empty = write("empty.json", "");
    CHECK_THROWS_WITH_AS((void)read_chrome_trace_file(empty), doctest::Contains("empty input"),
                         input_error);
    CHECK_THROWS_WITH_AS((void)read_chrome_trace_file(dir + "/no such file.json"),
                         doctest::Contains("cannot open"), input_error);
  }

#if defined(__linux__)
  TEST_CASE(
      "read_chrome_trace_file: a pipe reads until its end, gzip too, a directory is an error") {
    const std::string dir = TRACEMODEL_TEST_BINARY_DIR;
    std::signal(SIGPIPE, SIG_IGN);  // a reader that stops early fails the checks, not the process
    for (const char* name :
         {"pytorch-1.13-kineto/dataloader_sync.kineto.json", "h100/cupti_kernels.json.gz"}) {
      CAPTURE(name);
      const std::string path = tmtest::data_path(name);
      std::FILE* f = std::fopen(path.c_str(), "rb");
      REQUIRE(f != nullptr);
      std::string bytes;
      char chunk[4096];
      for (std::size_t r; (r = std::fread(chunk, 1, sizeof chunk, f)) > 0;) bytes.append(chunk, r);
      std::fclose(f);
      REQUIRE(bytes.size() > (std::size_t{1} << 16));  // more than the pipe's first text holds
      const std::string fifo = dir + "/reader_test.fifo";
      ::unlink(fifo.c_str());
      REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
      std::thread writer([&] {  // small writes: the reader sees many short reads
        // Waits up to 10 s for the reader to open the FIFO (a reader that never opens it
        // fails the checks below instead of hanging the test).
        int fd = -1;
        for (int tries = 0; fd < 0 && tries < 10000; ++tries) {
          fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
          if (fd < 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        if (fd < 0) return;
        ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
        for (std::size_t at = 0; at < bytes.size(); at += 1000)
          if (::write(fd, bytes.data() + at, std::min<std::size_t>(1000, bytes.size() - at)) < 0)
            break;
        ::close(fd);
      });
      std::string from_pipe, what;
      try {
        from_pipe = chrome_trace_string(read_chrome_trace_file(fifo));
      } catch (const std::exception& e) {
        what = e.what();
      }
      writer.join();
      ::unlink(fifo.c_str());
      CHECK(what == "");
      CHECK(from_pipe == chrome_trace_string(read_chrome_trace_file(path)));
    }
    CHECK_THROWS_WITH_AS((void)read_chrome_trace_file(dir), doctest::Contains("cannot read"),
                         input_error);
  }
#endif

  TEST_CASE("device_properties: Kineto's device list, AMD devices marked") {
    const event_table a100 = read_chrome_trace_file(
        tmtest::data_path("kineto/critical_path_cuda_event_sync_event_sync_trace.json.gz"));
    const auto d = device_properties(a100);
    REQUIRE(d.size() >= 1);
    CHECK(d[0].id == 0);
    CHECK(d[0].name == "NVIDIA A100-PG509-200");
    CHECK(d[0].compute_major == 8);
    CHECK(d[0].compute_minor == 0);
    CHECK_FALSE(d[0].rocm);
    CHECK(d[0].supports_tf32());
    const event_table mi250 = read_chrome_trace_file(
        tmtest::data_path("kineto/amd_trace_mi250_minitoy_train_ROCm6_2_kineto.json.gz"));
    const auto m = device_properties(mi250);
    REQUIRE(m.size() >= 1);
    CHECK(m[0].compute_major == 9);
    CHECK(m[0].rocm);
    CHECK_FALSE(m[0].supports_tf32());
    CHECK(device_properties(read_chrome_trace_string(R"({"traceEvents":[]})")).empty());
    CHECK(device_properties(read_chrome_trace_string(R"({"traceEvents":[],"deviceProperties":[]})"))
              .empty());
    CHECK(device_properties(
              read_chrome_trace_string(R"({"traceEvents":[],"deviceProperties":{"id":1}})"))
              .empty());
    // Entries that are not objects are skipped; a missing id is the position.
    const auto odd = device_properties(read_chrome_trace_string(
        R"({"traceEvents":[],"deviceProperties":[1,{"name":"GPU","computeMajor":7},{"id":5,"computeMajor":"8"}]})"));
    REQUIRE(odd.size() == 2);
    CHECK(odd[0].id == 0);
    CHECK(odd[0].compute_major == 7);
    CHECK(odd[1].id == 5);
    CHECK(odd[1].compute_major == 0);
  }
}
