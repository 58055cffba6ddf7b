// A rank's results as bytes (formats/rank_parts.hpp): reports gathered from parts read one by
// one and sent as bytes equal the reports made in one process, to the bit; bytes that are not a
// part are refused.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <tracemodel/formats/rank_parts.hpp>
#include <tracemodel/hta/report.hpp>

#include "../support/json.hpp"

using namespace tracemodel;

namespace {

std::vector<std::string> kineto(std::initializer_list<const char*> names) {
  std::vector<std::string> out;
  for (const char* n : names) out.push_back(tmtest::data_path(std::string("kineto/") + n));
  return out;
}

/// Each file read alone (as a worker reads it), its part sent as bytes, the parts gathered in
/// the order given.
template <class Read, class Gather>
auto through_bytes(const std::vector<std::string>& files, Read read, Gather gather,
                   std::size_t* bytes = nullptr) {
  std::vector<gpu_rank_part> parts;
  for (std::size_t k = 0; k < files.size(); ++k) {
    const std::string b = encode_part(read(files[k], static_cast<std::int64_t>(k)), "gpu");
    if (bytes) *bytes += b.size();
    parts.push_back(decode_part<gpu_rank_part>(b, "gpu"));
  }
  return gather(std::move(parts));
}

}  // namespace

TEST_CASE("rank parts: a report gathered from parts sent as bytes is the one made in one process") {
  const std::vector<std::vector<std::string>> sets{
      kineto({"trace_filter_sampled_rank-1.json.gz", "trace_filter_sampled_rank-0.json.gz"}),
      kineto({"nccl_parser_config_nccl_data.json.gz"}),
      kineto({"amd_trace_mi250_minitoy_train_ROCm6_2_kineto.json.gz"}),
      kineto({"cpu_only_rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz",
              "amd_trace_mi250_minitoy_train_ROCm6_2_kineto.json.gz"}),
  };
  for (const auto& files : sets) {
    CAPTURE(files.front());
    gpu_report_options o;
    o.threads = 1;
    // (without series on the two sampled ranks only: the other sets add no other kind of value)
    for (const bool series : {true, false}) {
      if (!series && &files != &sets.front()) continue;
      o.series = series;
      std::size_t bytes = 0;
      const gpu_report exact = through_bytes(
          files, [&](const std::string& f, std::int64_t k) { return read_gpu_rank_part(f, k, o); },
          [](auto p) { return gather_gpu_report(std::move(p)); }, &bytes);
      const gpu_report want = make_gpu_report(files, o);
      REQUIRE(exact.ranks.size() == want.ranks.size());
      CHECK(encode_part(exact, "report") == encode_part(want, "report"));
      CHECK(bytes > 0);
      const hta::gpu_report h = through_bytes(
          files,
          [&](const std::string& f, std::int64_t k) { return hta::read_gpu_rank_part(f, k, o); },
          [](auto p) { return hta::gather_gpu_report(std::move(p)); });
      CHECK(encode_part(h, "report") == encode_part(hta::make_gpu_report(files, o), "report"));
    }
  }
}

TEST_CASE("rank parts: HTA's last step is dropped by the steps of every rank together") {
  // Each part keeps the results with every step only when its rank names fewer than two steps.
  const auto files = kineto({"trace_filter_sampled_rank-0.json.gz",
                             "cpu_only_rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz"});
  std::vector<gpu_rank_part> parts;
  for (std::size_t k = 0; k < files.size(); ++k)
    parts.push_back(hta::read_gpu_rank_part(files[k], static_cast<std::int64_t>(k)));
  for (const gpu_rank_part& p : parts) CHECK(p.all_steps.has_value() == (p.steps.size() < 2));
  CHECK(parts[0].result.rank == 0);
  CHECK(parts[1].result.rank == 34);  // (the rank-N of its name)
  const hta::gpu_report r = hta::gather_gpu_report(parts);
  CHECK(encode_part(r, "report") == encode_part(hta::make_gpu_report(files), "report"));
  // A part whose steps do not match its results is refused, not misread.
  gpu_rank_part odd = parts[1];
  odd.steps.clear();
  odd.all_steps.reset();
  CHECK_THROWS_WITH_AS((void)hta::gather_gpu_report({odd}), doctest::Contains("disagree"),
                       input_error);
}

TEST_CASE("rank parts: two parts of one rank are an error naming both files") {
  gpu_rank_part a, b;
  a.file = "x/a.json";
  b.file = "y/b.json";
  a.result.rank = b.result.rank = 3;
  CHECK_THROWS_WITH_AS((void)gather_gpu_report({a, b}),
                       "rank 3 is in two files: x/a.json and y/b.json", input_error);
  CHECK_THROWS_WITH_AS((void)gather_gpu_report({}), "no trace files in the paths given",
                       input_error);
}

namespace {
struct part_sample {
  std::int8_t small = 0;
  std::int64_t wide = 0;
  std::uint64_t unsigned_wide = 0;
  double real = 0;
  bool flag = false;
  std::string text;
  std::optional<double> maybe;
  std::vector<std::int32_t> list;
  std::map<std::string, std::int64_t> by_name;
  std::vector<std::pair<std::string, std::int64_t>> pairs;
};
}  // namespace

