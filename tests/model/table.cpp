#include <doctest/doctest.h>

#include <map>
#include <random>
#include <string>
#include <vector>

#include <tracemodel/model.hpp>

using namespace tracemodel;

TEST_SUITE("model") {
  TEST_CASE("string_table: interning deduplicates and views survive growth and moves") {
    string_table s;
    CHECK(s.intern("") == empty_name);
    const name_id a = s.intern("aten::add");
    std::vector<name_id> ids;
    std::vector<std::string> texts;
    for (int i = 0; i < 20000; ++i) {  // forces index growth and several chunks
      texts.push_back("name_" + std::to_string(i) +
                      std::string(static_cast<std::size_t>(i % 50), 'x'));
      ids.push_back(s.intern(texts.back()));
    }
    const std::string big(100000, 'b');  // a string larger than a chunk
    const name_id b = s.intern(big);
    const std::string_view av = s.view(a);
    string_table moved = std::move(s);
    CHECK(moved.intern("aten::add") == a);
    CHECK(moved.view(a).data() == av.data());  // same characters, not a copy
    for (std::size_t i = 0; i < ids.size(); ++i) {
      CHECK(moved.view(ids[i]) == texts[i]);
      CHECK(moved.intern(texts[i]) == ids[i]);
    }
    CHECK(moved.view(b) == big);
    CHECK(moved.size() == ids.size() + 3);  // "", "aten::add", big
    name_id found{};
    CHECK(moved.find("name_7xxxxxxx", found));
    CHECK(found == ids[7]);
    CHECK_FALSE(moved.find("never interned", found));
    string_table copy = moved;
    CHECK(copy.view(ids[123]) == texts[123]);
    CHECK(copy.view(ids[123]).data() != moved.view(ids[123]).data());
  }

  TEST_CASE("string_table: ids agree with a map on strings built to collide in its cache") {
    // Same length, same first and last 8 bytes, different middles: one cache slot, many strings.
    std::mt19937_64 rng(5);
    string_table s;
    std::map<std::string, name_id> reference;
    for (int i = 0; i < 20000; ++i) {
      std::string t = "prefix__";
      const std::size_t middle = rng() % 4;
      for (std::size_t k = 0; k < middle; ++k) t += static_cast<char>('a' + rng() % 3);
      t += "__suffix";
      if (rng() % 5 == 0) t = t.substr(0, 1 + rng() % 6);  // short ones too
      const name_id id = s.intern(t);
      const auto [it, inserted] = reference.try_emplace(t, id);
      CHECK(it->second == id);
      CHECK(s.view(id) == t);
      if (!inserted) continue;
      CHECK(static_cast<std::size_t>(id) == reference.size());  // new strings get the next id
    }
    CHECK(s.size() == reference.size() + 1);
    string_table moved = std::move(s);
    name_id found{};
    CHECK_FALSE(s.find("prefix____suffix", found));  // NOLINT: a moved-from table is usable
    CHECK(s.intern("prefix____suffix") == name_id{1});
    CHECK(s.view(name_id{1}) == "prefix____suffix");
    CHECK(moved.intern("prefix____suffix") == reference.at("prefix____suffix"));
  }

  TEST_CASE("string_table: its byte compares and hash read every byte, at every length") {
    // The compares and the hash load whole words (overlapping at the end, or the first, middle
    // and last byte of a very short string): a string that differs from another in any one
    // byte must compare unequal, at every length and position.
    std::mt19937_64 rng(11);
    for (std::size_t n = 0; n <= 40; ++n) {
      for (int round = 0; round < 20; ++round) {
        std::string a(n, ' ');
        for (char& c : a) c = static_cast<char>('a' + rng() % 4);
        std::string b = a;
        CHECK(detail::same_text(a, b));
        CHECK(detail::hash_bytes(a.data(), n) == detail::hash_bytes(b.data(), n));
        for (std::size_t k = 0; k < n; ++k) {
          std::string c = a;
          c[k] = static_cast<char>(c[k] ^ (1 + static_cast<int>(rng() % 7)));
          CHECK_MESSAGE(!detail::same_text(a, c), "length ", n, " byte ", k);
          // One byte apart at the front of a longer buffer: the compares stay within n.
          CHECK(detail::same_bytes(a.data(), c.data(), k));
          if (n < 8) CHECK(detail::short_word(a.data(), n) != detail::short_word(c.data(), n));
        }
        if (n > 0) CHECK_FALSE(detail::same_text(a, a.substr(0, n - 1)));
      }
    }
    // Short strings of one length that differ get different hashes (each is one word).
    std::map<std::uint64_t, std::string> seen;
    for (std::size_t n = 1; n < 8; ++n)
      for (int i = 0; i < 2000; ++i) {
        std::string a(n, ' ');
        for (char& c : a) c = static_cast<char>(rng() % 256);
        const auto [it, fresh] = seen.try_emplace(detail::hash_bytes(a.data(), n), a);
        CHECK((fresh || it->second == a));
      }
  }

  TEST_CASE("event accessors are computed by visiting the payload") {
    event_table t;
    t.events.reserve(4);  // the references below must stay valid
    auto& op = t.events.emplace_back();
    op.start_ns = 100;
    op.tid = 1;
    auto& f = op.fields.emplace<0>();
    f.name = t.strings.intern("aten::mm");
    f.end_ns = 250;
    f.correlation_id = 12;
    f.end_tid = 2;
    auto& al = t.events.emplace_back();
    al.start_ns = 120;
    al.tid = 1;
    al.fields.emplace<default_schema::index_of<event_kind::allocation>>().alloc_size = 64;
    auto& dev = t.events.emplace_back();
    dev.start_ns = 130;
    auto& d = dev.fields.emplace<default_schema::index_of<event_kind::device_activity>>();
    d.name = t.strings.intern("Memcpy HtoD");
    d.activity = activity_type::gpu_memcpy;
    d.end_ns = 160;
    d.correlation_id = 9;
    auto& unk = t.events.emplace_back();
    auto& u = unk.fields.emplace<default_schema::index_of<event_kind::device_activity>>();
    u.category = t.strings.intern("mystery_cat");

    CHECK(op.kind() == event_kind::op);
    CHECK(op.is<event_kind::op>());
    CHECK_FALSE(op.is<event_kind::allocation>());
    CHECK(op.end_ns() == 250);
    CHECK(op.duration_ns() == 150);
    CHECK(op.correlation_id() == 12);
    CHECK(op.end_tid() == 2);
    CHECK_FALSE(op.is_instant());
    CHECK(t.name(op) == "aten::mm");
    CHECK(t.category(op) == "cpu_op");

    CHECK(al.end_ns() == 120);
    CHECK(al.is_instant());
    CHECK(al.end_tid() == 1);
    CHECK(t.name(al) == "[memory]");
    CHECK(t.category(al) == "cpu_instant_event");

    CHECK(dev.correlation_id() == 9);
    CHECK(t.category(dev) == "gpu_memcpy");
    CHECK(t.name(dev) == "Memcpy HtoD");
    CHECK(t.category(unk) == "mystery_cat");
  }

  TEST_CASE("new_fields: a new event's default fields of the kind, else that kind's made") {
    event_table::event_type e;
    auto& f = e.new_fields<event_kind::op>();  // (the first kind: the default fields)
    CHECK(&f == std::get_if<default_schema::index_of<event_kind::op>>(&e.fields));
    CHECK(f.sequence_number == -1);
    CHECK(f.end_ns == no_end_ns);
    CHECK(f.debug_handle == -1);
    f.end_ns = 5;
    CHECK(e.new_fields<event_kind::op>().end_ns == 5);  // (kept: its rule is for new events)
    auto& a = e.new_fields<event_kind::allocation>();   // another kind: emplaced
    CHECK(e.kind() == event_kind::allocation);
    CHECK(a.alloc_size == 0);
    a.alloc_size = 64;
    CHECK(e.new_fields<event_kind::op>().end_ns == no_end_ns);  // back to a default op
    CHECK(e.kind() == event_kind::op);
  }

  TEST_CASE("attributes: typed values, lists, lookup by key") {
    event_table t;
    auto& e = t.events.emplace_back();
    t.add_int_attr(e, "Ev Idx", 7);
    t.add_string_attr(e, "kernel_backend", "triton");
    t.add_int_list_attr(e, "grid", std::vector<int>{1, 2, 3});
    t.add_string_list_attr(e, "Module Hierarchy", std::vector<std::string>{"TOP", "fc1"});
    REQUIRE(t.attrs_of(e).size() == 4);
    CHECK(t.find_attr(e, "Ev Idx")->i == 7);
    CHECK(t.strings[t.find_attr(e, "kernel_backend")->s] == "triton");
    auto grid = t.int_list(*t.find_attr(e, "grid"));
    CHECK(std::vector<std::int64_t>(grid.begin(), grid.end()) ==
          std::vector<std::int64_t>{1, 2, 3});
    CHECK(t.strings[t.string_list(*t.find_attr(e, "Module Hierarchy"))[1]] == "fc1");
    CHECK(t.find_attr(e, "absent") == nullptr);
  }

  TEST_CASE("string keys stand for string thread ids of a file") {
    event_table t;
    const std::uint64_t k = t.string_key("stream 7 (sync)");
    CHECK(event_table::is_string_key(k));
    CHECK_FALSE(event_table::is_string_key(12345));
    CHECK(t.key_label(k) == "stream 7 (sync)");
    CHECK(t.string_key("stream 7 (sync)") == k);
  }

  TEST_CASE("activity categories round-trip through their names") {
    for (std::size_t i = 0; i < activity_type_names.size(); ++i) {
      const auto a = static_cast<activity_type>(i);
      if (a == activity_type::other) continue;
      CHECK(activity_type_from(to_string(a)) == a);
    }
    CHECK(activity_type_from("Kernel") == activity_type::kernel);
    CHECK(activity_type_from("no such category") == activity_type::other);
  }
}
