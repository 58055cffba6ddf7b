// Recording compiled out (TRACEMODEL_ENABLE_COLLECTION=0, preset no-collection) costs nothing:
// the macro's arguments are type-checked but never evaluated and nothing is recorded. With
// recording compiled in, the same code records.
#include <doctest/doctest.h>

#include <tracemodel/collect.hpp>

TEST_CASE("TRACEMODEL_SCOPED_OP evaluates its arguments only when recording is compiled in") {
  tracemodel::record_queue<> q;
  int evaluated = 0;
  auto name = [&evaluated] {
    ++evaluated;
    return "counted";
  };
  { TRACEMODEL_SCOPED_OP(q, .name = name()); }
  tracemodel::event_table t = tracemodel::materialize(q);
  if constexpr (tracemodel::collection_enabled) {
    CHECK(evaluated == 1);
    CHECK(t.size() == 1);
  } else {
    CHECK(evaluated == 0);
    CHECK(t.size() == 0);
    CHECK_FALSE(q.begin_op({.name = "direct call"}));  // the API records nothing either
  }
}
