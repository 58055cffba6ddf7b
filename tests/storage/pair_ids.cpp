#include <doctest/doctest.h>

#include <cstdint>
#include <map>
#include <random>
#include <utility>
#include <vector>

#include <tracemodel/detail/flat_map.hpp>

namespace tmod = tracemodel;

TEST_SUITE("storage") {
  TEST_CASE("pair_ids: ids in order of first appearance, whatever the pairs' cache sets") {
    // Pools of 1 to 40 pairs drawn in random interleavings: neighbouring thread ids, ids that
    // differ in high bits only (tid * 16 + 3: one set for all under a fixed hash), pairs that
    // the hash's first step (a * 31 + b) cannot tell apart ((0, 62), (1, 31) and (2, 0): no
    // factor gives them sets of their own), and zeros (the value of an empty cache entry).
    // Every answer is checked against a map.
    std::mt19937_64 rng(20261124);
    for (int round = 0; round < 200; ++round) {
      const std::size_t pool_size = 1 + rng() % 40;
      std::vector<std::pair<std::uint64_t, std::uint64_t>> pool;
      const std::uint64_t base = rng() % 100000;
      for (std::size_t k = 0; k < pool_size; ++k) {
        switch (round % 4) {
          case 0:
            pool.emplace_back(7, base + k);
            break;
          case 1:
            pool.emplace_back(7, (base + k) * 16 + 3);
            break;
          case 2:
            pool.emplace_back(k % 3, (k / 3) * 31 + (k % 2 == 0 ? 0 : 31));
            break;
          default:
            pool.emplace_back(rng() % 3, rng() % 4 == 0 ? 0 : rng());
            break;
        }
      }
      tmod::detail::pair_ids ids;
      std::map<std::pair<std::uint64_t, std::uint64_t>, std::uint32_t> expected;
      for (int step = 0; step < 2000; ++step) {
        const auto& p = pool[rng() % pool.size()];
        CHECK(ids.find(p.first, p.second) ==
              (expected.count(p) != 0 ? expected[p] : tmod::detail::pair_ids::no_id));
        const auto next = static_cast<std::uint32_t>(expected.size());
        const std::uint32_t want = expected.emplace(p, next).first->second;
        const std::uint32_t got = ids.id(p.first, p.second);
        INFO("round " << round << " step " << step);
        REQUIRE(got == want);
        REQUIRE(ids.pair(got) == p);
      }
      CHECK(ids.size() == expected.size());
    }
  }
}
