// A runtime with event kinds of its own: a database engine that records queries, page reads
// and lock waits. Its payloads are plain structs; Boost.Hana reflection makes their fields the
// `args` of the exported trace, with no exporter code per field.
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include <tracemodel/collect.hpp>
#include <tracemodel/formats/chrome_trace_writer.hpp>
#include <tracemodel/model/reflect.hpp>

namespace db {
enum class kind : std::uint8_t { query, page_read, lock_wait };
}

template <>
struct tracemodel::extra_fields<db::kind::query> {
  static constexpr std::string_view kind_name = "query";
  tracemodel::name_id name{};  // the statement
  std::int64_t end_ns = 0;
  std::uint64_t rows = 0;
};
template <>
struct tracemodel::extra_fields<db::kind::page_read> {
  static constexpr std::string_view kind_name = "page_read";
  static constexpr std::string_view default_name = "page read";
  std::int64_t end_ns = 0;
  std::uint64_t page = 0;
  bool cache_hit = false;
};
template <>
struct tracemodel::extra_fields<db::kind::lock_wait> {
  static constexpr std::string_view kind_name = "lock_wait";
  static constexpr std::string_view default_name = "lock wait";
  std::int64_t end_ns = 0;
  std::uint32_t table_id = 0;
};
BOOST_HANA_ADAPT_STRUCT(tracemodel::extra_fields<db::kind::query>, name, end_ns, rows);
BOOST_HANA_ADAPT_STRUCT(tracemodel::extra_fields<db::kind::page_read>, end_ns, page, cache_hit);
BOOST_HANA_ADAPT_STRUCT(tracemodel::extra_fields<db::kind::lock_wait>, end_ns, table_id);

using db_schema = tracemodel::schema<db::kind::query, db::kind::page_read, db::kind::lock_wait>;
using db_table = tracemodel::basic_event_table<db_schema>;

int main(int argc, char** argv) {
  db_table t;
  auto add = [&t](std::int64_t start, db_table::event_type::fields_type payload) {
    auto& e = t.events.emplace_back();
    e.start_ns = start;
    e.pid = 1;
    e.tid = 1;
    e.fields = payload;
  };
  using query = tracemodel::extra_fields<db::kind::query>;
  using page_read = tracemodel::extra_fields<db::kind::page_read>;
  using lock_wait = tracemodel::extra_fields<db::kind::lock_wait>;
  add(1'000, query{t.strings.intern("SELECT * FROM orders WHERE id = 7"), 9'000, 1});
  add(2'000, page_read{3'000, 4711, true});
  add(3'500, lock_wait{7'500, 12});
  add(7'600, page_read{8'800, 4712, false});
  t.set_process_name(1, "db engine");
  const std::string json = tracemodel::chrome_trace_string(t);
  std::fputs(json.c_str(), stdout);
  if (argc > 1) tracemodel::write_chrome_trace_file(t, argv[1]);
}
