// Each event's position in its file's traceEvents array (formats/event_positions.hpp): HTA's
// event ids, through records that make no event, in and out of start order.
#include <doctest/doctest.h>

#include <cstdio>
#include <map>
#include <string>
#include <string_view>

#include <tracemodel/formats/chrome_trace_reader.hpp>
#include <tracemodel/formats/event_positions.hpp>
#include <tracemodel/testing/builder.hpp>

using namespace tracemodel;

namespace {

std::string write_text(const std::string& name, std::string_view text) {
  const std::string path = std::string(TRACEMODEL_TEST_BINARY_DIR) + "/" + name;
  std::FILE* f = std::fopen(path.c_str(), "wb");
  REQUIRE(f != nullptr);
  std::fwrite(text.data(), 1, text.size(), f);
  std::fclose(f);
  return path;
}

// Records that make no event (metadata, flows, a counter, an end) between those that do, and
// events out of start order.
constexpr std::string_view kTrace = R"({"traceEvents":[
{"ph":"M","name":"thread_name","pid":1,"tid":1,"args":{"name":"main"}},
{"ph":"X","cat":"cpu_op","name":"b","pid":1,"tid":1,"ts":20,"dur":5},
{"ph":"s","cat":"ac2g","name":"x","id":1,"pid":1,"tid":1,"ts":21},
{"ph":"X","cat":"cpu_op","name":"a","pid":1,"tid":1,"ts":10,"dur":30},
{"ph":"C","name":"counter","pid":1,"ts":12,"args":{"v":1}},
{"ph":"i","cat":"cpu_instant_event","name":"mark","pid":1,"tid":1,"ts":11,"s":"t"},
{"ph":"B","cat":"cpu_op","name":"c","pid":1,"tid":2,"ts":50},
{"ph":"E","pid":1,"tid":2,"ts":60},
{"ph":"X","cat":"cpu_op","name":"d","pid":1,"tid":1,"ts":5,"dur":1}
]})";

}  // namespace

TEST_CASE("event_positions: each event's place in traceEvents, the table in start order") {
  const std::string path = write_text("event_positions.json", kTrace);
  read_options o;
  o.keep_file_order = true;  // (what event_positions needs of a table out of the file's order)
  const event_table t = read_chrome_trace_file(path, o);
  const auto at = event_positions(path, t);
  REQUIRE(at.size() == t.size());
  std::map<std::string, std::int64_t> by_name;
  for (event_index i = 0; i < t.size(); ++i) by_name[std::string(t.name(i))] = at[i];
  CHECK(by_name ==
        std::map<std::string, std::int64_t>{{"b", 1}, {"a", 3}, {"mark", 5}, {"c", 6}, {"d", 8}});
  CHECK(t.name(0) == "d");  // (the table is in start order)
}

TEST_CASE("event_positions: a table the file does not match gets none") {
  const std::string path = write_text("event_positions_other.json", kTrace);
  table_builder b;
  b.op("only", 0, 10);
  CHECK(event_positions(path, b.take()).empty());
  CHECK(event_positions(path + ".missing", b.take()).empty());
  CHECK(event_record_positions(R"({"traceEvents": 3})", 64).empty());
}
