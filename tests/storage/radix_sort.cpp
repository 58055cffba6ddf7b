#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include <tracemodel/detail/radix_sort.hpp>

#include "../support/sanitized.hpp"

namespace tmod = tracemodel;

TEST_SUITE("storage") {
  TEST_CASE("stable_order: the permutation std::stable_sort gives, for keys of every range") {
    // Ranges from one value to the whole of int64 (packed with the index into one word, or
    // not), sorted and reversed input, many duplicates, negative keys, and digits that are the
    // same in every key (skipped passes).
    std::mt19937_64 rng(20261123);
    for (int round = 0; round < tmtest::scaled(300); ++round) {
      const std::size_t n = round % 10 == 0 ? rng() % 5 : 1 + rng() % 20000;
      const unsigned range_bits = static_cast<unsigned>(rng() % 65);
      const std::int64_t offset = static_cast<std::int64_t>(rng()) >> (rng() % 64);
      std::vector<std::int64_t> keys(n);
      for (auto& k : keys) {
        const std::uint64_t r =
            range_bits == 64 ? rng() : rng() & ((std::uint64_t{1} << range_bits) - 1);
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

  TEST_CASE("near_order: ascending keys, later positions first on ties, near order or not") {
    // Keys nearly in order (each a few places from its rank), far from it (past the insertion's
    // budget: the radix sort takes over), with ties, `top` keys, and keys that cannot be
    // packed (below the base, or too far above it): `ok()` is false exactly then.
    std::mt19937_64 rng(20261123);
    constexpr std::int64_t top = std::numeric_limits<std::int64_t>::max();
    for (int round = 0; round < tmtest::scaled(400); ++round) {
      const std::size_t n = round % 10 == 0 ? rng() % 6 : 1 + rng() % 30000;
      const int shape = round % 5;  // 0-1 near order, 2 reversed, 3 random, 4 near with outliers
      const std::int64_t base = static_cast<std::int64_t>(rng() % 2000000) - 1000000;
      const std::int64_t step = 1 + static_cast<std::int64_t>(rng() % 50);
      std::vector<std::int64_t> keys(n);
      for (std::size_t i = 0; i < n; ++i) {
        const auto pos = static_cast<std::int64_t>(i);
        switch (shape) {
          case 2:
            keys[i] = base + (static_cast<std::int64_t>(n) - pos) * step;
            break;
          case 3:
            keys[i] = base + static_cast<std::int64_t>(rng() % (n * 4 + 1));
            break;
          default:
            keys[i] = base + pos * step + static_cast<std::int64_t>(rng() % 8) * step;
            if (shape == 4 && rng() % 50 == 0) keys[i] += static_cast<std::int64_t>(rng() % 100000);
        }
        if (rng() % 97 == 0) keys[i] = top;
        if (round % 13 == 5 && rng() % 3000 == 0) keys[i] = base - 1;  // below the base
        if (round % 13 == 6 && rng() % 3000 == 0) keys[i] = top - 1;   // too far above
      }
      const std::size_t index_bits = n > 1 ? std::bit_width(n - 1) : 0;
      const std::uint64_t limit =
          index_bits == 0 ? ~std::uint64_t{0} : ~std::uint64_t{0} >> index_bits;
      bool packable = true;
      for (const std::int64_t k : keys)
        if (k != top &&
            (k < base || static_cast<std::uint64_t>(k) - static_cast<std::uint64_t>(base) >= limit))
          packable = false;
      tmod::detail::near_order order(n, base, top);
      for (const std::int64_t k : keys) order.add(k);
      INFO("round " << round << " n " << n << " shape " << shape);
      REQUIRE(order.ok() == packable);
      if (!packable) continue;
      order.finish();
      std::vector<std::size_t> want(n);
      std::iota(want.begin(), want.end(), std::size_t{0});
      std::sort(want.begin(), want.end(), [&](std::size_t a, std::size_t b) {
        return keys[a] != keys[b] ? keys[a] < keys[b] : a > b;
      });
      bool same = true;
      for (std::size_t r = 0; r < n; ++r) same = same && order.position(r) == want[r];
      CHECK(same);
    }
  }
}
