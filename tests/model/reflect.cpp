#include <doctest/doctest.h>

#include <string>
#include <type_traits>
#include <vector>

#include <tracemodel/model/reflect.hpp>

using namespace tracemodel;

namespace {
template <class T>
std::vector<std::string> field_names() {
  std::vector<std::string> out;
  for_each_field(T{}, [&](std::string_view n, const auto&) { out.emplace_back(n); });
  return out;
}
}  // namespace

// A user kind, reflected the way the header's comment says.
inline constexpr auto gc_pause = event_kind{41};
template <>
struct tracemodel::extra_fields<gc_pause> {
  static constexpr std::string_view kind_name = "gc_pause";
  std::string_view name;
  std::int64_t end_ns = 0;
  std::uint64_t bytes_freed = 0;
};
BOOST_HANA_ADAPT_STRUCT(tracemodel::extra_fields<gc_pause>, name, end_ns, bytes_freed);
static_assert(reflectable<extra_fields<gc_pause>>);
static_assert(fully_reflected<extra_fields<gc_pause>>);

// A struct with a member that is not adapted is detected.
struct partly {
  int a = 0;
  int b = 0;
};
BOOST_HANA_ADAPT_STRUCT(partly, a);
static_assert(!fully_reflected<partly>);

TEST_SUITE("model") {
  TEST_CASE("for_each_field walks payload fields by name, in declaration order") {
    CHECK(field_names<extra_fields<event_kind::allocation>>() ==
          std::vector<std::string>{"ptr", "alloc_size", "total_allocated", "total_reserved",
                                   "device_type", "device_index", "tensor_id"});
    CHECK(field_names<extra_fields<event_kind::op>>().front() == "name");
    CHECK(field_names<extra_fields<event_kind::op>>().size() == 11);
    CHECK(field_names<extra_fields<gc_pause>>() ==
          std::vector<std::string>{"name", "end_ns", "bytes_freed"});
  }

  TEST_CASE("for_each_field gives the values, so generic printers need no per-field code") {
    extra_fields<event_kind::out_of_memory> oom{};
    oom.alloc_size = 1 << 20;
    oom.total_reserved = 4096;
    oom.device_index = 2;
    std::string text;
    for_each_field(oom, [&](std::string_view n, const auto& v) {
      text += std::string(n) + "=" + std::to_string(static_cast<long long>(v)) + ";";
    });
    CHECK(text ==
          "alloc_size=1048576;total_allocated=0;total_reserved=4096;device_type=0;device_index=2;");
  }
}
