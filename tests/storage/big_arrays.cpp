#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory_resource>
#include <vector>

#include <tracemodel/formats/trace_text.hpp>
#include <tracemodel/memory.hpp>
#include <tracemodel/storage/block_pool.hpp>

namespace tmod = tracemodel;

TEST_SUITE("storage") {
  TEST_CASE("memory: a library keeps little for reuse by default, a program raises it") {
    using tmod::detail::block_cache;
    using tmod::detail::region_cache;
    // A cache made as the process's own are: the defaults of a runtime that embeds tracemodel.
    const region_cache regions;
    const block_cache blocks;
    CHECK(regions.limit() == 0);
    CHECK(blocks.limit() == std::size_t{8} << 20);
    // With those limits, a freed large array goes back at once.
    tmod::set_memory_cache_limits(regions.limit(), blocks.limit());
    tmod::release_cached_memory();
    {
      tmod::detail::scratch_vector<std::uint32_t> a(3u << 20);  // 12 MiB
      a.back() = 1;
    }
    CHECK(region_cache::instance().cached_bytes() == 0);
    tmod::program_memory_cache();
    CHECK(tmod::memory_usage().region_limit == std::size_t{2} << 30);
    CHECK(tmod::memory_usage().block_limit == std::size_t{64} << 20);
    {
      tmod::detail::scratch_vector<std::uint32_t> a(3u << 20);
      a.back() = 1;
    }
    CHECK(region_cache::instance().cached_bytes() == 12u << 20);
    tmod::release_cached_memory();
  }

  TEST_CASE("big arrays: freed regions are reused (split and merged), and released on request") {
    tmod::program_memory_cache();  // what a program keeps (memory.hpp)
    using tmod::detail::region_cache;
    tmod::release_cached_memory();
    REQUIRE(region_cache::instance().cached_bytes() == 0);
    const std::uint32_t* first = nullptr;
    {
      tmod::detail::scratch_vector<std::uint32_t> a(3u << 20);  // 12 MiB: mapped directly
      a.back() = 7;
      first = a.data();
    }
    // Kept for reuse: whole huge pages of it.
    CHECK(region_cache::instance().cached_bytes() == 12u << 20);
    {
      tmod::detail::scratch_vector<std::uint32_t> b(3u << 20);
      CHECK(b.data() == first);  // the same region again, no new mapping
      CHECK(region_cache::instance().cached_bytes() == 0);
    }
    if constexpr (region_cache::splits) {
      {  // a smaller request takes the front of the region (the pages used before) ...
        tmod::detail::scratch_vector<std::uint32_t> c(1u << 19);  // 2 MiB
        CHECK(c.data() == first);
        CHECK(region_cache::instance().cached_bytes() == 10u << 20);
        tmod::detail::scratch_vector<std::uint32_t> c2(1u << 20);  // 4 MiB: the next part
        CHECK(c2.data() == first + (1u << 19));
        CHECK(region_cache::instance().cached_bytes() == 6u << 20);
      }
      // ... and freed, the parts merge again: the whole region serves a request of its size.
      CHECK(region_cache::instance().cached_bytes() == 12u << 20);
      tmod::detail::scratch_vector<std::uint32_t> whole(3u << 20);
      CHECK(whole.data() == first);
      CHECK(region_cache::instance().cached_bytes() == 0);
    } else {  // a request much smaller than a cached region does not take it
      tmod::detail::scratch_vector<std::uint32_t> c(1u << 19);  // 2 MiB
      CHECK(c.data() != first);
      CHECK(region_cache::instance().cached_bytes() == 12u << 20);
    }
    tmod::release_cached_memory();
    CHECK(region_cache::instance().cached_bytes() == 0);
    {  // the limit survives the release: freed arrays are cached again
      tmod::detail::scratch_vector<std::uint32_t> d(3u << 20);
    }
    CHECK(region_cache::instance().cached_bytes() == 12u << 20);
    tmod::release_cached_memory();
  }

  TEST_CASE("big arrays: trimming the cache keeps what it is told and the limit") {
    tmod::program_memory_cache();  // what a program keeps (memory.hpp)
    using tmod::detail::region_cache;
    tmod::release_cached_memory();
    const std::size_t limit = tmod::memory_usage().region_limit;
    {
      tmod::detail::scratch_vector<std::uint32_t> a(2u << 20), b(2u << 20), c(2u << 20);
      a.back() = b.back() = c.back() = 1;  // 8 MiB each
    }
    CHECK(region_cache::instance().cached_bytes() == 24u << 20);
    // Whole regions go (neighbours in memory are one region: what stays depends on where the
    // system mapped the arrays).
    tmod::trim_cached_memory(std::size_t{10} << 20);
    const std::size_t kept = region_cache::instance().cached_bytes();
    CHECK(kept <= std::size_t{10} << 20);
    CHECK(tmod::memory_usage().region_limit == limit);
    tmod::trim_cached_memory(std::size_t{64} << 20);  // nothing beyond it
    CHECK(region_cache::instance().cached_bytes() == kept);
    tmod::trim_cached_memory(0);
    CHECK(region_cache::instance().cached_bytes() == 0);
    {  // and arrays freed afterwards are cached again
      tmod::detail::scratch_vector<std::uint32_t> d(2u << 20);
    }
    CHECK(region_cache::instance().cached_bytes() == 8u << 20);
    tmod::release_cached_memory();
  }

  TEST_CASE("big arrays: a request no cached region holds takes the pages of freed arrays") {
    tmod::program_memory_cache();  // what a program keeps (memory.hpp)
    using tmod::detail::region_cache;
    if constexpr (region_cache::splits) {
      tmod::release_cached_memory();
      constexpr std::size_t mib = std::size_t{1} << 20;
      {  // two arrays freed, their pages touched (a pattern at the start of each huge page)
        tmod::detail::scratch_vector<std::uint32_t> a(4 * mib / 4), b(6 * mib / 4);
        for (std::size_t k = 0; k < a.size(); k += mib / 2)
          a[k] = 0xA000u + static_cast<std::uint32_t>(k / (mib / 2));
        for (std::size_t k = 0; k < b.size(); k += mib / 2)
          b[k] = 0xB000u + static_cast<std::uint32_t>(k / (mib / 2));
      }
      REQUIRE(region_cache::instance().cached_bytes() == 10 * mib);
      // 16 MiB: no region holds it. The pages of both move into it (moved, not copied: the
      // pattern is there; in which order depends on where the system mapped them, as
      // neighbours merge); the rest of it is new.
      auto* const p = static_cast<std::uint32_t*>(tmod::detail::big_allocate(16 * mib));
      CHECK(region_cache::instance().cached_bytes() == 0);
      std::vector<std::uint32_t> firsts;  // the first word of each of its huge pages
      for (std::size_t k = 0; k < 5; ++k) firsts.push_back(p[k * (mib / 2)]);
      CHECK(firsts[0] != 0u);
      std::sort(firsts.begin(), firsts.end());
      CHECK(firsts == std::vector<std::uint32_t>{0xA000u, 0xA001u, 0xB000u, 0xB001u, 0xB002u});
      CHECK(p[10 * mib / 4] == 0u);  // new pages read as zeros
      tmod::detail::big_deallocate(p, 16 * mib);
      tmod::release_cached_memory();
    }
  }

  TEST_CASE("big arrays: the part of a trace's text given back on the way is not kept") {
    tmod::program_memory_cache();  // what a program keeps (memory.hpp)
    using tmod::detail::region_cache;
    if constexpr (region_cache::splits) {
      tmod::release_cached_memory();
      constexpr std::size_t mib = std::size_t{1} << 20;
      {
        tmod::trace_text text(12 * mib);  // 12 MiB and the padding: 14 MiB mapped
        std::memset(text.data(), 'x', 12 * mib);
        text.release_before(8 * mib);  // the reader is past 8 MiB
        CHECK(text.released() == 8 * mib);
      }
      // The 6 MiB after what was released are kept; the released 8 MiB were unmapped.
      CHECK(region_cache::instance().cached_bytes() == 6 * mib);
      tmod::release_cached_memory();
    }
  }

  TEST_CASE(
      "block cache: arrays of 64 KiB up to 2 MiB are kept by power-of-two size, within a limit") {
    tmod::program_memory_cache();  // what a program keeps (memory.hpp)
    using tmod::detail::block_cache;
    tmod::release_cached_memory();
    REQUIRE(block_cache::instance().cached_bytes() == 0);
    const char* first = nullptr;
    {
      tmod::detail::scratch_vector<char> a(100u << 10);  // 100 KiB: a block of 128
      a.back() = 1;
      first = a.data();
      CHECK(reinterpret_cast<std::uintptr_t>(first) % 64 == 0);
    }
    CHECK(block_cache::instance().cached_bytes() == 128u << 10);
    {
      tmod::detail::scratch_vector<char> b(65u << 10);  // the same size class: the same block
      CHECK(b.data() == first);
      CHECK(block_cache::instance().cached_bytes() == 0);
      tmod::detail::scratch_vector<char> c(129u << 10);  // the next class: a block of its own
      CHECK(c.data() != first);
      CHECK(reinterpret_cast<std::uintptr_t>(c.data()) % 64 == 0);
    }
    CHECK(block_cache::instance().cached_bytes() == (128u + 256u) << 10);
    {  // below 64 KiB: operator new, nothing kept
      tmod::detail::scratch_vector<char> small(1000);
    }
    CHECK(block_cache::instance().cached_bytes() == (128u + 256u) << 10);
    // A limit frees what is beyond it, the largest blocks first, and keeps no more than it.
    tmod::set_memory_cache_limits(tmod::memory_usage().region_limit, 200u << 10);
    CHECK(block_cache::instance().cached_bytes() == 128u << 10);
    {
      tmod::detail::scratch_vector<char> d(200u << 10);  // its block of 256 KiB would pass it
    }
    CHECK(block_cache::instance().cached_bytes() == 128u << 10);
    tmod::release_cached_memory();
    CHECK(block_cache::instance().cached_bytes() == 0);
    {  // the limit survives the release
      tmod::detail::scratch_vector<char> e(100u << 10);
    }
    CHECK(block_cache::instance().cached_bytes() == 128u << 10);
    tmod::set_memory_cache_limits(tmod::memory_usage().region_limit,
                                  std::size_t{64} << 20);  // the default again
    tmod::release_cached_memory();
  }

  TEST_CASE("region cache: a request takes the front of the best region, freed parts merge") {
    tmod::program_memory_cache();  // what a program keeps (memory.hpp)
    // A cache of its own, given addresses that are never touched (nothing here maps, unmaps or
    // reads them): which region a request takes is the point.
    using tmod::detail::region_cache;
    if constexpr (region_cache::splits) {
      constexpr std::size_t mib = std::size_t{1} << 20;
      region_cache c;
      c.set_limit(std::size_t{2} << 30);
      auto at = [](std::uintptr_t a) { return reinterpret_cast<void*>(a << 20); };
      std::size_t actual = 0;
      REQUIRE(c.give(at(1000), 16 * mib));  // an array freed: its front was used
      REQUIRE(c.give(at(2000), 12 * mib));  // another, freed later
      CHECK(c.cached_bytes() == 28 * mib);
      // The smallest front first, split: 4 MiB of the 12.
      CHECK(c.take(4 * mib, actual) == at(2000));
      CHECK(actual == 4 * mib);
      // What is left of it (8 MiB) is smaller, but a front of a freed array comes first.
      CHECK(c.take(4 * mib, actual) == at(1000));
      // Only rests now: the smallest that holds the request.
      CHECK(c.take(6 * mib, actual) == at(2004));
      CHECK(c.take(14 * mib, actual) == nullptr);
      CHECK(c.take(12 * mib, actual) == at(1004));
      CHECK(c.cached_bytes() == 2 * mib);
      // Given back in pieces, the neighbours merge into the regions they came from.
      REQUIRE(c.give(at(2004), 6 * mib));
      REQUIRE(c.give(at(2000), 4 * mib));  // merges with 2004..2012 (2004..2010 met 2010..2012)
      CHECK(c.take(12 * mib, actual) == at(2000));
      REQUIRE(c.give(at(1004), 12 * mib));
      REQUIRE(c.give(at(1000), 4 * mib));
      CHECK(c.take(16 * mib, actual) == at(1000));
      CHECK(c.cached_bytes() == 0);
      // Among fronts of one size, the most recently freed.
      REQUIRE(c.give(at(4000), 4 * mib));
      REQUIRE(c.give(at(5000), 4 * mib));
      CHECK(c.take(4 * mib, actual) == at(5000));
      CHECK(c.take(4 * mib, actual) == at(4000));
      // Nothing beyond the limit is kept: the caller unmaps it.
      c.set_limit(8 * mib);
      CHECK_FALSE(c.give(at(3000), 10 * mib));
      CHECK(c.give(at(3000), 8 * mib));
      CHECK(c.take(8 * mib, actual) == at(3000));
    }
  }

  TEST_CASE("memory: recording slabs and arrays share one resource, one release returns both") {
    tmod::program_memory_cache();  // what a program keeps (memory.hpp)
    auto& pool = tmod::block_pool::instance();
    tmod::release_cached_memory();
    const tmod::memory_stats s0 = tmod::memory_usage();
    CHECK(s0.cached() == 0);
    CHECK(s0.pool_free == 0);
    void* block = pool.acquire();  // a slab from the resource: in use
    const tmod::memory_stats s1 = tmod::memory_usage();
    CHECK(s1.in_use == s0.in_use + tmod::block_pool::slab_size);
    CHECK(s1.pool_free == tmod::block_pool::slab_size - tmod::block_pool::block_size);
    {
      tmod::detail::scratch_vector<std::uint32_t> a(1u << 20);  // 4 MiB
      CHECK(tmod::memory_usage().in_use == s1.in_use + (4u << 20));
    }
    CHECK(tmod::memory_usage().in_use == s1.in_use);
    CHECK(tmod::memory_usage().regions_cached == 4u << 20);
    pool.release(block);
    CHECK(tmod::memory_usage().pool_free == tmod::block_pool::slab_size);
    // One call: the pool's free slab goes back to the resource, and the resource's caches to the
    // operating system.
    tmod::release_cached_memory();
    const tmod::memory_stats s2 = tmod::memory_usage();
    CHECK(s2.in_use == s0.in_use);
    CHECK(s2.cached() == 0);
    CHECK(pool.stats().blocks_owned == 0);
  }

  TEST_CASE("memory: the resource serves std::pmr containers") {
    tmod::program_memory_cache();  // what a program keeps (memory.hpp)
    tmod::release_cached_memory();
    std::pmr::memory_resource& r = tmod::array_memory();
    {
      std::pmr::vector<std::uint64_t> v(&r);
      v.resize(1u << 19);  // 4 MiB
      v.back() = 1;
      CHECK(reinterpret_cast<std::uintptr_t>(v.data()) % (std::size_t{2} << 20) == 0);
    }
    CHECK(tmod::memory_usage().regions_cached == 4u << 20);
    void* odd = r.allocate(100, 256);  // an alignment beyond what the size gets
    CHECK(reinterpret_cast<std::uintptr_t>(odd) % 256 == 0);
    r.deallocate(odd, 100, 256);
    CHECK(r.is_equal(tmod::array_memory()));
    tmod::release_cached_memory();
  }
}
