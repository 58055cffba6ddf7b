#include <doctest/doctest.h>

#include <cstdint>

#include <tracemodel/detail/big_allocator.hpp>

namespace tmod = tracemodel;

TEST_SUITE("storage") {
  TEST_CASE("big arrays: freed regions are reused, and released on request") {
    using tmod::detail::region_cache;
    tmod::release_cached_arrays();
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
    {  // a request much smaller than a cached region does not take it
      tmod::detail::scratch_vector<std::uint32_t> c(1u << 19);  // 2 MiB
      CHECK(c.data() != first);
      CHECK(region_cache::instance().cached_bytes() == 12u << 20);
    }
    tmod::release_cached_arrays();
    CHECK(region_cache::instance().cached_bytes() == 0);
    {  // the limit survives the release: freed arrays are cached again
      tmod::detail::scratch_vector<std::uint32_t> d(3u << 20);
    }
    CHECK(region_cache::instance().cached_bytes() == 12u << 20);
    tmod::release_cached_arrays();
  }
}
