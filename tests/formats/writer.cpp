#include <doctest/doctest.h>

#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <tracemodel/algo/analyze.hpp>
#include <tracemodel/formats/chrome_trace_writer.hpp>
#include <tracemodel/testing/builder.hpp>

#include "../support/json.hpp"

using namespace tracemodel;
using tracemodel::testing::table_builder;

namespace {

/// A small table with one of everything the writer handles.
event_table sample() {
  table_builder b;
  const std::int64_t base = 1'700'000'000'000'000'000;
  b.op("forward", base + 1'000, base + 9'000).scope(op_scope::user_scope);
  b.op("aten::add", base + 1'234, base + 5'678).seq(3).op_correlation(7);
  b.device("cudaLaunchKernel", activity_type::cuda_runtime, base + 2'000, base + 2'500, 1, 1)
      .correlation(40)
      .external_id(7)
      .flow(40, true);
  b.device("add_kernel", activity_type::kernel, base + 6'000, base + 6'300, 7, 0)
      .correlation(40)
      .external_id(7)
      .flow(40, false);
  b.last_device().device = 0;
  b.last_device().stream = 7;
  b.allocation(0xdead0, 512, base + 3'000);
  b.op("AddBackward0", base + 10'000, base + 12'000, 2).seq(3, 1);
  event_table t = b.take();
  t.info.base_time_ns = base;
  t.info.has_base_time = true;
  t.add_string_attr(t.events[1], "kernel_backend", "cpu");
  t.set_thread_name(1, 1, "main");
  t.links.push_back({flow_kind::fwd_bwd, 1, 1, 5});
  return t;
}

}  // namespace

TEST_SUITE("formats") {
  TEST_CASE("write_chrome_trace: the exact output for a small table") {
    const std::string s = chrome_trace_string(sample());
    CHECK(
        s ==
        "{\n\"schemaVersion\": 1,\n\"displayTimeUnit\": \"ms\",\n"
        "\"baseTimeNanoseconds\": 1700000000000000000,\n\"traceEvents\": [\n"
        "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":1,\"tid\":1,\"args\":{\"name\":\"main\"}},"
        "\n"
        "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"forward\",\"pid\":1,\"tid\":1,"
        "\"ts\":1.000,\"dur\":8.000,\"args\":{\"External id\":1}},\n"
        "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::add\",\"pid\":1,\"tid\":1,"
        "\"ts\":1.234,\"dur\":4.444,\"args\":{\"External id\":7,\"Sequence number\":3,"
        "\"Fwd thread id\":0,\"kernel_backend\":\"cpu\"}},\n"
        "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":1,\"tid\":1,"
        "\"ts\":2.000,\"dur\":0.500,\"args\":{\"External id\":7,\"device\":1,\"stream\":1,"
        "\"correlation\":40}},\n"
        "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"add_kernel\",\"pid\":0,\"tid\":7,"
        "\"ts\":6.000,\"dur\":0.300,\"args\":{\"External id\":7,\"device\":0,\"stream\":7,"
        "\"correlation\":40}},\n"
        "{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"cpu_instant_event\",\"name\":\"[memory]\",\"pid\":1,"
        "\"tid\":1,\"ts\":3.000,\"args\":{\"Device Type\":0,\"Device Id\":-1,\"Addr\":912080,"
        "\"Bytes\":512,\"Total Allocated\":0,\"Total Reserved\":0}},\n"
        "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"AddBackward0\",\"pid\":1,\"tid\":2,"
        "\"ts\":10.000,\"dur\":2.000,\"args\":{\"External id\":3,\"Sequence number\":3,"
        "\"Fwd thread id\":1}},\n"
        "{\"ph\":\"s\",\"id\":1,\"pid\":1,\"tid\":1,\"ts\":1.234,\"cat\":\"fwdbwd\",\"name\":"
        "\"fwdbwd\"},\n"
        "{\"ph\":\"f\",\"id\":1,\"pid\":1,\"tid\":2,\"ts\":10.000,\"cat\":\"fwdbwd\",\"name\":"
        "\"fwdbwd\",\"bp\":\"e\"},\n"
        "{\"ph\":\"s\",\"id\":40,\"pid\":1,\"tid\":1,\"ts\":2.000,\"cat\":\"ac2g\",\"name\":"
        "\"ac2g\"},\n"
        "{\"ph\":\"f\",\"id\":40,\"pid\":0,\"tid\":7,\"ts\":6.000,\"cat\":\"ac2g\",\"name\":"
        "\"ac2g\",\"bp\":\"e\"}\n"
        "]\n}\n");
  }

  TEST_CASE("write_chrome_trace: escaping, nanosecond digits, large ids, negative times") {
    table_builder b;
    b.op("quote\" back\\slash\nnewline\ttab\x01 \xe2\x82\xac euro \xff bad", 5, 6);
    b.op("early", -1'500, -700);
    event_table t = b.take();
    t.info.base_time_ns = 0;
    t.info.has_base_time = true;
    t.events[0].get<event_kind::op>().correlation_id = (std::uint64_t{1} << 60) + 3;
    t.add_int_attr(t.events[1], "ratio", -3);
    t.add_attr(t.events[1], "whole", attr_type::floating).f = 15e7;  // stays a double
    t.add_attr(t.events[1], "huge", attr_type::floating).f = 1e300;
    const std::string s = chrome_trace_string(t);
    CHECK(s.find("\"name\":\"quote\\\" back\\\\slash\\nnewline\\ttab\\u0001 \xe2\x82\xac euro "
                 "\xef\xbf\xbd bad\"") != std::string::npos);
    CHECK(s.find("\"ts\":0.005,\"dur\":0.001") != std::string::npos);
    CHECK(s.find("\"ts\":-1.500,\"dur\":0.800") != std::string::npos);
    CHECK(s.find("\"External id\":\"1152921504606846979\"") != std::string::npos);  // > 2^53
    CHECK(s.find("\"ratio\":-3") != std::string::npos);
    CHECK(s.find("\"whole\":150000000.0,\"huge\":1e+300") != std::string::npos);
    // The output is valid JSON.
    simdjson::dom::parser p;
    simdjson::dom::element root;
    CHECK_FALSE(p.parse(s).get(root));
  }

  TEST_CASE("append_json_escaped: random strings decode to themselves, bad UTF-8 to U+FFFD") {
    // Pieces of every class the escaper tells apart; the expected decoding is built alongside.
    // (Found by this test: lead bytes 0xf5-0xff were taken for 3-byte sequences.)
    const std::vector<std::pair<std::string, std::string>> pieces = {
        {"a", "a"},
        {"plain text ", "plain text "},
        {"\"", "\""},
        {"\\", "\\"},
        {"\n", "\n"},
        {"\t", "\t"},
        {"\r", "\r"},
        {"\b", "\b"},
        {"\f", "\f"},
        {std::string(1, '\0'), std::string(1, '\0')},
        {"\x1f", "\x1f"},
        {"\x7f", "\x7f"},
        {"\xc3\xa9", "\xc3\xa9"},
        {"\xe2\x82\xac", "\xe2\x82\xac"},
        {"\xf0\x9f\x98\x80", "\xf0\x9f\x98\x80"},
        {"\xff", "\xef\xbf\xbd"},
        {"\x80", "\xef\xbf\xbd"},                                  // never valid
        {"\xc0\xaf", "\xef\xbf\xbd\xef\xbf\xbd"},                  // overlong
        {"\xed\xa0\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"},  // a surrogate
        {"\xf5\x80\x80\x80",
         "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"},  // not a lead byte
    };
    std::mt19937_64 rng(7);
    simdjson::dom::parser parser;
    for (int round = 0; round < 2000; ++round) {
      std::string in, expected;
      const int n = static_cast<int>(rng() % 12);
      for (int k = 0; k < n; ++k) {
        const auto& [raw, decoded] = pieces[rng() % pieces.size()];
        in += raw;
        expected += decoded;
      }
      std::string json = "\"";
      detail::append_json_escaped(json, in);
      json += '"';
      INFO(json);
      for (const char c : json) CHECK(static_cast<unsigned char>(c) >= 0x20);  // no raw controls
      std::string_view got;
      REQUIRE_FALSE(parser.parse(json).get(got));
      CHECK(got == expected);
    }
  }

  TEST_CASE("write_chrome_trace: a base time is chosen when the table has none") {
    table_builder b;
    b.op("a", 1'700'000'000'123'456'789, 1'700'000'000'123'457'789);
    const std::string s = chrome_trace_string(b.take());
    CHECK(s.find("\"baseTimeNanoseconds\": 1700000000000000000") != std::string::npos);
    CHECK(s.find("\"ts\":123456.789,\"dur\":1.000") != std::string::npos);
  }

  TEST_CASE("write_chrome_trace: counter series, with an id when they have one") {
    table_builder b;
    b.op("a", 1'700'000'000'000'000'000, 1'700'000'000'000'010'000);
    event_table t = b.take();
    export_view v{t};
    counter_series q;
    q.track = q.value_name = "Queue Length";
    q.process = 3;
    q.id = 7;
    q.counts = true;
    q.points = {{1'700'000'000'000'001'000, 2}};
    counter_series m;
    m.track = "bw";
    m.value_name = "Memcpy HtoD";
    m.points = {{1'700'000'000'000'002'500, 1.5}};
    v.counters = {q, m};
    std::string s;
    json_output out = json_output::to_string(s);
    write_chrome_trace(v, out);
    out.flush();
    CHECK(
        s.find(
            R"({"ph":"C","name":"Queue Length","pid":3,"id":7,"ts":1.000,"args":{"Queue Length":2}})") !=
        std::string::npos);
    CHECK(s.find(R"({"ph":"C","name":"bw","pid":0,"ts":2.500,"args":{"Memcpy HtoD":1.5}})") !=
          std::string::npos);
  }

  TEST_CASE("write_chrome_trace: output follows the Trace Event Format's structure rules") {
    // What Perfetto UI and chrome://tracing require: an object with traceEvents; every event
    // has ph, pid, tid and a numeric ts; complete events a dur >= 0; instants a scope;
    // metadata events a name and args; flow events an id, cat and name, flow ends a binding
    // point "e" whose ts is the start of a complete event on the same pid and tid, and a start
    // for every end.
    event_table t = sample();
    analyze(t);
    const std::string s = chrome_trace_string(t);
    simdjson::dom::parser p;
    simdjson::dom::element root;
    REQUIRE_FALSE(p.parse(s).get(root));
    simdjson::dom::array events;
    REQUIRE_FALSE(root["traceEvents"].get(events));
    std::set<std::tuple<std::int64_t, std::int64_t, double>> slice_starts;
    std::map<std::pair<std::string, std::uint64_t>, int> starts, ends;
    std::size_t complete = 0;
    for (simdjson::dom::element e : events) {
      std::string_view ph;
      REQUIRE_FALSE(e["ph"].get(ph));
      REQUIRE(ph.size() == 1);
      REQUIRE(e["pid"].is_int64());
      REQUIRE(e["tid"].is_int64());
      if (ph == "M") {
        CHECK(e["name"].is_string());
        CHECK(e["args"].is_object());
        continue;
      }
      REQUIRE(e["ts"].is_number());
      if (ph == "X") {
        double dur = -1;
        REQUIRE_FALSE(e["dur"].get(dur));
        CHECK(dur >= 0);
        CHECK(e["name"].is_string());
        CHECK(e["cat"].is_string());
        slice_starts.emplace(int64_t(e["pid"]), int64_t(e["tid"]), double(e["ts"]));
        ++complete;
      } else if (ph == "i") {
        std::string_view scope;
        REQUIRE_FALSE(e["s"].get(scope));
        CHECK((scope == "t" || scope == "p" || scope == "g"));
      } else {
        REQUIRE((ph == "s" || ph == "f"));
        const std::string cat = std::string(std::string_view(e["cat"]));
        CHECK(e["name"].is_string());
        const std::uint64_t id = uint64_t(e["id"]);
        (ph == "s" ? starts : ends)[{cat, id}]++;
        if (ph == "f") {
          CHECK(std::string_view(e["bp"]) == "e");
        }
      }
    }
    CHECK(complete == 5);  // and one instant
    // Flows bind: every flow record sits at the start of a slice of its thread.
    for (simdjson::dom::element e : events) {
      const std::string_view ph = e["ph"];
      if (ph != "s" && ph != "f") continue;
      CHECK(slice_starts.count({int64_t(e["pid"]), int64_t(e["tid"]), double(e["ts"])}) == 1);
    }
    for (const auto& [key, n] : ends) CHECK(starts.count(key) == 1);
    CHECK(starts.size() == 2);
  }

  TEST_CASE("write_chrome_trace_file: plain and gzip files, written through a temporary") {
    const std::string dir = std::string(TRACEMODEL_TEST_BINARY_DIR);
    const event_table t = sample();
    write_chrome_trace_file(t, dir + "/sample_trace.json");
    write_chrome_trace_file(t, dir + "/sample_trace.json.gz");
    CHECK(tmtest::read_file(dir + "/sample_trace.json") == chrome_trace_string(t));
    CHECK(tmtest::read_file(dir + "/sample_trace.json.gz") == chrome_trace_string(t));
    std::FILE* tmp = std::fopen((dir + "/sample_trace.json.tmp").c_str(), "rb");
    CHECK(tmp == nullptr);  // renamed into place
    if (tmp != nullptr) std::fclose(tmp);
  }
}
