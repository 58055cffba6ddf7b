// Perfetto's native format: the writer (formats/perfetto_writer.hpp), the reader
// (formats/perfetto_reader.hpp) and the wire format (formats/protobuf.hpp). Hand-written text
// traces of tests/data/perfetto/ are encoded with protoc against Perfetto's own protos; what the
// writer writes is decoded by protoc and checked.
#include <doctest/doctest.h>
#include <simdjson.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <tracemodel/algo/analyze.hpp>
#include <tracemodel/formats/chrome_trace_reader.hpp>
#include <tracemodel/formats/chrome_trace_writer.hpp>
#include <tracemodel/formats/perfetto_reader.hpp>
#include <tracemodel/formats/perfetto_writer.hpp>
#include <tracemodel/formats/trace_file.hpp>
#include <tracemodel/testing/builder.hpp>
#include <tracemodel/testing/dump.hpp>

#include "../support/real_traces.hpp"
#include "../support/sanitized.hpp"

using namespace tracemodel;
namespace fs = std::filesystem;

namespace {

std::string data_dir() { return (fs::path(TRACEMODEL_TEST_DATA_DIR) / "perfetto").string(); }
fs::path work_dir() {
  const fs::path d = fs::path(TRACEMODEL_TEST_BINARY_DIR) / "perfetto";
  fs::create_directories(d);
  return d;
}
std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

/// protoc with Perfetto's protos: `--encode` or `--decode` of `in` into `out`.
void protoc(const std::string& mode, const fs::path& in, const fs::path& out) {
  const std::string cmd = "protoc -I \"" + data_dir() + "\" --" + mode +
                          "=perfetto.protos.Trace perfetto_trace.proto < \"" + in.string() +
                          "\" > \"" + out.string() + "\" 2>/dev/null";
  REQUIRE_MESSAGE(std::system(cmd.c_str()) == 0,
                  "protoc failed (Debian: protobuf-compiler): " << cmd);
}
/// The hand-written text trace `name`.textproto, encoded.
std::string encoded(const std::string& name) {
  const fs::path out = work_dir() / (name + ".pftrace");
  protoc("encode", fs::path(data_dir()) / (name + ".textproto"), out);
  return slurp(out);
}

/// The event, flow and metadata records of the table's Chrome trace, one a line.
std::string records(const event_table& t) {
  std::istringstream in(chrome_trace_string(t));
  std::string line, out;
  while (std::getline(in, line))
    if (line.starts_with("{\"ph\""))
      out += line.substr(0, line.size() - (line.back() == ',')) + "\n";
  return out;
}
/// A span of integers (an input's sizes or strides) as a vector, to compare.
template <class Span>
std::vector<std::int64_t> ints(const Span& s) {
  return {s.begin(), s.end()};
}
std::string anomalies(const event_table& t) {
  std::string out;
  for (std::size_t k = 0; k < t.anomalies.n.size(); ++k)
    if (t.anomalies.n[k] != 0)
      out += std::string(anomaly_names[k]) + " " + std::to_string(t.anomalies.n[k]) + "\n";
  return out;
}

}  // namespace

