#include <doctest/doctest.h>

#include <limits>

#include <string>
#include <vector>

#include <tracemodel/algo/analyze.hpp>
#include <tracemodel/algo/key_averages.hpp>
#include <tracemodel/algo/tensor_ids.hpp>
#include <tracemodel/algo/tree.hpp>
#include <tracemodel/testing/builder.hpp>

using namespace tracemodel;
using tracemodel::testing::table_builder;

namespace {
/// Adds an op with tensor inputs given as (impl, storage) pairs.
void op_with_tensors(table_builder& b, const char* name, std::int64_t time,
                     std::initializer_list<std::pair<std::uint64_t, std::uint64_t>> tensors,
                     std::initializer_list<std::int64_t> dims = {2}) {
  b.op(name, time, time + 1).tensors(tensors, dims);
}
std::vector<std::uint64_t> ids_of(const event_table& t, std::size_t event) {
  std::vector<std::uint64_t> out;
  for (const input_value& v : t.inputs_of(t.events[event])) out.push_back(v.tensor_id);
  return out;
}
}  // namespace

TEST_SUITE("algo") {
  TEST_CASE("assign_tensor_ids: storage reuse after a free, impls that change storage") {
    table_builder b;
    b.allocation(0x100, 64, 0);                                   // 0: storage S1 at 0x100
    op_with_tensors(b, "op1", 10, {{0xA, 0x100}, {0xB, 0x200}});  // 1: A on S1, B on S2
    b.allocation(0x300, 64, 20);                                  // 2: S3, used by C below
    op_with_tensors(b, "op2", 30, {{0xC, 0x300}});                // 3
    b.allocation(0x100, -64, 40);                                 // 4: S1 freed
    b.allocation(0x100, 64, 50);                             // 5: 0x100 again: a new storage S4
    op_with_tensors(b, "op3", 60, {{0xD, 0x100}});           // 6: D on S4 (not A's storage)
    b.op("aten::set_", 70, 75).tensors({{0xA, 0x200}});      // 7: A on S2; S1 freed at 40, not
                                                             // in op1: A's address was reused
    b.allocation(0x900, 128, 80);                            // 8: no tensor ever uses it
    b.op("aten::resize_", 90, 99).tensors({{0xE, 0x500}});   // 9: E on S5
    b.allocation(0x600, 64, 92).allocation(0x500, -64, 93);  // 10, 11: S6 made, S5 freed in it
    op_with_tensors(b, "op5", 100, {{0xE, 0x600}});          // 12: E on S6: S5, S6 merge
    event_table t = b.take();
    const tensor_id_stats s = assign_tensor_ids(t);
    // Groups in order of first storage: S1 (A) = 1, S2 (B) = 2, S3 (C) = 3, S4 (D) = 4,
    // {S5, S6} (E) = 5.
    CHECK(ids_of(t, 1) == std::vector<std::uint64_t>{1, 2});
    CHECK(ids_of(t, 3) == std::vector<std::uint64_t>{3});
    CHECK(ids_of(t, 6) == std::vector<std::uint64_t>{4});
    CHECK(ids_of(t, 7) == std::vector<std::uint64_t>{2});
    CHECK(ids_of(t, 9) == std::vector<std::uint64_t>{5});
    CHECK(ids_of(t, 12) == std::vector<std::uint64_t>{5});
    CHECK(t[0].get<event_kind::allocation>().tensor_id == 1);
    CHECK(t[2].get<event_kind::allocation>().tensor_id == 3);
    CHECK(t[4].get<event_kind::allocation>().tensor_id == 1);  // the free of S1
    CHECK(t[5].get<event_kind::allocation>().tensor_id == 4);
    CHECK(t[8].get<event_kind::allocation>().tensor_id == 0);  // never a tensor
    CHECK(t[10].get<event_kind::allocation>().tensor_id == 5);
    CHECK(s.ids == 5);
    CHECK(s.tensors == 7);
    CHECK(s.allocations == 6);
    CHECK(s.storages == 7);
  }

  TEST_CASE("assign_tensor_ids: chains of shared storage are one group (a real disjoint-set)") {
    // Storages X, Z, Y appear in that order. E goes X -> Y, F goes Z -> Y (Y made at 15, X and Z
    // freed after it within the ops that last saw E and F on them: their storages replaced).
    // PyTorch's greedy pass over the sorted pairs {(X,Y), (Z,Y)} leaves Z apart; all three
    // belong together.
    table_builder b;
    b.op("e on X", 0, 19).tensors({{0xE, 0x1}});
    b.op("f on Z", 10, 26).tensors({{0xF, 0x3}});
    op_with_tensors(b, "e on Y", 20, {{0xE, 0x2}});
    op_with_tensors(b, "f on Y", 30, {{0xF, 0x2}});
    op_with_tensors(b, "g on W", 40, {{0x6, 0x4}});
    b.allocation(0x2, 8, 15).allocation(0x1, -8, 18).allocation(0x3, -8, 25);  // events 5 to 7
    event_table t = b.take();
    assign_tensor_ids(t);
    CHECK(ids_of(t, 0) == std::vector<std::uint64_t>{1});
    CHECK(ids_of(t, 1) == std::vector<std::uint64_t>{1});
    CHECK(ids_of(t, 2) == std::vector<std::uint64_t>{1});
    CHECK(ids_of(t, 3) == std::vector<std::uint64_t>{1});
    CHECK(ids_of(t, 4) == std::vector<std::uint64_t>{2});
  }

  TEST_CASE("assign_tensor_ids: an implementation's address reused by a new tensor is another") {
    // A view V of a parameter P dies; its address comes back for a new tensor N while P lives
    // on (never freed): N is not P. A tensor T whose storage S1 an op replaces by S2 (S2 made,
    // then S1 freed, within that op) stays one tensor.
    table_builder b;
    op_with_tensors(b, "aten::t", 0, {{0xA, 0x100}});        // 0: P
    op_with_tensors(b, "aten::mm", 10, {{0xB, 0x100}});      // 1: V, a view of P
    b.allocation(0x200, 64, 20);                             // 2: N's storage
    op_with_tensors(b, "aten::relu", 30, {{0xB, 0x200}});    // 3: N at V's old address
    b.op("aten::resize_", 40, 45).tensors({{0xC, 0x300}});   // 4: T on S1
    b.allocation(0x400, 64, 41).allocation(0x300, -64, 42);  // 5, 6: S2 made, S1 freed in it
    op_with_tensors(b, "aten::add", 50, {{0xC, 0x400}});     // 7: T on S2
    event_table t = b.take();
    assign_tensor_ids(t);
    CHECK(ids_of(t, 0) == ids_of(t, 1));  // a view shares its base's storage
    CHECK(ids_of(t, 3) != ids_of(t, 1));
    CHECK(ids_of(t, 7) == ids_of(t, 4));
  }

  TEST_CASE("assign_tensor_ids: the same address on another device is another storage") {
    table_builder b;
    op_with_tensors(b, "cpu", 0, {{0xA, 0x100}});
    op_with_tensors(b, "gpu", 10, {{0xB, 0x100}});
    event_table t = b.take();
    t.inputs[1].device_type = 1;
    t.inputs[1].device_index = 0;
    assign_tensor_ids(t);
    CHECK(ids_of(t, 0) == std::vector<std::uint64_t>{1});
    CHECK(ids_of(t, 1) == std::vector<std::uint64_t>{2});
  }

  TEST_CASE("key_averages: counts, totals and self times on a hand-built tree") {
    table_builder b;
    b.op("A", 0, 100);
    b.op("B", 10, 40);
    b.table().events.emplace_back();  // a script frame between two ops: not counted
    {
      auto& p = b.table().events.back();
      p.start_ns = 50;
      p.tid = 1;
      p.pid = 1;
      auto& f = p.fields.emplace<default_schema::index_of<event_kind::script_call>>();
      f.name = b.table().strings.intern("model.py(3): forward");
      f.end_ns = 90;
    }
    b.op("C", 55, 85);
    b.op("D", 200, 210);
    b.op("A", 300, 350);
    b.op("B", 310, 320);
    event_table t = b.take();
    build_tree(t);
    const auto rows = key_averages(t);
    REQUIRE(rows.size() == 4);
    // Sorted by total, largest first.
    CHECK(rows[0].name == "A");
    CHECK(rows[0].count == 2);
    CHECK(rows[0].total_ns == 150);
    CHECK(rows[0].self_ns == 80);  // (100 - B 30 - C 30) + (50 - B 10): C counts through P
    CHECK(rows[1].name == "B");
    CHECK(rows[1].total_ns == 40);
    CHECK(rows[1].self_ns == 40);
    CHECK(rows[2].name == "C");
    CHECK(rows[2].self_ns == 30);
    CHECK(rows[3].name == "D");
    CHECK(rows[3].self_ns == 10);
    CHECK(rows[0].self_share == doctest::Approx(80.0 / 160.0));
    CHECK(rows[0].total_share == doctest::Approx(150.0 / 160.0));
    double shares = 0;
    for (const auto& r : rows) shares += r.self_share;
    CHECK(shares == doctest::Approx(1.0));

    const auto by_self = key_averages(t, {.sort = sort_by::self});
    CHECK(by_self[0].name == "A");
    CHECK(by_self[1].name == "B");
    const auto by_count = key_averages(t, {.sort = sort_by::count});
    CHECK(by_count[0].count == 2);
    CHECK(by_count[2].count == 1);

    const std::string text = format_key_averages(rows, 2);
    CHECK(text.find("Name") != std::string::npos);
    CHECK(text.find("A       50.00%       0.080us    93.75%       0.150us         2\n") !=
          std::string::npos);
    CHECK(text.find("C ") == std::string::npos);  // only the top 2
    CHECK(text.find("Self time total: 0.160us") != std::string::npos);
  }

  TEST_CASE("key_averages: device time goes to the launching op and adds up to its callers") {
    table_builder b;
    b.op("A", 0, 100);  // correlation id 1
    b.op("B", 10, 60);  // 2
    b.device("cudaLaunchKernel", activity_type::cuda_runtime, 15, 20, 1, 1)
        .correlation(50)
        .external_id(2);
    b.device("gemm", activity_type::kernel, 30, 55).correlation(50).external_id(2);
    b.device("Memcpy HtoD", activity_type::gpu_memcpy, 70, 75).external_id(1);
    // No external id: the kernel's launch (by correlation), then the op above the launch.
    b.device("cudaLaunchKernel", activity_type::cuda_runtime, 80, 85, 1, 1).correlation(51);
    b.device("gemm", activity_type::kernel, 120, 130).correlation(51);
    b.op("C", 150, 160);
    b.device("orphan", activity_type::kernel, 200, 204).external_id(99);  // no such op: a row only
    b.device("step", activity_type::gpu_user_annotation, 0, 300);         // a row, in no total
    event_table t = b.take();
    analyze(t);

    auto find = [](const row_list<key_average_row>& rows,
                   const char* name) -> const key_average_row& {
      for (const auto& r : rows)
        if (r.name == name) return r;
      FAIL("no row " << name);
      return rows.front();
    };
    for (const nesting how : {nesting::containment, nesting::tree}) {
      CAPTURE(static_cast<int>(how));
      const auto rows = key_averages(t, {.sort = sort_by::self_device, .children = how});
      REQUIRE(rows.size() == 8);  // A, B, C, cudaLaunchKernel, gemm, Memcpy HtoD, orphan, step
      CHECK(rows[0].name == "gemm");
      CHECK(rows[1].name == "B");
      CHECK(rows[2].name == "A");
      CHECK(rows[3].name == "Memcpy HtoD");
      CHECK(rows[4].name == "orphan");
      const auto& step = find(rows, "step");
      CHECK(step.gpu_annotations);
      CHECK(step.device_activities);
      CHECK(step.count == 1);
      CHECK(step.device_total_ns == 300);
      CHECK(step.self_device_ns == 0);
      CHECK(step.self_device_share == 0);
      const auto& a = find(rows, "A");
      CHECK(a.self_device_ns == 15);     // the memcpy (external id) and the second kernel (tree)
      CHECK(a.device_total_ns == 40);    // ... and B's
      CHECK(a.self_ns == 100 - 50 - 5);  // CPU time as before: B and the second launch
      CHECK(a.self_device_share == doctest::Approx(15.0 / 44.0));
      const auto& bb = find(rows, "B");
      CHECK(bb.self_device_ns == 25);
      CHECK(bb.device_total_ns == 25);
      const auto& gemm = find(rows, "gemm");
      CHECK(gemm.count == 2);
      CHECK(gemm.device_activities);
      CHECK(gemm.self_device_ns == 35);
      CHECK(gemm.device_total_ns == 35);
      CHECK(gemm.total_ns == 0);
      CHECK(gemm.self_ns == 0);
      CHECK(gemm.self_device_share == doctest::Approx(35.0 / 44.0));
      CHECK(find(rows, "orphan").self_device_ns == 4);
      CHECK(find(rows, "cudaLaunchKernel").count == 2);
      CHECK(find(rows, "cudaLaunchKernel").device_total_ns == 0);
      CHECK(find(rows, "C").device_total_ns == 0);
      CHECK_FALSE(find(rows, "A").device_activities);
    }
    const auto by_total = key_averages(t, {.sort = sort_by::device_total});
    CHECK(by_total[0].name == "step");
    CHECK(by_total[1].name == "A");
    CHECK(by_total[2].name == "gemm");

    const auto cpu_only = key_averages(t, {.device_rows = false});
    CHECK(cpu_only.size() == 4);
    for (const auto& r : cpu_only) CHECK_FALSE(r.device_activities);
    CHECK(find(cpu_only, "A").device_total_ns == 40);

    const std::string text =
        format_key_averages(key_averages(t, {.sort = sort_by::device_total}), 3);
    CHECK(text.find("Self device") != std::string::npos);
    CHECK(text.find("Name    Self %          Self   Total %         Total     Count   Self device  "
                    "Self d %    Device total\n") != std::string::npos);
    CHECK(text.find("gemm     0.00%       0.000us     0.00%       0.000us         2       0.035us  "
                    "  79.55%         0.035us\n") != std::string::npos);
    CHECK(text.find("Self device time total: 0.044us\n") != std::string::npos);  // no annotations
    // Without device time, the table keeps its CPU columns only.
    table_builder cpu;
    cpu.op("A", 0, 10);
    event_table c = cpu.take();
    build_tree(c);
    CHECK(format_key_averages(key_averages(c)).find("device") == std::string::npos);
    // A hand-made cycle of parents above a kernel without an external id ends the search.
    table_builder cyc;
    cyc.op("X", 0, 10).device("k", activity_type::kernel, 2, 4);
    event_table y = cyc.take();
    y.events[0].template get<event_kind::op>().correlation_id = 0;
    y.events[1].parent = 0;
    CHECK(key_averages(y)[0].self_device_ns == 2);  // X is above k
    y.events[1].parent = 1;                         // k above itself: no op found, no endless walk
    const auto cyc_rows = key_averages(y);
    REQUIRE(cyc_rows.size() == 2);
    CHECK(cyc_rows[0].name == "X");
    CHECK(cyc_rows[0].self_device_ns == 0);
    CHECK(cyc_rows[1].self_device_ns == 2);  // k's own row
    y.events[1].parent = 7;                  // an index past the table
    CHECK(key_averages(y)[0].self_device_ns == 0);
  }

  TEST_CASE("format_duration: PyTorch's units, negative and extreme values") {
    CHECK(format_duration(0) == "0.000us");
    CHECK(format_duration(12'345) == "12.345us");
    CHECK(format_duration(1'234'567) == "1.235ms");
    CHECK(format_duration(2'000'000'000) == "2.000s");
    CHECK(format_duration(-1'500) == "-1.500us");
    CHECK(format_duration(std::numeric_limits<std::int64_t>::min()) == "-9223372036.855s");
  }

  TEST_CASE("key_averages: grouping by input shapes and by stack") {
    table_builder b;
    op_with_tensors(b, "aten::mm", 0, {{1, 1}, {2, 2}}, {8, 16});
    op_with_tensors(b, "aten::mm", 10, {{1, 1}, {2, 2}}, {8, 16});
    op_with_tensors(b, "aten::mm", 20, {{1, 1}}, {4});
    event_table t = b.take();
    build_tree(t);
    const auto rows = key_averages(t, {.group = group_by::shapes, .sort = sort_by::count});
    REQUIRE(rows.size() == 2);
    CHECK(rows[0].key() == "aten::mm [[8, 16], [8, 16]]");
    CHECK(rows[0].count == 2);
    CHECK(rows[1].key() == "aten::mm [[4]]");
    CHECK(input_shapes_text(t, t[0]) == "[[8, 16], [8, 16]]");

    table_builder c;
    c.op("aten::add", 0, 5).op("aten::add", 10, 15).op("aten::add", 20, 25);
    event_table s = c.take();
    s.add_string_list_attr(s.events[0], "Call stack",
                           std::vector<std::string>{"train.py(10)", "main"});
    s.add_string_list_attr(s.events[1], "Call stack",
                           std::vector<std::string>{"train.py(10)", "main"});
    s.add_string_list_attr(s.events[2], "Call stack",
                           std::vector<std::string>{"eval.py(3)", "main"});
    build_tree(s);
    const auto by_stack = key_averages(s, {.group = group_by::stack, .sort = sort_by::count});
    REQUIRE(by_stack.size() == 2);
    CHECK(by_stack[0].key() == "aten::add train.py(10); main");
    CHECK(by_stack[0].count == 2);
    const auto one_frame = key_averages(s, {.group = group_by::stack, .stack_frames = 1});
    CHECK(one_frame[0].detail == "train.py(10)");
  }

  TEST_CASE("input_shapes_text: nested lists and non-tensors") {
    event_table t;
    auto& e = t.events.emplace_back();
    auto& op = e.fields.emplace<0>();
    auto tensor = [&t](std::vector<std::int64_t> d) {
      input_value v;
      v.kind = input_kind::tensor;
      v.rank = static_cast<std::uint32_t>(d.size());
      v.dims = static_cast<std::uint32_t>(t.ints.size());
      for (auto x : d) t.ints.push_back(x);
      return v;
    };
    input_value list;
    list.kind = input_kind::tensor_list;
    list.rank = 2;
    list.subtree = 3;
    input_value scalar;
    scalar.kind = input_kind::scalar;
    t.inputs = {list, tensor({2, 3}), tensor({4}), scalar, tensor({})};
    op.inputs = {0, 5};
    CHECK(input_shapes_text(t, e) == "[[[2, 3], [4]], [], []]");
  }
}
