// Inputs the reader's fuzz target once failed on, replayed on every build.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "../fuzz/reader_check.hpp"

TEST_SUITE("formats") {
  TEST_CASE("fuzz regressions: rejected cleanly or read with an exact round trip") {
    namespace fs = std::filesystem;
    // What each input gives since its fix.
    const std::map<std::string, fuzz::reader_outcome> expected = {
        {"null-literal-in-args.json", fuzz::reader_outcome::rejected},
        {"dims-number-then-list.json", fuzz::reader_outcome::rejected},
        {"second-flow-on-one-activity.json", fuzz::reader_outcome::round_trip_exact},
        {"whole-double-for-an-integer-arg.json", fuzz::reader_outcome::round_trip_exact},
        {"lone-device-flow-start.json", fuzz::reader_outcome::round_trip_exact},
        // Two faults: the direct path's read names the later one (its simdjson batch starts at
        // the first and its scan meets the second first), simdjson's read the earlier one.
        {"two-faults-named-by-batch.json", fuzz::reader_outcome::rejected},
        // A device flow's start and end bound to one activity: the end is refused (the activity
        // carries the start), so the start draws nothing either, and is not written.
        {"ac2g-start-and-end-on-one-activity.json", fuzz::reader_outcome::round_trip_exact},
        // Two flows start at the time of two identical runtime calls: each start binds to the
        // first free one, as the writer writes them in table order (the last one took the first
        // start, and the written order then swapped the two).
        {"ac2g-starts-on-twin-runtime-calls.json", fuzz::reader_outcome::round_trip_exact},
    };
    std::size_t seen = 0;
    for (const auto& entry : fs::directory_iterator(fs::path(TRACEMODEL_TEST_DATA_DIR) / "fuzz")) {
      const std::string name = entry.path().filename().string();
      INFO(name);
      std::ifstream f(entry.path(), std::ios::binary);
      std::stringstream ss;
      ss << f.rdbuf();
      const std::string data = ss.str();
      const auto it = expected.find(name);
      REQUIRE(it != expected.end());  // every file is listed with its outcome
      CHECK(fuzz::check_reader(data.data(), data.size()) == it->second);
      ++seen;
    }
    CHECK(seen == expected.size());
  }
}