TEST_SUITE("formats") {
  TEST_CASE("perfetto reader: SDK traces (interning, incremental state, descriptors, args)") {
    const event_table t = read_perfetto_trace(encoded("sdk"));
    CHECK(
        records(t) ==
        "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":7,\"tid\":0,\"args\":{\"name\":\"python\"}"
        "}\n"
        "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":7,\"tid\":8,\"args\":{\"name\":\"main\"}}\n"
        "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::mm\",\"pid\":7,\"tid\":8,\"ts\":1.000,"
        "\"dur\":1.000,\"args\":{\"External id\":5,\"Input Dims\":[[2,3],[]],\"Input "
        "type\":[\"float\",\"Scalar\"],\"Concrete "
        "Inputs\":[\"\",\"1\"],\"flag\":true,\"ratio\":0.5,"
        "\"big\":\"18446744073709551615\",\"ptr\":\"0x1000\",\"dict\":{\"a\":1,\"b\":[\"x\"]},"
        "\"json\":{\"k\": [1, 2]}}}\n"
        "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"inner\",\"pid\":7,\"tid\":8,\"ts\":1.500,"
        "\"dur\":0.200,\"args\":{}}\n"
        "{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"cpu_instant_event\",\"name\":\"[memory]\",\"pid\":7,"
        "\"tid\":8,\"ts\":1.800,\"args\":{\"Device Type\":0,\"Device Id\":-1,\"Addr\":4096,"
        "\"Bytes\":256,\"Total Allocated\":0,\"Total Reserved\":0}}\n"
        "{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"user_annotation\",\"name\":\"other\",\"pid\":7,"
        "\"tid\":8,\"ts\":2.200,\"args\":{}}\n"
        "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"again\",\"pid\":7,\"tid\":8,\"ts\":2.300,"
        "\"dur\":0.000,\"args\":{\"finished\":false}}\n");
    // The op's inputs are inputs, not attributes: a tensor [2, 3] of float and the scalar 1.
    const auto ins = t.inputs_of(t.events[0]);
    REQUIRE(ins.size() == 2);
    CHECK(ins[0].kind == input_kind::tensor);
    CHECK(ints(t.sizes(ins[0])) == std::vector<std::int64_t>{2, 3});
    CHECK(ins[1].kind == input_kind::scalar);
    CHECK(ins[1].scalar.i == 1);
    // The packet of a sequence without its state and the ftrace packet are skipped, counted;
    // the op begun and never ended is unfinished.
    CHECK(anomalies(t) == "unfinished_op 1\nskipped_packet 2\n");
  }

  TEST_CASE("perfetto reader: Input Dims and Input Strides as their JSON text, interned or not") {
    const event_table t = read_perfetto_trace(encoded("dims_text"));
    CHECK(
        records(t) ==
        "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":7,\"tid\":0,\"args\":{\"name\":"
        "\"python\"}}\n"
        "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":7,\"tid\":8,\"args\":{\"name\":\"main\"}}\n"
        "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::cat\",\"pid\":7,\"tid\":8,\"ts\":1.000,"
        "\"dur\":1.000,\"args\":{\"Input Dims\":[[4,5],[[1],[2,3]],[]],\"Input type\":[\"float\","
        "\"TensorList\",\"Scalar\"],\"Input Strides\":[[20,1],[[1],[3,1]],[]]}}\n"
        "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"plain\",\"pid\":7,\"tid\":8,\"ts\":3.000,"
        "\"dur\":0.500,\"args\":{\"Input Dims\":[[6]],\"Input type\":[\"\"]}}\n"
        // Strings that are not such a text (one cut short, one empty) stay ordinary args.
        "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"odd\",\"pid\":7,\"tid\":8,\"ts\":4.000,"
        "\"dur\":0.500,\"args\":{\"Input Dims\":\"[[6],x]\",\"Input Strides\":\"\"}}\n");
    // The inputs themselves: a tensor, a list of two tensors (its entry, then theirs), a scalar.
    const auto ins = t.inputs_of(t.events[0]);
    REQUIRE(ins.size() == 5);
    CHECK(ins[4].kind == input_kind::scalar);
    CHECK(ins[0].kind == input_kind::tensor);
    CHECK(ins[1].kind == input_kind::tensor_list);
    CHECK(ins[1].rank == 2);
    CHECK(ints(t.sizes(ins[3])) == std::vector<std::int64_t>{2, 3});
    CHECK(ints(t.strides(ins[3])) == std::vector<std::int64_t>{3, 1});
  }

  TEST_CASE("perfetto reader: JSON values that are not JSON become strings, counted") {
    const event_table t = read_perfetto_trace(encoded("bad_json"));
    CHECK(records(t).find(
              "\"args\":{\"ok\":[1, {\"a\": null}],\"bad\":\"{{{\",\"list\":[\"[1,\",2]}") !=
          std::string::npos);
    CHECK(anomalies(t) == "bad_value 3\n");
    const std::string json = chrome_trace_string(t);
    CHECK(json.find("\"good\": {\"rank\": 1}") != std::string::npos);
    CHECK(json.find("\"broken\": \"{\\\"rank\\\": \"") != std::string::npos);
    simdjson::dom::parser parser;  // and the whole trace written from it is JSON
    CHECK(parser.parse(simdjson::padded_string(json)).error() == simdjson::SUCCESS);
  }

  TEST_CASE("perfetto reader: strings that are not UTF-8 are repaired as they are read, counted") {
    const event_table t = read_perfetto_trace(encoded("bad_utf8"));
    CHECK(anomalies(t) == "invalid_utf8 14\n");
    // (`~` stands for U+FFFD below)
    auto fffd = [](std::string text) {
      for (std::size_t at = text.find('~'); at != std::string::npos; at = text.find('~', at))
        text.replace(at, 1, "\xef\xbf\xbd");
      return text;
    };
    // Every string of the table is UTF-8: the JSON writer has nothing left to repair.
    for (name_id k{}; static_cast<std::size_t>(k) < t.strings.size();
         k = static_cast<name_id>(static_cast<std::uint32_t>(k) + 1))
      CHECK(detail::is_utf8(t.strings.view(k)));
    CHECK(records(t) ==
          fffd("{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":7,\"tid\":0,\"args\":{\"name\":"
               "\"python\"}}\n"
               "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":7,\"tid\":8,\"args\":{\"name\":"
               "\"ma~in\"}}\n"
               "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::~add\",\"pid\":7,\"tid\":8,"
               "\"ts\":1.000,\"dur\":1.000,\"args\":{\"Input Dims\":[[2],[]],\"Input type\":"
               "[\"fl~oat\",\"int\"],\"shape\":\"~~x\",\"n~\":\"s~\",\"d\":{\"k~\":\"w~\"},"
               "\"Concrete Inputs\":[\"c~\",1]}}\n"
               "{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"user~\",\"name\":\"mark~\",\"pid\":7,"
               "\"tid\":8,\"ts\":3.000,\"args\":{}}\n"
               "{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"in~line\",\"name\":\"mark\",\"pid\":7,"
               "\"tid\":8,\"ts\":4.000,\"args\":{}}\n"));
    const std::string json = chrome_trace_string(t);
    CHECK(json.find(fffd("\"k~\": \"v~~\"")) != std::string::npos);
    // Written to Perfetto and read again: nothing left to repair, the same trace.
    const fs::path out = work_dir() / "bad_utf8_again.pftrace";
    write_perfetto_trace_file(t, out.string());
    const event_table again = read_trace_file(out.string());
    CHECK(anomalies(again) == "");
    CHECK(chrome_trace_string(again) == json);
  }

  TEST_CASE("perfetto reader's cache: JSON verdicts and dims parses as computed afresh") {
    detail::perfetto::annotation_cache cache;
    // Short texts, JSON or not, more than its slots hold, met again and again in any order.
    std::mt19937_64 rng(3);
    std::vector<std::string> texts;
    for (int k = 0; k < 300; ++k) {
      std::string t = "[" + std::to_string(rng() % 1000) + "," + std::to_string(k) + ",1]";
      if (k % 3 == 0) t.pop_back();                       // not JSON
      if (k % 7 == 0) t += std::string(rng() % 30, ' ');  // some past the kept length
      texts.push_back(t);
    }
    for (int round = 0; round < 5000; ++round) {
      const std::string& t = texts[rng() % texts.size()];
      CHECK_MESSAGE(cache.is_json(t) == detail::is_json_value(t), t);
    }
    // A dims text's parse appended again at another place of the batch: the same dims.
    const std::string text = "[[64,32],[],[[2],[3,4]]]";
    detail::chrome_trace::batch b;
    b.ints.push_back(99);  // (the parse starts past other ints)
    REQUIRE(detail::chrome_trace::read_dims_text(text.data(), text.size(), 0, b) == text.size());
    const std::vector<detail::dims_entry> first(b.dims.begin(), b.dims.end());
    cache.keep_dims(text, b, 0, 1);
    CHECK(!cache.append_dims(std::string(text), b));  // (another place: not the same text)
    const std::size_t d0 = b.dims.size(), i0 = b.ints.size();
    REQUIRE(cache.append_dims(text, b));
    REQUIRE(b.dims.size() == d0 + first.size());
    for (std::size_t k = 0; k < first.size(); ++k) {
      CHECK(b.dims[d0 + k].list == first[k].list);
      CHECK(b.dims[d0 + k].count == first[k].count);
      CHECK(b.dims[d0 + k].first == first[k].first - 1 + i0);
    }
    CHECK(std::vector<std::int64_t>(b.ints.begin() + static_cast<std::ptrdiff_t>(i0),
                                    b.ints.end()) == std::vector<std::int64_t>{64, 32, 2, 3, 4});
  }

  TEST_CASE("perfetto writer: an op's dims are their JSON text, each text interned once") {
    testing::table_builder b;
    b.op("aten::linear", 1000, 2000, 5, 42).tensor("float", {64, 32});
    b.op("aten::linear", 3000, 4000, 5, 42).tensor("float", {64, 32});
    b.op("aten::relu", 5000, 6000, 5, 42).tensor("float", {7});
    // More digits than the readers' text path takes: written as nested arrays.
    b.op("aten::huge", 7000, 8000, 5, 42).tensor("float", {1'000'000'000'000'000'000});
    const event_table t = b.take();
    const fs::path out = work_dir() / "dims.pftrace";
    write_perfetto_trace_file(t, out.string());
    const fs::path text = work_dir() / "dims.txt";
    protoc("decode", out, text);
    const std::string decoded = slurp(text);
    auto count = [&](std::string_view what) {
      std::size_t n = 0;
      for (std::size_t at = decoded.find(what); at != std::string::npos;
           at = decoded.find(what, at + 1))
        ++n;
      return n;
    };
    CHECK(count("str: \"[[64,32]]\"") == 1);
    CHECK(count("str: \"[[7]]\"") == 1);
    CHECK(count("string_value_iid:") == 3 + 4);  // the three texts' uses, and "float" four times
    CHECK(count("int_value: 1000000000000000000") == 1);
    CHECK(chrome_trace_string(read_trace_file(out.string())) == chrome_trace_string(t));
  }

  TEST_CASE("perfetto reader: clocks, snapshots and incremental sequence clocks") {
    const event_table t = read_perfetto_trace(encoded("clocks"));
    CHECK(records(t) ==
          "{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"cpu_op\",\"name\":\"c\",\"pid\":1,\"tid\":2,"
          "\"ts\":999.000,\"args\":{}}\n"
          "{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"cpu_op\",\"name\":\"a\",\"pid\":1,\"tid\":2,"
          "\"ts\":1001.000,\"args\":{}}\n"
          "{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"cpu_op\",\"name\":\"b\",\"pid\":1,\"tid\":2,"
          "\"ts\":2001.100,\"args\":{}}\n"
          "{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"cpu_op\",\"name\":\"boottime\",\"pid\":1,\"tid\":2,"
          "\"ts\":3000.500,\"args\":{}}\n"
          "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"d\",\"pid\":1,\"tid\":2,\"ts\":3005.000,"
          "\"dur\":2.000,\"args\":{}}\n");
    CHECK(anomalies(t).empty());
  }

  TEST_CASE("perfetto reader: flows of both generations, correlation ids, stream tracks") {
    const event_table t = read_perfetto_trace(encoded("flows"));
    REQUIRE(t.size() == 6);
    CHECK(t.name(3) == "gemm");
    CHECK(t.events[3].pid == 0);
    CHECK(t.key_label(t.events[3].tid) == "stream 7");  // a named track under the GPU's process
    CHECK(t.links.size() == 2);
    CHECK(t.links[0] == flow_link{flow_kind::fwd_bwd, 100, 0, 4});
    CHECK(t.links[1] == flow_link{flow_kind::fwd_bwd, 200, 2, 5});
    const auto& launch = t.events[1].get<event_kind::device_activity>();
    const auto& kernel = t.events[3].get<event_kind::device_activity>();
    CHECK(launch.correlation_id == 7);
    CHECK(kernel.correlation_id == 7);
    CHECK(
        (launch.flow_type == flow_kind::async_cpu_gpu && launch.flow_id == 7 && launch.flow_start));
    CHECK((kernel.flow_type == flow_kind::async_cpu_gpu && kernel.flow_id == 7 &&
           !kernel.flow_start));
    CHECK(anomalies(t).empty());
  }

  TEST_CASE("perfetto reader: counters, incremental counters, extra values, thread time") {
    std::vector<counter_series> c;
    const event_table t = read_perfetto_trace(encoded("counters"), {}, &c);
    CHECK(t.size() == 1);
    REQUIRE(c.size() == 3);
    auto points = [](const counter_series& s) {
      std::string out;
      for (const counter_point& p : s.points)
        out += std::to_string(p.ts) + "=" + fmt::format("{}", p.value) + " ";
      return out;
    };
    CHECK(c[0].track == "queue");
    CHECK(c[0].process == 7);
    CHECK(!c[0].counts);  // 2.5 among its values
    CHECK(points(c[0]) == "100=3 200=2.5 500=9 ");
    CHECK(c[1].track == "allocated");
    CHECK(c[1].counts);
    CHECK(points(c[1]) == "300=4096 400=6144 ");  // KiB, summed (incremental)
    CHECK(c[2].track == "thread_time 8");
    CHECK(points(c[2]) == "400=50000 500=70000 ");  // absolute 50 us, then +20 us
    // Each sample is a record the table does not model, as a JSON counter record is.
    CHECK(anomalies(t) == "unsupported_record 7\n");
  }

  TEST_CASE("perfetto reader: legacy events, thread descriptors, microseconds, the bundle") {
    const event_table t = read_perfetto_trace(encoded("legacy"));
    CHECK(records(t) ==
          "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":3,\"tid\":4,\"args\":{\"name\":"
          "\"worker\"}}\n"
          "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"x\",\"pid\":3,\"tid\":4,\"ts\":1010.000,"
          "\"dur\":5.000,\"args\":{}}\n"
          "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"y\",\"pid\":3,\"tid\":4,\"ts\":1030.000,"
          "\"dur\":1.000,\"args\":{}}\n"
          "{\"ph\":\"i\",\"s\":\"p\",\"cat\":\"cpu_op\",\"name\":\"i\",\"pid\":3,\"tid\":4,"
          "\"ts\":2000.000,\"args\":{}}\n"
          "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"z\",\"pid\":9,\"tid\":10,\"ts\":2100.000,"
          "\"dur\":2.000,\"args\":{}}\n"
          "{\"ph\":\"s\",\"id\":42,\"pid\":3,\"tid\":4,\"ts\":1010.000,\"cat\":\"fwdbwd\","
          "\"name\":\"fwdbwd\"}\n"
          "{\"ph\":\"f\",\"id\":42,\"pid\":3,\"tid\":4,\"ts\":1030.000,\"cat\":\"fwdbwd\","
          "\"name\":\"fwdbwd\",\"bp\":\"e\"}\n");
    REQUIRE(t.info.metadata.size() == 2);
    CHECK(t.strings.view(t.info.metadata[0].first) == "distributedInfo");
    CHECK(t.strings.view(t.info.metadata[0].second) == "{\"rank\": 1}");
    CHECK(t.strings.view(t.info.metadata[1].second) == "\"node-3\"");
    CHECK(anomalies(t) == "unsupported_record 1\n");  // the async `b` event
  }

  TEST_CASE("perfetto reader: custom, process-scoped, child and undescribed tracks") {
    const event_table t = read_perfetto_trace(encoded("tracks"));
    std::string threads;
    for (const auto& e : t.events) {
      const auto key = [&](std::uint64_t k) {
        return event_table::is_string_key(k) ? std::string(t.key_label(k)) : std::to_string(k);
      };
      threads += std::string(t.name(e)) + "@" + key(static_cast<std::uint64_t>(e.pid)) + "/" +
                 key(e.tid) + " ";
    }
    CHECK(threads ==
          "root@Spans/Spans child@Spans/step on process@7/async lane@7/8 nowhere@track 99/track 99 "
          "k1@7/8 k2@7/8 ");
    // Overlapping slices on two tracks of one thread: each end closes its own track's slice.
    CHECK(t.events[5].end_ns() == 700);
    CHECK(t.events[6].end_ns() == 800);
    CHECK(anomalies(t) == "unmatched_end 1\n");
  }

  TEST_CASE("perfetto reader: a track's made-up name lasts past the first batch of records") {
    // An undescribed track's events are named after it ("track 5"); batches of 4096 records are
    // built and recycled, and annotations' JSON text is kept in the batch being filled: the
    // track's name must not live there.
    auto varint = [](std::string& o, std::uint64_t v) {
      for (; v >= 0x80; v >>= 7) o.push_back(static_cast<char>((v & 0x7f) | 0x80));
      o.push_back(static_cast<char>(v));
    };
    auto num = [&](std::string& o, std::uint32_t field, std::uint64_t v) {
      varint(o, std::uint64_t{field} << 3);
      varint(o, v);
    };
    auto bytes = [&](std::string& o, std::uint32_t field, const std::string& b) {
      varint(o, (std::uint64_t{field} << 3) | 2);
      varint(o, b.size());
      o += b;
    };
    std::string trace, packet, desc;
    num(desc, 1, 5);  // TrackDescriptor.uuid, no name
    bytes(packet, 60, desc);
    num(packet, 10, 1);
    num(packet, 13, 1);  // SEQ_INCREMENTAL_STATE_CLEARED
    bytes(trace, 1, packet);
    const int slices = 20000;  // (five batches: the first is filled again from the third on)
    for (int k = 0; k < slices; ++k) {
      std::string begin, end, note, entry;
      bytes(entry, 10, "k");  // a dict annotation: its JSON is text the batch keeps
      num(entry, 4, static_cast<std::uint64_t>(k));
      bytes(note, 10, "args");
      bytes(note, 11, entry);
      std::string ev;
      num(ev, 9, 1);  // SLICE_BEGIN
      num(ev, 11, 5);
      bytes(ev, 23, "op");
      bytes(ev, 4, note);
      num(begin, 8, 1000 + 20 * static_cast<std::uint64_t>(k));
      bytes(begin, 11, ev);
      num(begin, 10, 1);
      bytes(trace, 1, begin);
      std::string ev2;
      num(ev2, 9, 2);  // SLICE_END
      num(ev2, 11, 5);
      num(end, 8, 1010 + 20 * static_cast<std::uint64_t>(k));
      bytes(end, 11, ev2);
      num(end, 10, 1);
      bytes(trace, 1, end);
    }
    read_options o;
    o.threads = 1;
    const event_table t = read_perfetto_trace(trace, o);
    REQUIRE(t.size() == static_cast<std::size_t>(slices));
    std::size_t named = 0;
    for (const auto& e : t.events)
      named += event_table::is_string_key(static_cast<std::uint64_t>(e.pid)) &&
               t.key_label(static_cast<std::uint64_t>(e.pid)) == "track 5";
    CHECK(named == static_cast<std::size_t>(slices));
    const std::string all = records(t);
    CHECK(all.find("\"k\":19999") != std::string::npos);
    CHECK(all.find("\"k\":0}") != std::string::npos);
  }

  TEST_CASE("perfetto reader: bad input is an input_error naming its byte, never a crash") {
    const std::string good = encoded("sdk");
    CHECK_THROWS_AS(read_perfetto_trace(""), input_error);
    // Every prefix of a trace is read (a cut at a packet's end) or refused with the offset of
    // the cut packet; never more than the whole.
    std::size_t refused = 0;
    for (std::size_t n = 1; n < good.size(); ++n) {
      try {
        (void)read_perfetto_trace(std::string_view(good).substr(0, n));
      } catch (const input_error& e) {
        ++refused;
        CHECK(e.offset() < n);
      }
    }
    CHECK(refused > good.size() / 2);
    // Flipped bytes: an error or a table, never a crash (the sanitizers watch).
    std::mt19937 rng(11);
    for (int round = 0; round < tmtest::scaled(400); ++round) {
      std::string bad = good;
      for (int k = 0; k < 3; ++k) bad[rng() % bad.size()] = static_cast<char>(rng());
      try {
        (void)read_perfetto_trace(bad);
      } catch (const input_error&) {
      }
    }
    // A field running past its message, named at its start.
    const std::string past("\x0a\x05\x40\x01\x5a\x09\x48", 7);
    try {
      (void)read_perfetto_trace(past);
      FAIL("read a packet that runs past the file");
    } catch (const input_error& e) {
      CHECK(e.offset() == 4);  // the TrackEvent field of the packet, at byte 4
      CHECK(std::string(e.what()).find("runs past") != std::string::npos);
    }
  }

  TEST_CASE(
      "perfetto writer: protoc decodes it with no unknown field, and interning, times, flows") {
    testing::table_builder b;
    b.op("aten::linear", 1000, 9000, 5, 42).seq(3).tensor("float", {64, 32});
    b.op("aten::mm", 2000, 3000, 5, 42);
    b.device("cudaLaunchKernel", activity_type::cuda_runtime, 2100, 2200, 5, 42)
        .correlation(9)
        .flow(9, true);
    b.device("gemm", activity_type::kernel, 4000, 6000, 7, 0).correlation(9).flow(9, false);
    b.device("gemm", activity_type::kernel, 5000, 7000, 7, 0).correlation(10);  // overlaps
    b.op("MmBackward0", 10000, 11000, 6, 42).seq(3, 5);
    event_table t = b.take();
    t.links.push_back({flow_kind::fwd_bwd, 77, 0, 5});
    t.set_thread_name(42, 5, "main");
    export_view v{t};
    v.counters.push_back({"queue", 0, "length", true, {{4000, 1}, {5000, 2}, {7000, 0}}});
    const fs::path out = work_dir() / "written.pftrace";
    write_perfetto_trace_file(v, out.string());
    const fs::path text = work_dir() / "written.txt";
    protoc("decode", out, text);

    // Walk the decoded text: interned names by iid, times summed per sequence (the clock is
    // incremental), each TrackEvent's (time, type, name, track) and flows.
    std::ifstream in(text);
    std::string line;
    std::map<std::string, std::string> names;  // iid -> name of the last entry
    std::map<std::string, std::int64_t> now;   // sequence -> time
    std::vector<std::string> events, lanes;
    std::map<std::string, std::string> parents;  // track uuid -> parent uuid
    std::set<std::string> unknown;
    std::vector<std::string> stack;
    std::string ts, seq, type, name, track, flows, uuid, parent, iid;
    while (std::getline(in, line)) {
      const std::size_t a = line.find_first_not_of(' ');
      if (a == std::string::npos) continue;
      const std::string l = line.substr(a);
      if (!l.empty() && std::isdigit(static_cast<unsigned char>(l[0]))) unknown.insert(l);
      if (l.ends_with(" {")) {
        stack.push_back(l.substr(0, l.size() - 2));
        if (stack.back() == "packet") ts = seq = type = name = track = flows = "";
        continue;
      }
      if (l == "}") {
        const std::string closed = stack.back();
        stack.pop_back();
        if (closed == "track_descriptor" && !parent.empty()) parents[uuid] = parent;
        if (closed == "track_descriptor") uuid = parent = "";
        if (closed == "packet" && !type.empty()) {
          now[seq] += std::stoll(ts);
          if (type != "TYPE_COUNTER")
            events.push_back(std::to_string(now[seq]) + " " + type + " " + names[name] + " " +
                             track + flows);
        }
        continue;
      }
      const std::string key = l.substr(0, l.find(':'));
      const std::string value = l.substr(l.find(':') + 2);
      const std::string in_msg = stack.empty() ? "" : stack.back();
      if (in_msg == "packet" && key == "timestamp") ts = value;
      if (in_msg == "packet" && key == "trusted_packet_sequence_id") seq = value;
      if (in_msg == "track_event" && key == "type") type = value;
      if (in_msg == "track_event" && key == "name_iid") name = value;
      if (in_msg == "track_event" && key == "track_uuid") track = value;
      if (in_msg == "track_event" && key == "flow_ids") flows += " out:" + value;
      if (in_msg == "track_event" && key == "terminating_flow_ids") flows += " in:" + value;
      if (in_msg == "event_names" && key == "iid") iid = value;
      if (in_msg == "event_names" && key == "name") names[iid] = value.substr(1, value.size() - 2);
      if (in_msg == "track_descriptor" && key == "uuid") uuid = value;
      if (in_msg == "track_descriptor" && key == "parent_uuid") parent = value;
    }
    CHECK(unknown.empty());
    // Tracks: process 42 (1) > thread 5 (2); process 0 (3) > thread 7 (4); process 42 > thread 6
    // (5); thread 7 > a child track (6) for the kernel that overlaps the first; process 0 > the
    // counter track (7).
    CHECK(parents == std::map<std::string, std::string>{
                         {"2", "1"}, {"4", "3"}, {"5", "1"}, {"6", "4"}, {"7", "3"}});
    const std::string fwd = std::to_string(77 | (std::uint64_t{1} << 62));
    CHECK(events == std::vector<std::string>{
                        "1000 TYPE_SLICE_BEGIN aten::linear 2 out:" + fwd,
                        "2000 TYPE_SLICE_BEGIN aten::mm 2",
                        "2100 TYPE_SLICE_BEGIN cudaLaunchKernel 2 out:9",
                        "2200 TYPE_SLICE_END  2",
                        "3000 TYPE_SLICE_END  2",
                        "4000 TYPE_SLICE_BEGIN gemm 4 in:9",
                        "5000 TYPE_SLICE_BEGIN gemm 6",
                        "6000 TYPE_SLICE_END  4",
                        "7000 TYPE_SLICE_END  6",
                        "9000 TYPE_SLICE_END  2",
                        "10000 TYPE_SLICE_BEGIN MmBackward0 5 in:" + fwd,
                        "11000 TYPE_SLICE_END  5",
                    });
    // And it reads back into the table it was written from, counters included.
    std::vector<counter_series> c;
    const event_table back = read_trace_file(out.string(), {}, &c);
    CHECK(chrome_trace_string(back) == chrome_trace_string(t));
    REQUIRE(c.size() == 1);
    CHECK(c[0].track == "queue");
    CHECK(c[0].value_name == "length");
    CHECK(c[0].process == 0);
    CHECK(c[0].points.size() == 3);
    CHECK(c[0].points[1].ts == 5000);
    CHECK(c[0].points[1].value == 2);
  }

  TEST_CASE("perfetto: every shared Chrome trace converts to Perfetto and back, the same table") {
    std::vector<std::pair<std::string, bool>> traces;  // (path, analysed too)
    for (const char* name : tmtest::real_traces) traces.emplace_back(name, true);
    for (const char* name :
         {"kineto/nccl_parser_config_nccl_data.json.gz",
          "kineto/negative_queue_length_values_check_rank0.json.gz",
          "kineto/trace_compare_base_base.json.gz", "kineto/trace_compare_test_test.json.gz",
          "kineto/trace_diff_control_control.json.gz", "kineto/trace_filter_sampled_rank-0.json.gz",
          "kineto/trace_filter_sampled_rank-1.json.gz"})
      traces.emplace_back(name, false);
    std::uint64_t json_bytes = 0, perfetto_bytes = 0;
    for (const auto& trace : traces) {
      const std::string& name = trace.first;
      const bool analysed = trace.second;
      INFO(name);
      const std::string path = (fs::path(TRACEMODEL_TEST_DATA_DIR) / name).string();
      json_bytes += load_trace_text(path).size();
      event_table a = read_chrome_trace_file(path);
      const std::string pf = perfetto_trace_string(a);
      perfetto_bytes += pf.size();
      // Under a sanitizer the large ones are only measured (the small ones are read back).
      if (tmtest::sanitized && !analysed) continue;
      event_table b = read_perfetto_trace(pf);
      // The same events, args, inputs, metadata and links (ns-exact times), read from the
      // .pftrace and from the JSON written from it.
      const std::string ja = chrome_trace_string(a);
      CHECK(chrome_trace_string(b) == ja);
      CHECK(b.links == a.links);
      if (!analysed) continue;
      event_table c = read_chrome_trace_string(chrome_trace_string(b));
      CHECK(chrome_trace_string(c) == ja);
      // The same analysis: trees and links.
      const analysis x = analyze(a), y = analyze(b);
      CHECK(y.fwd_bwd.links == x.fwd_bwd.links);
      CHECK(y.device.links() == x.device.links());
      CHECK(testing::tree_text(b) == testing::tree_text(a));
      CHECK(b.links == a.links);
    }
    // Together a quarter of the JSON's bytes at most.
    MESSAGE("Perfetto: ", perfetto_bytes, " bytes for ", json_bytes, " of JSON");
    CHECK(static_cast<double>(perfetto_bytes) <= 0.25 * static_cast<double>(json_bytes));
  }

  TEST_CASE("perfetto: random tables (overlaps, instants, flows, inputs) round-trip") {
    std::mt19937_64 rng(5);
    for (int round = 0; round < tmtest::scaled(40); ++round) {
      testing::table_builder b;
      const int n = 1 + static_cast<int>(rng() % 60);
      std::uint64_t flow = 1;
      for (std::uint64_t k = 0; k < static_cast<std::uint64_t>(n); ++k) {
        const std::int64_t start = static_cast<std::int64_t>(rng() % 5000);
        const std::int64_t end =
            start + static_cast<std::int64_t>(rng() % 700) - 20;  // some < start
        const auto tid = static_cast<thread_key>(1 + rng() % 3);
        switch (rng() % 5) {
          case 0:
            b.op("op" + std::to_string(rng() % 7), start, end, tid, 1).tensor("float", {2, 3});
            break;
          case 1:
            b.op("open", start, no_end_ns, tid, 1);
            break;
          case 2:
            b.device("kernel", activity_type::kernel, start, end, 7, 0).correlation(k);
            break;
          case 3:
            b.allocation(0x1000 + k, 64, start, tid);
            break;
          default:
            b.device("cudaLaunchKernel", activity_type::cuda_runtime, start, end, tid, 1)
                .correlation(k)
                .flow(flow++, true);
            break;
        }
      }
      // JSON first: what a reader of either format builds from the same events.
      const event_table a = read_chrome_trace_string(chrome_trace_string(b.take()));
      const event_table p = read_perfetto_trace(perfetto_trace_string(a));
      INFO("round ", round);
      CHECK(records(p) == records(a));
      CHECK(p.links == a.links);
    }
  }

  TEST_CASE("perfetto: gzip files, and formats told apart by content") {
    testing::table_builder b;
    b.op("aten::add", 100, 200).op("aten::mul", 120, 150);
    const event_table t = b.take();
    const fs::path gz = work_dir() / "named_wrong.json.gz";  // a Perfetto trace, misnamed
    {
      trace_file_sink f(gz.string());
      write_perfetto_trace(export_view{t}, f.as_sink());
      f.commit();
    }
    CHECK(sniff_trace_format(gz.string()) == trace_format::perfetto);
    CHECK(chrome_trace_string(read_trace_file(gz.string())) == chrome_trace_string(t));
    const fs::path js = work_dir() / "plain.pftrace";  // JSON, misnamed
    write_chrome_trace_file(t, js.string());
    CHECK(sniff_trace_format(js.string()) == trace_format::chrome_json);
    CHECK(chrome_trace_string(read_trace_file(js.string())) == chrome_trace_string(t));
    CHECK(looks_like_perfetto(perfetto_trace_string(t)));
    CHECK(!looks_like_perfetto("{\"traceEvents\":[]}"));
    CHECK(!looks_like_perfetto(" [ ]"));
    // A JSON file may start with a line feed, the byte a Perfetto trace starts with.
    CHECK(!looks_like_perfetto("\n{\n  \"schemaVersion\": 1,\n  \"traceEvents\": []\n}\n"));
    CHECK(!looks_like_perfetto("\n[\n]"));
    CHECK(!looks_like_perfetto("\n"));
  }

  TEST_CASE("perfetto writer: times before 0 ns are refused") {
    testing::table_builder b;
    b.op("early", -5, 10);
    CHECK_THROWS_AS(perfetto_trace_string(b.take()), usage_error);
  }
}
