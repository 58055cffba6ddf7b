// The parser on its own (formats/chrome_trace/parse.hpp): what it hands a record sink, in what
// order, whatever the path that read the records.
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include <tracemodel/formats/chrome_trace/parse.hpp>
#include <tracemodel/formats/trace_text.hpp>

namespace tmod = tracemodel;
namespace ct = tracemodel::detail::chrome_trace;

namespace {

/// Writes down every call as a line.
class recording_sink final : public ct::record_sink {
 public:
  std::vector<std::string> calls;
  void base_time(std::int64_t ns, std::size_t at) override {
    calls.push_back("base_time " + std::to_string(ns) + " at " + std::to_string(at));
  }
  void metadata(std::string_view key, std::string_view raw) override {
    calls.push_back("metadata " + std::string(key) + " " + std::string(raw));
  }
  void events_begin() override { calls.emplace_back("events_begin"); }
  void build(const ct::batch_view& b) override {
    std::string line = "build";
    for (const ct::fields& f : b.events) {
      line += " " + std::string(f.ph) + ":" + std::string(f.name) + "@" + std::to_string(f.ts);
      line += " pid " + std::to_string(f.pid.number) + " tid " +
              (f.tid.is_string ? std::string(f.tid.text) : std::to_string(f.tid.number));
      for (const auto& a : b.args.subspan(f.args_first, f.args_count))
        line += " " + std::string(a.key) + "=" + std::to_string(a.i);
    }
    calls.push_back(line);
  }
  void expect(double scale) override { calls.push_back(scale > 1 ? "expect more" : "expect"); }
};

std::vector<std::string> parse(const std::string& json, bool fast, std::size_t batch_bytes) {
  std::string buf = json;
  buf.resize(json.size() + tmod::text_padding, ' ');
  tmod::read_options o;
  o.fast_paths = fast;
  o.batch_bytes = batch_bytes;
  o.threads = 1;
  recording_sink sink;
  ct::parse_text(std::span<char>(buf.data(), buf.size()), json.size(), o, nullptr, sink);
  CHECK(std::string_view(buf.data(), json.size()) == json);  // the text as it was
  return sink.calls;
}

}  // namespace

TEST_SUITE("formats") {
  TEST_CASE("parse_text: a sink gets the top level and the batches in file order") {
    const std::string json =
        R"({"meta":{"a":[1,2]},"traceEvents":[)"
        R"({"ph":"X","name":"a","pid":1,"tid":2,"ts":1,"dur":3,"args":{"n":7}},)"
        R"({"ph":"X","name":"b\u0021","pid":1,"tid":"main","ts":2.5,"dur":1},)"
        R"({"ph":"i","name":"c","pid":3,"tid":4,"ts":4}],)"
        R"("baseTimeNanoseconds":5000,"schemaVersion":1})";
    const std::size_t base_at = json.find("5000");
    for (const bool fast : {true, false}) {
      CAPTURE(fast);
      // One record a batch (the second has an escape: simdjson reads it on the direct path's
      // behalf, and its batch).
      const std::vector<std::string> one = parse(json, fast, 1);
      const std::vector<std::string> want_one{"metadata meta {\"a\":[1,2]}",
                                              "events_begin",
                                              "build X:a@1000 pid 1 tid 2 n=7",
                                              "expect more",
                                              "build X:b!@2500 pid 1 tid main",
                                              "build i:c@4000 pid 3 tid 4",
                                              "base_time 5000 at " + std::to_string(base_at)};
      CHECK(one == want_one);
      // Batches of 1 MiB: simdjson alone reads the array as one; the direct path hands over
      // what it read before the escape, and simdjson the batch from there on.
      const std::vector<std::string> big = parse(json, fast, std::size_t{1} << 20);
      const std::vector<std::string> want_big =
          fast ? std::vector<std::string>{"metadata meta {\"a\":[1,2]}",
                                          "events_begin",
                                          "build X:a@1000 pid 1 tid 2 n=7",
                                          "expect more",
                                          "build X:b!@2500 pid 1 tid main i:c@4000 pid 3 tid 4",
                                          "base_time 5000 at " + std::to_string(base_at)}
               : std::vector<std::string>{
                     "metadata meta {\"a\":[1,2]}", "events_begin",
                     "build X:a@1000 pid 1 tid 2 n=7 X:b!@2500 pid 1 tid main i:c@4000 pid 3 tid 4",
                     "base_time 5000 at " + std::to_string(base_at)};
      CHECK(big == want_big);
    }
  }

  TEST_CASE("parse_text: a bare array, an empty one, and an error after a batch was built") {
    CHECK(parse(R"([{"ph":"i","name":"x","pid":1,"tid":1,"ts":0}])", true, 1) ==
          std::vector<std::string>{"events_begin", "build i:x@0 pid 1 tid 1"});
    CHECK(parse(R"({"traceEvents":[]})", true, 1) == std::vector<std::string>{"events_begin"});
    const std::string bad =
        R"([{"ph":"i","name":"x","pid":1,"tid":1,"ts":0},{"ph":"i","ts":"no"}])";
    for (const bool fast : {true, false}) {
      CAPTURE(fast);
      std::string buf = bad;
      buf.resize(bad.size() + tmod::text_padding, ' ');
      tmod::read_options o;
      o.fast_paths = fast;
      o.batch_bytes = 1;
      o.threads = 1;
      recording_sink sink;
      CHECK_THROWS_AS(
          ct::parse_text(std::span<char>(buf.data(), buf.size()), bad.size(), o, nullptr, sink),
          tmod::input_error);
      // The first record was handed over before the second failed.
      CHECK(sink.calls ==
            std::vector<std::string>{"events_begin", "build i:x@0 pid 1 tid 1", "expect more"});
    }
  }
}
