// The reader's two-thread reads against the serial read: with the direct path, stretches of the
// events array cut at guessed element starts and parsed on both threads; without it, a producer
// parsing batches through simdjson ahead of the thread that builds the table. The same tables,
// the same errors at the same offsets, progress reports rising to the same end; a consumer that
// fails stops the other thread. Small batches make many hand-overs even on small inputs;
// ThreadSanitizer runs this group.
#include <doctest/doctest.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <tracemodel/formats/chrome_trace_reader.hpp>
#include <tracemodel/formats/chrome_trace_writer.hpp>
#include <tracemodel/formats/perfetto_reader.hpp>
#include <tracemodel/formats/perfetto_writer.hpp>

#include "../support/json.hpp"
#include "../support/real_traces.hpp"

#if TRACEMODEL_BIG_ALLOC_MMAP
#include <fcntl.h>
#include <unistd.h>
#endif

namespace tmod = tracemodel;

namespace {

tmod::read_options options(bool parallel, std::size_t batch_bytes) {
  tmod::read_options o;
  o.batch_bytes = batch_bytes;
  o.threads = parallel ? 2 : 1;
  o.parallel_threshold = 0;
  return o;
}

/// Everything a read produces that can differ: the written trace (events, args, inputs, flows,
/// metadata), the anomaly counts and the links.
struct outcome {
  std::string trace;
  tmod::anomaly_counts anomalies;
  std::size_t links = 0;
  std::vector<std::pair<std::size_t, std::size_t>> progress;
  std::string error;
  std::size_t error_offset = 0;
};

outcome read(std::string text, bool parallel, std::size_t batch_bytes, bool fast_paths = true) {
  outcome o;
  tmod::read_options opt = options(parallel, batch_bytes);
  opt.fast_paths = fast_paths;
  opt.progress = [&o](std::size_t at, std::size_t total) { o.progress.emplace_back(at, total); };
  try {
    const tmod::event_table t = tmod::read_chrome_trace(text, text.size(), opt);
    o.trace = tmod::chrome_trace_string(t);
    o.anomalies = t.anomalies;
    o.links = t.links.size();
  } catch (const tmod::input_error& e) {
    o.error = e.what();
    o.error_offset = e.offset();
  }
  return o;
}

void check_same(const outcome& serial, const outcome& parallel) {
  CHECK(parallel.error == serial.error);
  CHECK(parallel.error_offset == serial.error_offset);
  CHECK(parallel.trace == serial.trace);
  CHECK(parallel.anomalies.n == serial.anomalies.n);
  CHECK(parallel.links == serial.links);
  // The serial read cuts a batch where its direct path hands a record to simdjson, so the
  // reports differ in number; they rise to the same end.
  for (const outcome* o : {&serial, &parallel}) {
    for (std::size_t k = 1; k < o->progress.size(); ++k) {
      CHECK(o->progress[k].first > o->progress[k - 1].first);
      CHECK(o->progress[k].second == o->progress[0].second);
    }
  }
  if (serial.error.empty()) {
    REQUIRE(!serial.progress.empty());
    REQUIRE(!parallel.progress.empty());
    CHECK(parallel.progress.back() == serial.progress.back());
  }
}

/// A trace of `n` records of every kind the reader builds: ops with inputs and args of every
/// JSON type, begin/end pairs, instants, runtime calls and kernels with ac2g flows, fwdbwd
/// flows, metadata, string thread ids, escaped names, and a few anomalies. One record per
/// element of the result.
std::vector<std::string> make_records(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  auto pick = [&](int k) { return static_cast<int>(rng() % static_cast<unsigned>(k)); };
  std::vector<std::string> r;
  r.push_back(R"({"ph":"M","name":"process_name","pid":7,"tid":0,"args":{"name":"trainer"}})");
  r.push_back(
      R"({"ph":"M","name":"thread_name","pid":7,"tid":"stream \"7\"","args":{"name":"s"}})");
  long ts = 1000;
  int corr = 1, flow = 1;
  while (r.size() < n) {
    ts += 1 + pick(5);
    const std::string t = std::to_string(ts) + "." + std::to_string(pick(1000));
    switch (pick(9)) {
      case 0:
      case 1:
        r.push_back(
            R"({"ph":"X","cat":"cpu_op","name":"aten::mm","pid":7,"tid":)" +
            std::to_string(1 + pick(3)) + R"(,"ts":)" + t + R"(,"dur":)" +
            std::to_string(pick(40)) + R"(,"args":{"External id":)" + std::to_string(r.size()) +
            R"(,"Sequence number":)" + std::to_string(pick(50)) +
            R"(,"Fwd thread id":1,"Input Dims":[[4,8],[8,2],[],[[1],[2,3]]],)"
            R"("Input type":["float","float","Scalar","TensorList"],)"
            R"("Input Strides":[[8,1],[2,1],[],[[1],[3,1]]],"Concrete Inputs":["","","2.5",""],)"
            R"("flag":true,"none":null,"ratio":0.25,"big":18446744073709551615,"obj":{"a":[1,{"b":2}]}}})");
        break;
      case 2:
        r.push_back(
            R"({"ph":"X","cat":"user_annotation","name":"step \u00e9 \"q\"","pid":7,"tid":1,"ts":)" +
            t + R"(,"dur":)" + std::to_string(pick(3) == 0 ? -1 : 50) + "}");
        break;
      case 3:
        r.push_back(R"({"ph":"B","name":"region","pid":7,"tid":"worker","ts":)" + t + "}");
        r.push_back(R"({"ph":"E","pid":7,"tid":"worker","ts":)" + std::to_string(ts + 3) + "}");
        break;
      case 4:
        r.push_back(
            R"({"ph":"i","s":"t","cat":"cpu_instant_event","name":"[memory]","pid":7,"tid":1,"ts":)" +
            t +
            R"(,"args":{"Addr":4096,"Bytes":256,"Total Allocated":1024,"Device Type":0,"Device Id":-1}})");
        break;
      case 5:
      case 6: {
        const std::string c = std::to_string(corr++);
        r.push_back(
            R"({"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":7,"tid":1,"ts":)" +
            t + R"(,"dur":2,"args":{"correlation":)" + c + "}}");
        r.push_back(R"({"ph":"s","id":)" + c + R"(,"pid":7,"tid":1,"ts":)" + t +
                    R"(,"cat":"ac2g","name":"ac2g"})");
        const std::string k = std::to_string(ts + 4);
        r.push_back(R"({"ph":"X","cat":"kernel","name":"gemm","pid":0,"tid":"stream \"7\"","ts":)" +
                    k + R"(,"dur":3,"args":{"correlation":)" + c +
                    R"(,"device":0,"stream":7,"grid":[1,2,3]}})");
        r.push_back(R"({"ph":"f","id":)" + c + R"(,"pid":0,"tid":"stream \"7\"","ts":)" + k +
                    R"(,"cat":"ac2g","name":"ac2g","bp":"e"})");
        break;
      }
      case 7: {
        const std::string id = std::to_string(flow++);
        r.push_back(R"({"ph":"X","cat":"cpu_op","name":"fwd","pid":7,"tid":1,"ts":)" + t +
                    R"(,"dur":1})");
        r.push_back(R"({"ph":"s","id":)" + id + R"(,"pid":7,"tid":1,"ts":)" + t +
                    R"(,"cat":"fwdbwd","name":"fwdbwd"})");
        const std::string b = std::to_string(ts + 2);
        r.push_back(R"({"ph":"X","cat":"cpu_op","name":"bwd","pid":7,"tid":2,"ts":)" + b +
                    R"(,"dur":1})");
        r.push_back(R"({"ph":"f","id":)" + id + R"(,"pid":7,"tid":2,"ts":)" + b +
                    R"(,"cat":"fwdbwd","name":"fwdbwd","bp":"e"})");
        break;
      }
      default:
        r.push_back(R"({"ph":"C","name":"counter","pid":7,"ts":)" + t + R"(,"args":{"v":1}})");
        break;
    }
  }
  return r;
}

