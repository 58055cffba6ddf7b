// The recording headers that a runtime includes everywhere must not pull in the heavy headers
// (Boost.Hana, range-v3, simdjson, fmt): compile time matters in a header-only library.
#include <tracemodel/collect.hpp>

#if defined(BOOST_HANA_CONFIG_HPP)
#error "tracemodel/collect.hpp includes Boost.Hana"
#endif
#if defined(RANGES_V3_RANGE_FWD_HPP)
#error "tracemodel/collect.hpp includes range-v3"
#endif
#if defined(SIMDJSON_H)
#error "tracemodel/collect.hpp includes simdjson"
#endif
#if defined(FMT_VERSION)
#error "tracemodel/collect.hpp includes fmt"
#endif

#include <doctest/doctest.h>

TEST_CASE("collect.hpp stays light: no Hana, range-v3, simdjson or fmt") {
  // The checks above are compile-time; this case makes the file show up in the test list.
  tracemodel::record_queue<> q;
  CHECK(q.id() > 0);
}
