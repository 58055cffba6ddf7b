#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include <tracemodel/detail/radix_sort.hpp>

namespace tmod = tracemodel;

TEST_SUITE("storage") {
  TEST_CASE("stable_order: the permutation std::stable_sort gives, for keys of every range") {
    // Ranges from one value to the whole of int64 (packed with the index into one word, or
    // not), sorted and reversed input, many duplicates, negative keys, and digits that are the
    // same in every key (skipped passes).
    std::mt19937_64 rng(20261123);
    for (int round = 0; round < 300; ++round) {
      const std::size_t n = round % 10 == 0 ? rng() % 5 : 1 + rng() % 20000;
      const unsigned range_bits = static_cast<unsigned>(rng() % 65);
      const std::int64_t offset = static_cast<std::int64_t>(rng()) >> (rng() % 64);
      std::vector<std::int64_t> keys(n);
      for (auto& k : keys) {
        const std::uint64_t r = range_bits == 64 ? rng() : rng() & ((std::uint64_t{1} << range_bits) - 1);
        k = range_bits == 64 ? static_cast<std::int64_t>(r)
                             : static_cast<std::int64_t>(static_cast<std::uint64_t>(offset) + r);
        if (round % 7 == 3) k &= ~std::int64_t{0xfff000};  // a middle digit the same in all
      }
      if (round % 5 == 1) std::sort(keys.begin(), keys.end());
      if (round % 5 == 2) std::sort(keys.rbegin(), keys.rend());
      std::vector<std::uint32_t> want(n);
      std::iota(want.begin(), want.end(), 0u);
      std::stable_sort(want.begin(), want.end(),
                       [&](std::uint32_t a, std::uint32_t b) { return keys[a] < keys[b]; });
      const auto got = tmod::detail::stable_order(keys);
      INFO("round " << round << " n " << n << " range bits " << range_bits);
      REQUIRE(got.size() == n);
      CHECK(std::equal(got.begin(), got.end(), want.begin()));
    }
  }
}