/// The text with a line break (and some indentation) after every ',' outside strings, as
/// pretty printers write: a '{' that follows one inside an event (an array of objects) is where
/// the parallel read's guess of an element start goes wrong.
std::string spread(const std::string& text, unsigned seed) {
  std::mt19937 rng(seed);
  std::string out;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    out += c;
    if (in_string) {
      if (c == '\\')
        out += text[++i];
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == ',') {
      out += '\n';
      out.append(rng() % 5, ' ');
    }
  }
  return out;
}

/// The text without its line breaks: one line, nowhere to cut.
std::string one_line(std::string text) {
  std::erase(text, '\n');
  return text;
}

std::string join(const std::vector<std::string>& records) {
  std::string s =
      "{\"schemaVersion\":1,\"baseTimeNanoseconds\":1700000000000000000,\"traceEvents\":[\n";
  for (std::size_t i = 0; i < records.size(); ++i) {
    if (i > 0) s += ",\n";
    s += records[i];
  }
  s += "\n]}";
  return s;
}

}  // namespace

TEST_SUITE("concurrency") {
  TEST_CASE("parallel read: every real trace reads as the serial read does") {
    for (const char* f : tmtest::real_traces) {
      INFO(f);
      const std::string text = tmtest::read_file(tmtest::data_path(f));
      const outcome serial = read(text, false, 4096);
      REQUIRE(serial.error.empty());
      check_same(serial, read(text, true, 4096));
      // Default batches: the same table again.
      CHECK(read(text, true, std::size_t{1} << 20).trace == serial.trace);
    }
  }

  TEST_CASE("parallel read: a Perfetto trace decoded beside its building is the serial read") {
    // Decoded on a second thread while the first builds, batch by batch.
    const tmod::event_table json = tmod::read_chrome_trace_file(
        tmtest::data_path("kineto/trace_filter_sampled_rank-0.json.gz"));
    const std::string bytes = tmod::perfetto_trace_string(json);
    REQUIRE(json.size() > 4096);  // more than one batch
    tmod::read_options one, two;
    one.threads = 1;
    two.threads = 2;
    two.parallel_threshold = 0;
    const std::string serial = tmod::chrome_trace_string(tmod::read_perfetto_trace(bytes, one));
    CHECK(serial == tmod::chrome_trace_string(json));
    CHECK(tmod::chrome_trace_string(tmod::read_perfetto_trace(bytes, two)) == serial);
    // An error late in the file stops both threads, and is the serial read's.
    std::string cut = bytes.substr(0, bytes.size() - 3);
    std::string serial_error, parallel_error;
    try {
      (void)tmod::read_perfetto_trace(cut, one);
    } catch (const tmod::input_error& e) {
      serial_error = e.what();
    }
    try {
      (void)tmod::read_perfetto_trace(cut, two);
    } catch (const tmod::input_error& e) {
      parallel_error = e.what();
    }
    CHECK(!serial_error.empty());
    CHECK(parallel_error == serial_error);
  }

  TEST_CASE("parallel read: a generated trace of every record kind, in batches of any size") {
    const std::string text = join(make_records(3000, 1));
    const outcome serial = read(text, false, std::size_t{1} << 20);
    REQUIRE(serial.error.empty());
    CHECK(serial.links > 0);
    CHECK(serial.anomalies[tmod::anomaly::end_before_start] > 0);
    CHECK(serial.anomalies[tmod::anomaly::unsupported_record] > 0);
    for (const std::size_t batch :
         {std::size_t{1}, std::size_t{300}, std::size_t{4096}, std::size_t{65536}}) {
      INFO("batch bytes " << batch);
      const outcome s = read(text, false, batch);
      CHECK(s.trace == serial.trace);
      const outcome parallel = read(text, true, batch);
      check_same(s, parallel);
      // Without the direct path, the serial read cuts the batches the two-thread pipeline cuts.
      const outcome simdjson_only = read(text, false, batch, false);
      const outcome pipeline = read(text, true, batch, false);
      check_same(simdjson_only, pipeline);
      CHECK(simdjson_only.progress == pipeline.progress);
      check_same(s, pipeline);
    }
  }

  TEST_CASE("parallel read: errors in any batch are the serial read's errors, at its offsets") {
    const std::vector<std::string> good = make_records(2000, 2);
    // A fault in record k, early, in the middle and last.
    for (const std::size_t k : {std::size_t{2}, std::size_t{1000}, good.size() - 1}) {
      const std::pair<const char*, std::string> faults[] = {
          {"number out of range", R"({"ph":"X","ts":1e999})"},
          {"unknown ph", R"({"ph":"XY","ts":1})"},
          {"wrong type", R"({"ph":"X","ts":1,"name":7})"},
          {"invalid JSON", R"({"ph":"X","ts":1,,"dur":1})"},
          {"too deep", R"({"ph":"X","ts":1,"args":{"a":)" + std::string(2000, '[') +
                           std::string(2000, ']') + "}}"},
          {"not an object", "[1]"},
      };
      for (const auto& fault : faults) {  // (clang 14 cannot capture a structured binding)
        INFO("record " << k << ": " << fault.first);
        std::vector<std::string> records = good;
        records[k] = fault.second;
        const std::string text = join(records);
        const outcome serial = read(text, false, 512);
        REQUIRE(!serial.error.empty());
        check_same(serial, read(text, true, 512));
      }
      INFO("record " << k << ": truncated");
      std::string text = join(good);
      const std::size_t cut = text.find(good[k]) + good[k].size() / 2;
      text.resize(cut);
      const outcome serial = read(text, false, 512);
      REQUIRE(!serial.error.empty());
      check_same(serial, read(text, true, 512));
    }
    std::string trailing = join(good);
    trailing.insert(trailing.rfind(']'), ",");
    const outcome serial = read(trailing, false, 512);
    CHECK(serial.error.find("trailing") != std::string::npos);
    check_same(serial, read(trailing, true, 512));
  }

  TEST_CASE(
      "parallel read: cut at guessed element starts, right or wrong, the serial read's table") {
    // Layouts: one record per line (every guess right), pretty (guesses inside events, wrong),
    // one line (no guess: the read stays on one thread), and text after the array whose
    // objects look like elements (guesses past the array's end). Escaped strings send records
    // to simdjson, which pauses the other thread.
    std::mt19937 rng(11);
    for (int round = 0; round < 40; ++round) {
      const unsigned seed = 100 + static_cast<unsigned>(round);
      std::string text = join(make_records(200 + rng() % 1500, seed));
      switch (round % 4) {
        case 1:
          text = spread(text, seed);
          break;
        case 2:
          text = one_line(text);
          break;
        case 3:
          text.pop_back();  // the closing '}'
          text +=
              ",\n\"later\":[\n{\"ph\":\"X\",\"ts\":1},\n{\"ph\":\"X\",\"ts\":2},\n{\"a\":[\n{}]}]"
              "}";
          break;
        default:
          break;
      }
      const std::size_t batch = std::size_t{64} << (rng() % 8);
      INFO("round " << round << ", batch bytes " << batch);
      const outcome serial = read(text, false, batch);
      REQUIRE(serial.error.empty());
      const outcome parallel = read(text, true, batch);
      check_same(serial, parallel);
      CHECK(parallel.trace == read(text, false, std::size_t{1} << 20).trace);
    }
  }

  TEST_CASE("parallel read: a fault after a wrong guess is named as the serial read names it") {
    const std::vector<std::string> good = make_records(1500, 12);
    for (const std::size_t k : {std::size_t{3}, std::size_t{700}, good.size() - 2}) {
      std::vector<std::string> records = good;
      records[k] = R"({"ph":"X","ts":1,"args":{"list":[{"a":1},{"b":)"
                   "\"unterminated}]}})";
      const std::string text = spread(join(records), 5);
      INFO("record " << k);
      for (const std::size_t batch : {std::size_t{256}, std::size_t{4096}}) {
        const outcome serial = read(text, false, batch);
        REQUIRE(!serial.error.empty());
        check_same(serial, read(text, true, batch));
      }
    }
  }

  TEST_CASE(
      "parallel read: many flows, sorted by time on a second thread, bind as in the serial read") {
    // More than 65,536 flow records (the threshold for sorting them aside): launches with
    // their kernels, forward ops with their backward ops, a repeated start and a flow end
    // without a start now and then. First with the records in time order (each track's flows
    // come in time order: no sort), then with the flow records after the events, in reverse
    // (sorted by time, on the second thread when reading on two).
    for (const bool reversed : {false, true}) {
      CAPTURE(reversed);
      std::vector<std::string> events, flows;
      long ts = 1000;
      for (int k = 1; k <= 17000; ++k, ts += 10) {
        const std::string t = std::to_string(ts), c = std::to_string(k);
        const std::string d = std::to_string(ts + 5);
        events.push_back(
            R"({"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":)" +
            t + R"(,"dur":2,"args":{"correlation":)" + c + "}}");
        events.push_back(R"({"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":)" + d +
                         R"(,"dur":3,"args":{"correlation":)" + c + "}}");
        auto& f = reversed ? flows : events;
        f.push_back(R"({"ph":"s","id":)" + c + R"(,"pid":1,"tid":1,"ts":)" + t +
                    R"(,"cat":"ac2g","name":"ac2g"})");
        if (k % 97 == 0)  // a duplicate start
          f.push_back(R"({"ph":"s","id":)" + c + R"(,"pid":1,"tid":1,"ts":)" + t +
                      R"(,"cat":"ac2g","name":"ac2g"})");
        f.push_back(R"({"ph":"f","id":)" + c + R"(,"pid":0,"tid":7,"ts":)" + d +
                    R"(,"cat":"ac2g","name":"ac2g","bp":"e"})");
        events.push_back(R"({"ph":"X","cat":"cpu_op","name":"fwd","pid":1,"tid":2,"ts":)" + t +
                         R"(,"dur":1})");
        events.push_back(R"({"ph":"X","cat":"cpu_op","name":"bwd","pid":1,"tid":3,"ts":)" + d +
                         R"(,"dur":1})");
        if (k % 89 != 0)  // else an end without a start
          f.push_back(R"({"ph":"s","id":)" + c + R"(,"pid":1,"tid":2,"ts":)" + t +
                      R"(,"cat":"fwdbwd","name":"fwdbwd"})");
        f.push_back(R"({"ph":"f","id":)" + c + R"(,"pid":1,"tid":3,"ts":)" + d +
                    R"(,"cat":"fwdbwd","name":"fwdbwd","bp":"e"})");
      }
      events.insert(events.end(), flows.rbegin(), flows.rend());
      std::string text = "{\"traceEvents\":[\n";
      for (std::size_t i = 0; i < events.size(); ++i)
        text += events[i] + (i + 1 < events.size() ? ",\n" : "\n]}");
      const outcome serial = read(text, false, std::size_t{1} << 20);
      REQUIRE(serial.error.empty());
      CHECK(serial.links == 17000 - 17000 / 89);  // the fwdbwd pairs (ac2g flows mark the events)
      // The repeated start finds its launch already carrying a flow: it binds to nothing.
      CHECK(serial.anomalies[tmod::anomaly::unbound_flow] == 17000 / 97);
      CHECK(serial.anomalies[tmod::anomaly::flow_end_without_start] == 17000 / 89);
      check_same(serial, read(text, true, std::size_t{1} << 20));
    }
  }

  TEST_CASE("parallel read: a failure while building stops the parser thread") {
    std::string text = join(make_records(3000, 3));
    tmod::read_options opt = options(true, 256);
    int calls = 0;
    opt.progress = [&calls](std::size_t, std::size_t) {
      if (++calls == 3) throw std::runtime_error("stop here");
    };
    CHECK_THROWS_WITH_AS(tmod::read_chrome_trace(text, text.size(), opt), "stop here",
                         std::runtime_error);
    CHECK(calls == 3);
    // The buffer is restored: it reads again, completely.
    opt.progress = nullptr;
    CHECK(tmod::read_chrome_trace(text, text.size(), opt).size() ==
          tmod::read_chrome_trace(text, text.size(), options(false, 256)).size());
  }
}

