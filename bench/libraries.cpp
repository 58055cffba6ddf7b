// tracemodel's own pieces against what a well-kept library in Debian 12 offers for the same job,
// on the same data in one process (the journal records the outcome and what was chosen):
//   libraries/stable_order/*   the stable sorting permutation of 10M start times (the tree's and
//                              the linkers' computed orders): tracemodel's LSD radix on packed
//                              (key, index) words, against Boost.Sort's integer_sort
//                              (spreadsort) on the same words (unique, so its result is the
//                              same although it is not stable)
//   libraries/disjoint_sets/*  1M unions and 2M finds over 1M elements (tensor identities):
//                              path halving with the smaller element as representative, against
//                              Boost's disjoint_sets (union by rank, path compression)
//   libraries/parse_int64/*    10M decimal integer tokens (the readers): tracemodel's loop
//                              against std::from_chars
#include <benchmark/benchmark.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include <boost/pending/disjoint_sets.hpp>
#include <boost/sort/spreadsort/integer_sort.hpp>

#include <tracemodel/algo/tensor_ids.hpp>
#include <tracemodel/detail/radix_sort.hpp>
#include <tracemodel/formats/json_scan.hpp>
#include <tracemodel/memory.hpp>

namespace tmod = tracemodel;

namespace {

// As a program that analyses trace after trace (memory.hpp), set before any benchmark runs.
[[maybe_unused]] const bool program_memory = (tracemodel::program_memory_cache(), true);

/// Start times as a 4-thread trace has them: nearly sorted, a few hundred ns apart, with the
/// threads' events interleaved out of order by up to a few microseconds.
const std::vector<std::int64_t>& start_times() {
  static const std::vector<std::int64_t> keys = [] {
    std::mt19937_64 rng(1);
    std::vector<std::int64_t> k(10'000'000);
    std::int64_t t = 1'700'000'000'000'000'000;
    for (auto& x : k) {
      t += 100 + static_cast<std::int64_t>(rng() % 200);
      x = t - static_cast<std::int64_t>(rng() % 4000);
    }
    return k;
  }();
  return keys;
}

void stable_order_tracemodel(benchmark::State& state) {
  const auto& keys = start_times();
  for (auto _ : state) {
    auto order = tmod::detail::stable_order(keys);
    benchmark::DoNotOptimize(order.data());
  }
}

void stable_order_boost(benchmark::State& state) {
  const auto& keys = start_times();
  for (auto _ : state) {
    // The same packing as tracemodel's: (key - min) above the index.
    const std::int64_t lo = *std::min_element(keys.begin(), keys.end());
    tmod::detail::scratch_vector<std::uint64_t> words(keys.size());
    for (std::size_t i = 0; i < keys.size(); ++i)
      words[i] = static_cast<std::uint64_t>(keys[i] - lo) << 24 | i;
    boost::sort::spreadsort::integer_sort(words.begin(), words.end());
    tmod::detail::scratch_vector<std::uint32_t> order(keys.size());
    for (std::size_t i = 0; i < words.size(); ++i)
      order[i] = static_cast<std::uint32_t>(words[i] & 0xffffff);
    benchmark::DoNotOptimize(order.data());
  }
}

/// Boost's disjoint sets over growing arrays (as tensor identities add elements as they come).
class boost_sets {
 public:
  std::uint32_t add() {
    const auto x = static_cast<std::uint32_t>(parent_.size());
    parent_.push_back(x);
    rank_.push_back(0);
    return x;
  }
  std::uint32_t find(std::uint32_t x) { return sets().find_set(x); }
  void unite(std::uint32_t a, std::uint32_t b) { sets().union_set(a, b); }

 private:
  boost::disjoint_sets<std::uint32_t*, std::uint32_t*> sets() {
    return {rank_.data(), parent_.data()};
  }
  std::vector<std::uint32_t> parent_, rank_;
};

template <class Sets>
void disjoint_sets(benchmark::State& state) {
  constexpr std::uint32_t n = 1'000'000;
  std::mt19937 rng(2);
  std::vector<std::pair<std::uint32_t, std::uint32_t>> unions(n);
  // Mostly near neighbours (an implementation object moves between a few storages), some far.
  for (auto& [a, b] : unions) {
    a = static_cast<std::uint32_t>(rng() % n);
    b = static_cast<std::uint32_t>(rng() % 8 == 0 ? rng() % n
                                                  : std::min<std::uint64_t>(n - 1, a + rng() % 16));
  }
  for (auto _ : state) {
    Sets s;
    for (std::uint32_t i = 0; i < n; ++i) s.add();
    for (const auto& [a, b] : unions) s.unite(a, b);
    std::uint64_t sum = 0;
    for (std::uint32_t i = 0; i < n; ++i) sum += s.find(i);
    benchmark::DoNotOptimize(sum);
  }
}

const std::vector<std::string>& integer_tokens() {
  static const std::vector<std::string> tokens = [] {
    std::mt19937_64 rng(3);
    std::vector<std::string> t(10'000'000);
    for (auto& s : t) {
      const int kind = static_cast<int>(rng() % 4);
      const std::int64_t v = kind == 0   ? static_cast<std::int64_t>(rng() % 100)
                             : kind == 1 ? static_cast<std::int64_t>(rng() % 10'000'000)
                             : kind == 2 ? -static_cast<std::int64_t>(rng() % 1'000'000)
                                         : static_cast<std::int64_t>(rng() >> 1);
      s = std::to_string(v);
    }
    return t;
  }();
  return tokens;
}

void parse_int64_tracemodel(benchmark::State& state) {
  const auto& tokens = integer_tokens();
  for (auto _ : state) {
    std::int64_t sum = 0;
    for (const std::string& s : tokens) {
      std::int64_t v = 0;
      if (tmod::detail::parse_int64(s, v)) sum += v;
    }
    benchmark::DoNotOptimize(sum);
  }
}

void parse_int64_from_chars(benchmark::State& state) {
  const auto& tokens = integer_tokens();
  for (auto _ : state) {
    std::int64_t sum = 0;
    for (const std::string& s : tokens) {
      std::int64_t v = 0;
      const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
      if (r.ec == std::errc{} && r.ptr == s.data() + s.size()) sum += v;
    }
    benchmark::DoNotOptimize(sum);
  }
}

}  // namespace

BENCHMARK(stable_order_tracemodel)
    ->Name("libraries/stable_order/tracemodel/10M")
    ->Unit(benchmark::kMillisecond);
BENCHMARK(stable_order_boost)
    ->Name("libraries/stable_order/boost_integer_sort/10M")
    ->Unit(benchmark::kMillisecond);
BENCHMARK(disjoint_sets<tmod::detail::disjoint_sets>)
    ->Name("libraries/disjoint_sets/tracemodel/1M")
    ->Unit(benchmark::kMillisecond);
BENCHMARK(disjoint_sets<boost_sets>)
    ->Name("libraries/disjoint_sets/boost/1M")
    ->Unit(benchmark::kMillisecond);
BENCHMARK(parse_int64_tracemodel)
    ->Name("libraries/parse_int64/tracemodel/10M")
    ->Unit(benchmark::kMillisecond);
BENCHMARK(parse_int64_from_chars)
    ->Name("libraries/parse_int64/from_chars/10M")
    ->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