template <>
struct tracemodel::part_members<part_sample> {
  static constexpr auto of = std::tuple{
      &part_sample::small,   &part_sample::wide, &part_sample::unsigned_wide, &part_sample::real,
      &part_sample::flag,    &part_sample::text, &part_sample::maybe,         &part_sample::list,
      &part_sample::by_name, &part_sample::pairs};
};

TEST_CASE("rank parts: every value is read back to the bit (random values against themselves)") {
  std::mt19937_64 rng(7);
  const std::vector<double> special{0.0,
                                    -0.0,
                                    std::numeric_limits<double>::infinity(),
                                    -std::numeric_limits<double>::infinity(),
                                    std::numeric_limits<double>::quiet_NaN(),
                                    std::numeric_limits<double>::denorm_min(),
                                    1e308,
                                    0.1};
  const std::vector<std::int64_t> edges{0,
                                        -1,
                                        1,
                                        63,
                                        -64,
                                        64,
                                        std::numeric_limits<std::int64_t>::min(),
                                        std::numeric_limits<std::int64_t>::max()};
  for (int round = 0; round < 300; ++round) {
    part_sample s;
    s.small = static_cast<std::int8_t>(static_cast<int>(rng() % 256) - 128);
    s.wide = round < 8 ? edges[static_cast<std::size_t>(round)] : static_cast<std::int64_t>(rng());
    s.unsigned_wide = rng() >> (rng() % 64);
    s.real = round % 3 == 0 ? special[rng() % special.size()]
                            : std::bit_cast<double>(rng());  // (any bits: NaNs with payloads)
    s.flag = rng() % 2;
    for (std::size_t k = rng() % 20; k > 0; --k) s.text.push_back(static_cast<char>(rng() % 256));
    if (rng() % 2) s.maybe = static_cast<double>(rng() % 1000) / 7;
    for (std::size_t k = rng() % 10; k > 0; --k)
      s.list.push_back(static_cast<std::int32_t>(static_cast<std::uint32_t>(rng())));
    for (std::size_t k = rng() % 5; k > 0; --k)
      s.by_name[std::to_string(rng() % 50)] = static_cast<std::int64_t>(rng());
    for (std::size_t k = rng() % 4; k > 0; --k) s.pairs.emplace_back("p", -static_cast<int>(k));
    const std::string b = encode_part(s, "sample");
    const part_sample r = decode_part<part_sample>(b, "sample");
    CHECK(r.small == s.small);
    CHECK(r.wide == s.wide);
    CHECK(r.unsigned_wide == s.unsigned_wide);
    CHECK(std::bit_cast<std::uint64_t>(r.real) == std::bit_cast<std::uint64_t>(s.real));
    CHECK(r.flag == s.flag);
    CHECK(r.text == s.text);
    CHECK(r.maybe == s.maybe);
    CHECK(r.list == s.list);
    CHECK(r.by_name == s.by_name);
    CHECK(r.pairs == s.pairs);
    CHECK(encode_part(r, "sample") == b);
  }
}

TEST_CASE("rank parts: bytes that are not a whole part are refused, never misread") {
  gpu_report_options o;
  o.threads = 1;
  const std::string b = encode_part(
      read_gpu_rank_part(
          tmtest::data_path("kineto/amd_trace_mi250_minitoy_train_ROCm6_2_kineto.json.gz"), 0, o),
      "gpu");
  // Every cut is an error (a part ends where its bytes do).
  for (std::size_t n = 0; n < b.size(); n += 1 + n / 64)
    CHECK_THROWS_AS((void)decode_part<gpu_rank_part>(std::string_view(b).substr(0, n), "gpu"),
                    input_error);
  CHECK_THROWS_WITH_AS((void)decode_part<gpu_rank_part>(b + "x", "gpu"),
                       doctest::Contains("bytes after the part's end"), input_error);
  CHECK_THROWS_WITH_AS((void)decode_part<gpu_rank_part>(b, "diff"),
                       "rank part: a part of gpu, not of diff", input_error);
  CHECK_THROWS_WITH_AS((void)decode_part<gpu_rank_part>("{\"traceEvents\":[]}", "gpu"),
                       doctest::Contains("not a tracemodel rank part"), input_error);
  // A count larger than the bytes left is refused before anything is allocated.
  part_sample s;
  s.list = {1, 2, 3};
  std::string big = encode_part(s, "sample");
  const std::size_t at = big.size() - 1 - 1 - 3 - 1;  // the list's count (pairs, map, 3 items)
  REQUIRE(big[at] == 3);
  big[at] = 0x7f;
  CHECK_THROWS_WITH_AS((void)decode_part<part_sample>(big, "sample"),
                       doctest::Contains("a count larger than the bytes left"), input_error);
  // Random damage: an error or some part, never a crash (the sanitizers watch).
  std::mt19937_64 rng(11);
  std::size_t refused = 0;
  for (int round = 0; round < 2000; ++round) {
    std::string d = b;
    for (int k = 0; k < 3; ++k) d[rng() % d.size()] = static_cast<char>(rng() % 256);
    try {
      (void)decode_part<gpu_rank_part>(d, "gpu");
    } catch (const input_error&) {
      ++refused;
    }
  }
  CHECK(refused > 0);
}