TEST_SUITE("concurrency") {
  TEST_CASE("a read that owns its text gives the text's memory back as it goes, same table") {
    // Several huge pages of text, so that whole ones lie behind the batches being read.
    const std::string json = join(make_records(60000, 4));
    REQUIRE(json.size() > 3 * tmod::detail::huge_page);
    const outcome expected = read(json, false, std::size_t{1} << 20);
    REQUIRE(expected.error.empty());
    for (const bool parallel : {false, true}) {
      INFO("parallel " << parallel);
      tmod::trace_text text(json.size());
      std::memcpy(text.data(), json.data(), json.size());
      text.set_size(json.size());
      tmod::event_table t;
      const tmod::read_options opt = options(parallel, 65536);
      tmod::detail::chrome_trace::read_into(t, text.padded(), text.size(), opt, &text);
      CHECK(tmod::chrome_trace_string(t) == expected.trace);
      CHECK(t.anomalies.n == expected.anomalies.n);
      CHECK(t.links.size() == expected.links);
#if TRACEMODEL_BIG_ALLOC_MMAP
      // Whole huge pages behind the last batch, and nothing of the batch being read.
      CHECK(text.released() >= json.size() - 65536 - 2 * tmod::detail::huge_page);
      CHECK(text.released() % tmod::detail::huge_page == 0);
      CHECK(text.released() <= json.size());
#endif
    }
    // The public overload that takes the text.
    tmod::trace_text text(json.size());
    std::memcpy(text.data(), json.data(), json.size());
    text.set_size(json.size());
    CHECK(tmod::chrome_trace_string(tmod::read_chrome_trace(std::move(text))) == expected.trace);
  }

  TEST_CASE("trace_text::release_before: whole huge pages before the offset read as zeros") {
    constexpr std::size_t hp = tmod::detail::huge_page;
    tmod::trace_text text(3 * hp + 100);
    std::memset(text.data(), 'x', 3 * hp + 100);
    text.set_size(3 * hp + 100);
    text.release_before(hp - 1);  // no whole page yet
    CHECK(text.released() == 0);
    CHECK(text.data()[0] == 'x');
    text.release_before(2 * hp + 5);
#if TRACEMODEL_BIG_ALLOC_MMAP
    CHECK(text.released() == 2 * hp);
    CHECK(text.data()[0] == '\0');
    CHECK(text.data()[2 * hp - 1] == '\0');
#else
    CHECK(text.released() == 0);
#endif
    CHECK(text.data()[2 * hp] == 'x');
    CHECK(text.data()[3 * hp + 99] == 'x');
    text.release_before(hp);  // behind what is released: nothing changes
    CHECK(text.data()[2 * hp + 1] == 'x');
    // A small text is not ours to map: never released.
    tmod::trace_text small(1000);
    std::memset(small.data(), 'y', 1000);
    small.set_size(1000);
    small.release_before(1000);
    CHECK(small.released() == 0);
    CHECK(small.data()[10] == 'y');
  }

#if TRACEMODEL_BIG_ALLOC_MMAP
  TEST_CASE(
      "a large file loads in two halves: the text one thread reads, a shorter file keeps its "
      "front") {
    const std::string text = join(make_records(66000, 5));
    REQUIRE(text.size() > tmod::detail::parallel_load_bytes);
    const std::string path = std::string(TRACEMODEL_TEST_BINARY_DIR) + "/two_halves.json";
    std::ofstream(path, std::ios::binary) << text;
    {
      const tmod::trace_text halves = tmod::load_trace_text(path, {.threads = 2});
      const tmod::trace_text one = tmod::load_trace_text(path, {.threads = 1});
      CHECK(halves.size() == text.size());
      CHECK(halves.view() == text);
      CHECK(one.view() == text);
    }
    // The file read through the default options (two threads to load and to parse) is the
    // serial read of its text.
    CHECK(tmod::chrome_trace_string(tmod::read_chrome_trace_file(path)) ==
          read(text, false, std::size_t{1} << 20).trace);
    // A file shorter than the size the halves were cut for (it shrank after its size was
    // taken): what is in place from the front, in order. Its end within the back half, then
    // within the front half.
    const int fd = ::open(path.c_str(), O_RDONLY);
    REQUIRE(fd >= 0);
    for (const std::size_t said : {text.size() + text.size() / 2, 3 * text.size()}) {
      CAPTURE(said);
      std::vector<char> buf(said);
      const std::size_t got = tmod::detail::read_two_halves(fd, buf.data(), said, path, {});
      CHECK(got == text.size());
      CHECK(std::string_view(buf.data(), got) == text);
    }
    ::close(fd);
    std::remove(path.c_str());
  }
#endif
}
