// A user-declared schema: the default kinds with one added and several removed, and a schema of
// a user's own enum. No library code is edited.
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <string_view>

#include <tracemodel/collect.hpp>
#include <tracemodel/model.hpp>

// A kind added to the default enum (any unused value of its underlying type).
inline constexpr auto gc_pause = tracemodel::event_kind{40};
template <>
struct tracemodel::extra_fields<gc_pause> {
  static constexpr std::string_view kind_name = "gc_pause";
  std::string_view name;  // static strings only
  std::int64_t end_ns = 0;
  std::uint64_t bytes_freed = 0;
};

// A user's own kinds.
namespace sim {
enum class kind : std::uint8_t { job, frame };
}
template <>
struct tracemodel::extra_fields<sim::kind::job> {
  static constexpr std::string_view kind_name = "job";
  static constexpr std::string_view default_name = "job";
  std::uint32_t worker = 0;
  std::int64_t end_ns = 0;
};
template <>
struct tracemodel::extra_fields<sim::kind::frame> {
  static constexpr std::string_view kind_name = "frame";
  std::uint64_t number = 0;
};

using namespace tracemodel;

// Kinds added: gc_pause; removed: backend, out_of_memory, script_call, native_call, device.
using small_schema = schema<event_kind::op, event_kind::allocation, gc_pause>;
using sim_schema = schema<sim::kind::job, sim::kind::frame>;

// The smaller schema's results are not larger than the default's.
static_assert(sizeof(basic_event<small_schema>) <= sizeof(basic_event<default_schema>));
static_assert(sizeof(basic_event<sim_schema>) < sizeof(basic_event<default_schema>));
// A removed kind has no storage in the record queue either.
static_assert(
    sizeof(detail::thread_subqueue<small_schema, record_features{}, default_record_policies>) <
    sizeof(detail::thread_subqueue<default_schema, record_features{}, default_record_policies>));
static_assert(small_schema::contains<gc_pause>);
static_assert(!small_schema::contains<event_kind::device_activity>);
static_assert(small_schema::index_of<gc_pause> == 2);
static_assert(std::variant_size_v<small_schema::fields_variant> == small_schema::size);

// Recording a removed kind does not compile (checked here as a constraint).
template <class Q>
concept can_record_oom = requires(Q q) {
  q.record_out_of_memory(1, 2, 3);
};
static_assert(can_record_oom<record_queue<default_schema>>);
static_assert(!can_record_oom<record_queue<small_schema>>);
template <class Q>
concept can_begin_op = requires(Q q) {
  q.begin_op(op_info{});
};
static_assert(!can_begin_op<record_queue<sim_schema>>);

// These cases record; with recording compiled out they are skipped (see disabled.cpp).
TEST_SUITE("collect" * doctest::skip(!collection_enabled)) {
  TEST_CASE("a schema with a kind added and kinds removed records and materializes") {
    record_queue<small_schema> q;
    auto op = q.begin_op({.name = "collect_garbage"});
    q.record_allocation(0x10, -64, 0, 128);
    const approx_time s = q.now();
    const approx_time e = q.now();
    q.record_span<gc_pause>(s, e, {.name = "minor gc", .end_ns = 0, .bytes_freed = 64});
    q.end_op(op);
    basic_event_table<small_schema> t = materialize(q);
    REQUIRE(t.size() == 3);
    CHECK(t[0].kind() == event_kind::op);
    CHECK(t.name(t[0]) == "collect_garbage");
    CHECK(t[1].kind() == event_kind::allocation);
    CHECK(t[2].kind() == gc_pause);
    CHECK(t.name(t[2]) == "minor gc");
    const auto& g = t[2].get<gc_pause>();
    CHECK(g.bytes_freed == 64);
    CHECK(g.end_ns >= t[2].start_ns);  // the recorded end, converted
    CHECK(t[2].end_ns() == g.end_ns);
    CHECK(t.category(t[2]) == "gc_pause");
  }

  TEST_CASE("a schema of a user's own enum") {
    record_queue<sim_schema> q;
    q.record<sim::kind::frame>({.number = 12});
    const approx_time s = q.now();
    q.record_span<sim::kind::job>(s, q.now(), {.worker = 3});
    basic_event_table<sim_schema> t = materialize(q);
    REQUIRE(t.size() == 2);
    CHECK(t[0].kind() == sim::kind::frame);
    CHECK(t.name(t[0]) == "frame");  // no name member, no default_name: the kind's name
    CHECK(t[0].is_instant());
    CHECK(t[1].get<sim::kind::job>().worker == 3);
    CHECK(t.name(t[1]) == "job");
  }
}
