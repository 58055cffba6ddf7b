#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <set>
#include <vector>

#include <tracemodel/storage/append_only_list.hpp>
#include <tracemodel/storage/block_pool.hpp>
#include <tracemodel/storage/id_source.hpp>

using namespace tracemodel;

namespace {
struct rec32 {
  std::uint64_t a, b, c, d;
};
struct rec8 {
  std::uint64_t v;
};
}  // namespace

TEST_SUITE("storage") {
  TEST_CASE("append_only_list: elements keep their address and order across blocks") {
    append_only_list<rec32> l;
    using L = append_only_list<rec32>;
    const std::size_t n = L::capacity * 3 + 7;
    std::vector<rec32*> ptrs;
    for (std::size_t i = 0; i < n; ++i) ptrs.push_back(l.emplace_back(i, i * 2, i * 3, i * 4));
    CHECK(l.size() == n);
    CHECK(l.block_count() == 4);
    std::size_t i = 0;
    for (const rec32& r : l) {
      REQUIRE(i < n);
      CHECK(&r == ptrs[i]);  // stable address
      CHECK(r.a == i);
      CHECK(r.d == i * 4);
      ++i;
    }
    CHECK(i == n);
  }

  TEST_CASE("append_only_list: block start + index correlation ids") {
    using L = append_only_list<rec32, process_id_source>;
    L l;
    std::vector<std::uint64_t> ids;
    for (std::size_t i = 0; i < L::capacity + 5; ++i) {
      auto [p, id] = l.emplace_back_with_id(i, 0ULL, 0ULL, 0ULL);
      CHECK(L::id_of(p) == id);
      ids.push_back(id);
    }
    // Contiguous inside a block.
    for (std::size_t i = 1; i < L::capacity; ++i) CHECK(ids[i] == ids[i - 1] + 1);
    // The iterator reports the same ids.
    std::size_t i = 0;
    for (auto it = l.begin(); it != l.end(); ++it, ++i) CHECK(it.id() == ids[i]);
    // The ids of each block come from for_each_block too.
    std::size_t k = 0;
    l.for_each_block([&](rec32* a, rec32* b, std::uint64_t first) {
      for (std::uint64_t id = first; a != b; ++a, ++id, ++k) CHECK(id == ids[k]);
    });
    CHECK(k == ids.size());
  }

  TEST_CASE("process_id_source: one counter for every storage type (no overlapping ids)") {
    // PyTorch keeps one static counter per template instantiation; two lists of different
    // element types then hand out the same ids. Ours share one process-wide counter.
    append_only_list<rec32, process_id_source> a;
    append_only_list<rec8, process_id_source> b;
    std::set<std::uint64_t> seen;
    std::size_t total = 0;
    for (int round = 0; round < 3; ++round) {
      for (std::size_t i = 0; i < append_only_list<rec32>::capacity + 1; ++i, ++total)
        seen.insert(a.emplace_back_with_id(0ULL, 0ULL, 0ULL, 0ULL).id);
      for (std::size_t i = 0; i < append_only_list<rec8>::capacity + 1; ++i, ++total)
        seen.insert(b.emplace_back_with_id(0u).id);
    }
    CHECK(seen.size() == total);
    CHECK(*seen.begin() >= 1);  // 0 means "no id"
  }

  TEST_CASE("append_only_list::append copies across block boundaries") {
    append_only_list<std::int64_t> l;
    std::vector<std::int64_t> src(append_only_list<std::int64_t>::capacity * 2 + 11);
    for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<std::int64_t>(i) - 5;
    l.emplace_back(42);
    l.append(src.data(), src.size());
    REQUIRE(l.size() == src.size() + 1);
    auto it = l.begin();
    CHECK(*it == 42);
    ++it;
    for (std::size_t i = 0; i < src.size(); ++i, ++it) CHECK(*it == src[i]);
  }

  TEST_CASE(
      "append_only_list::cursor writes the runs append_contiguous writes, in the same blocks") {
    using list_t = append_only_list<std::uint64_t>;
    std::mt19937_64 rng(7);
    for (int round = 0; round < 20; ++round) {
      list_t by_list, by_cursor;
      std::uint64_t next = 1;
      // Calls of a few runs each, as the encoder makes them; some runs near a block's size, and
      // one larger than a block (refused by both).
      for (int call = 0; call < 200; ++call) {
        list_t::cursor c(by_cursor);
        const int runs = static_cast<int>(rng() % 5);
        for (int r = 0; r < runs; ++r) {
          const std::uint64_t pick = rng() % 100;
          const std::size_t n = pick == 0   ? list_t::capacity + 1
                                : pick < 3  ? list_t::capacity - rng() % 3
                                : pick < 50 ? 1
                                            : 1 + rng() % 40;
          std::uint64_t* a = by_list.append_contiguous(n);
          std::uint64_t* b = c.append_contiguous(n);
          REQUIRE((a == nullptr) == (b == nullptr));
          if (a == nullptr) continue;
          for (std::size_t i = 0; i < n; ++i) a[i] = b[i] = next++;
        }
        if (rng() % 4 == 0) {
          by_list.emplace_back(next);
          c.emplace_back(next++);
        }
        c.commit();
        REQUIRE(by_cursor.size() == by_list.size());
      }
      CHECK(by_cursor.block_count() == by_list.block_count());
      CHECK(std::equal(by_cursor.begin(), by_cursor.end(), by_list.begin(), by_list.end()));
      std::vector<std::size_t> blocks_list, blocks_cursor;
      by_list.for_each_block([&](const std::uint64_t* f, const std::uint64_t* l, std::uint64_t) {
        blocks_list.push_back(static_cast<std::size_t>(l - f));
      });
      by_cursor.for_each_block([&](const std::uint64_t* f, const std::uint64_t* l, std::uint64_t) {
        blocks_cursor.push_back(static_cast<std::size_t>(l - f));
      });
      CHECK(blocks_cursor == blocks_list);
    }
  }

  TEST_CASE("block_pool: cleared lists give their blocks back and the next list reuses them") {
    auto& pool = block_pool::instance();
    append_only_list<rec32> l;
    for (std::size_t i = 0; i < append_only_list<rec32>::capacity * 4; ++i) l.emplace_back();
    const auto before = pool.stats();
    l.clear();
    const auto after_clear = pool.stats();
    CHECK(after_clear.blocks_free == before.blocks_free + 4);
    CHECK(l.empty());
    CHECK(l.begin() == l.end());

    append_only_list<rec8> m;  // another element type: same blocks
    for (std::size_t i = 0; i < append_only_list<rec8>::capacity * 4; ++i) m.emplace_back(1u);
    const auto after_reuse = pool.stats();
    CHECK(after_reuse.blocks_owned == after_clear.blocks_owned);  // no new slab
    CHECK(after_reuse.blocks_free == after_clear.blocks_free - 4);
  }

  TEST_CASE("block_pool::prefault touches blocks up front, trim returns them") {
    auto& pool = block_pool::instance();
    pool.trim();
    const auto s0 = pool.stats();
    CHECK(s0.blocks_free == 0);
    const std::size_t made = pool.prefault(3 * block_pool::block_size + 1);
    // Whole slabs are taken from the OS: at least 4 blocks, rounded up to slabs.
    const std::size_t bps = block_pool::blocks_per_slab;
    CHECK(made == (4 + bps - 1) / bps * bps);
    const auto s1 = pool.stats();
    CHECK(s1.blocks_free == made);
    CHECK(s1.blocks_prefaulted == s0.blocks_prefaulted + made);
    CHECK(pool.prefault(2 * block_pool::block_size) == 0);  // enough already waiting
    pool.trim();
    CHECK(pool.stats().blocks_free == 0);
    CHECK(pool.stats().blocks_owned == s0.blocks_owned);
  }

  TEST_CASE("block_pool::trim keeps slabs that still have blocks in use") {
    auto& pool = block_pool::instance();
    pool.trim();
    void* kept = pool.acquire();  // one block of a slab stays in use
    const auto s0 = pool.stats();
    CHECK(s0.blocks_owned == block_pool::blocks_per_slab);
    pool.trim();
    CHECK(pool.stats().blocks_owned == block_pool::blocks_per_slab);
    CHECK(pool.stats().blocks_free == block_pool::blocks_per_slab - 1);
    pool.release(kept);
    pool.trim();
    CHECK(pool.stats().blocks_owned == 0);
    CHECK(pool.stats().blocks_free == 0);
  }

  TEST_CASE("block_pool: blocks are aligned to their size so ids are found from addresses") {
    void* b = block_pool::instance().acquire();
    CHECK(reinterpret_cast<std::uintptr_t>(b) % block_pool::block_size == 0);
    auto* inside = static_cast<char*>(b) + 12345;
    CHECK(block_pool::block_of(inside) == b);
    block_pool::instance().release(b);
  }

  TEST_CASE("append_only_list: move leaves the source empty") {
    append_only_list<rec8> a;
    for (std::uint64_t i = 0; i < 10; ++i) a.emplace_back(i);
    append_only_list<rec8> b(std::move(a));
    CHECK(a.size() == 0);  // NOLINT(bugprone-use-after-move): documented state
    CHECK(b.size() == 10);
    std::uint64_t i = 0;
    for (const auto& r : b) CHECK(r.v == i++);
  }
}
