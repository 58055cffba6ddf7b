// The streamed Chrome trace: loadable after every part, nothing lost or written twice across
// parts and rotated files, names written once per file, one base time, bad paths refused.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include <tracemodel/formats/chrome_trace_reader.hpp>
#include <tracemodel/formats/chrome_trace_stream.hpp>

using namespace tracemodel;

namespace {
std::string stream_dir() {
  const std::string d = std::string(TRACEMODEL_TEST_BINARY_DIR) + "/stream";
  std::filesystem::create_directories(d);
  return d;
}
/// A part: `n` ops named "<tag>#<k>" on thread `tid`, from `at` us, with its thread's name.
event_table part(const std::string& tag, int n, long at, int tid) {
  std::string s = R"({"traceEvents":[{"ph":"M","name":"thread_name","pid":1,"tid":)" +
                  std::to_string(tid) + R"(,"args":{"name":"worker )" + std::to_string(tid) +
                  R"("}})";
  for (int k = 0; k < n; ++k)
    s += R"(,{"ph":"X","cat":"cpu_op","name":")" + tag + "#" + std::to_string(k) +
         R"(","pid":1,"tid":)" + std::to_string(tid) + R"(,"ts":)" + std::to_string(at + 10 * k) +
         ".125" + R"(,"dur":7.5})";
  s += "]}";
  return read_chrome_trace(s, s.size());
}
using row = std::tuple<std::string, std::int64_t, std::int64_t>;  // name, start, end (ns)
std::vector<row> rows_of(const event_table& t) {
  std::vector<row> r;
  for (const auto& e : t.events) r.emplace_back(std::string(t.name(e)), e.start_ns, e.end_ns());
  std::sort(r.begin(), r.end());
  return r;
}
std::size_t thread_names(const event_table& t) {
  std::size_t n = 0;
  for (const metadata_record& m : t.info.records) n += t.strings.view(m.name) == "thread_name";
  return n;
}
}  // namespace

TEST_CASE("chrome_trace_stream: the file is a whole trace after every part") {
  const std::string path = stream_dir() + "/parts.json";
  chrome_trace_stream out(path);
  std::vector<row> want;
  const event_table parts[] = {part("a", 3, 1'000, 1), part("b", 2, 5'000, 2),
                               part("c", 4, 9'000, 1)};
  for (const event_table& p : parts) {
    out.write(p);
    for (const row& r : rows_of(p)) want.push_back(r);
    std::sort(want.begin(), want.end());
    const event_table back = read_chrome_trace_file(path);
    CHECK(back.anomalies.total() == 0);
    CHECK(rows_of(back) == want);  // every nanosecond, nothing twice
  }
  CHECK(out.events() == 9);
  CHECK(out.files() == std::vector<std::string>{path});
  CHECK(out.bytes() == std::filesystem::file_size(path));
  // Thread 1's name came with parts a and c: written once.
  CHECK(thread_names(read_chrome_trace_file(path)) == 2);
  // The base time is the first part's whole second, and stays.
  CHECK(out.base_time_ns() == 0);
}

TEST_CASE("chrome_trace_stream: rotated files, each whole, none lost, one base time") {
  const std::string path = stream_dir() + "/rotated.json";
  std::mt19937_64 rng(48);
  chrome_trace_stream out(path, {.base_time_ns = 1'000'000'000, .rotate_bytes = 4096});
  std::vector<row> want;
  long at = 1'000'000;
  for (int k = 0; k < 60; ++k) {
    const int n = std::uniform_int_distribution<int>(0, 40)(rng);
    const event_table p = part("p" + std::to_string(k), n, at, 1 + k % 3);
    at += 10 * n + 5;
    out.write(p);
    for (const row& r : rows_of(p)) want.push_back(r);
  }
  std::sort(want.begin(), want.end());
  REQUIRE(out.files().size() > 3);
  CHECK(out.files()[1] == stream_dir() + "/rotated.1.json");
  std::vector<row> got;
  for (const std::string& f : out.files()) {
    CAPTURE(f);
    const event_table back = read_chrome_trace_file(f);
    CHECK(back.anomalies.total() == 0);
    CHECK(back.info.base_time_ns == 1'000'000'000);
    CHECK(thread_names(back) <= 3);  // each file names its threads again, once
    for (const row& r : rows_of(back)) got.push_back(r);
  }
  std::sort(got.begin(), got.end());
  CHECK(got == want);
  CHECK(out.events() == want.size());
}

TEST_CASE("chrome_trace_stream: bad paths are refused with the path") {
  CHECK_THROWS_WITH_AS(chrome_trace_stream<>(stream_dir() + "/x.json.gz"),
                       doctest::Contains("plain JSON"), input_error);
  chrome_trace_stream out(stream_dir() + "/missing/dir/x.json");
  CHECK_THROWS_WITH_AS(out.write(part("a", 1, 0, 1)), doctest::Contains("missing/dir/x.json"),
                       input_error);
}
