#include <doctest/doctest.h>

#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <tracemodel/algo/key_averages.hpp>
#include <tracemodel/algo/memory_timeline.hpp>
#include <tracemodel/algo/tree.hpp>
#include <tracemodel/formats/chrome_trace_reader.hpp>
#include <tracemodel/testing/builder.hpp>

#include "../support/json.hpp"
#include "../support/oracle.hpp"

using namespace tracemodel;
using tracemodel::testing::table_builder;

namespace {
/// An op with tensor inputs given as (impl, storage) pairs, of 16 floats each (64 bytes when no
/// allocation says otherwise).
void op_with(table_builder& b, const char* name, std::int64_t start, std::int64_t end,
             std::initializer_list<std::pair<std::uint64_t, std::uint64_t>> tensors,
             op_scope scope = op_scope::function) {
  b.op(name, start, end).scope(scope).tensors(tensors, {16});
}

const key_average_row* row_named(const row_list<key_average_row>& rows, std::string_view key) {
  for (const auto& r : rows)
    if (r.key() == key && !r.device_activities) return &r;
  return nullptr;
}
}  // namespace

TEST_SUITE("algo") {
  TEST_CASE("memory_columns: PyTorch 1.13's key averages, every row of the nine workloads") {
    std::size_t rows_checked = 0, with_memory = 0;
    for (const char* w : tmtest::oracle_workloads) {
      CAPTURE(w);
      const event_table t = read_chrome_trace_file(
          tmtest::data_path(std::string("pytorch-1.13-kineto/") + w + ".kineto.json"));
      const auto rows = key_averages(t);
      tmtest::json_doc doc(tmtest::data_path(std::string("pytorch-1.13/") + w + ".oracle.json"));
      for (simdjson::dom::element o : simdjson::dom::array(doc.root["key_averages"])) {
        const std::string_view key = o["key"];
        CAPTURE(key);
        const key_average_row* r = row_named(rows, key);
        REQUIRE(r != nullptr);
        CHECK(r->cpu_memory_bytes == int64_t(o["cpu_memory_usage"]));
        CHECK(r->self_cpu_memory_bytes == int64_t(o["self_cpu_memory_usage"]));
        CHECK(r->device_memory_bytes == 0);
        if (key == "[memory]") {
          CHECK(r->memory_events);
          CHECK(r->count == uint64_t(o["count"]));
        }
        ++rows_checked;
        with_memory += int64_t(o["cpu_memory_usage"]) != 0;
      }
      // A workload without allocations has no memory columns and no "[memory]" row.
      const bool has_allocations = std::any_of(t.events.begin(), t.events.end(), [](auto& e) {
        return e.template is<event_kind::allocation>();
      });
      CHECK(rows.front().memory_known == has_allocations);
      CHECK((format_key_averages(rows).find("CPU Mem") != std::string::npos) == has_allocations);
    }
    MESSAGE("key-average rows checked: " << rows_checked << ", with memory: " << with_memory);
    CHECK(with_memory >= 10);
  }

  TEST_CASE("memory_columns: whole microseconds, both ends held, any thread, device memory") {
    table_builder b;
    b.op("outer", 1'000, 5'999);       // [1, 6] us: 4'999 ns is 4 whole us, end at 1 + 4 = 5 us
    b.op("inner", 2'000, 3'000);       // [2, 3] us
    b.allocation(0x10, 100, 1'500);    // 1 us: outer
    b.allocation(0x20, 40, 3'999);     // 3 us: outer and inner (the end is held)
    b.allocation(0x30, 7, 5'400, 2);   // 5 us on thread 2: outer (any thread)
    b.allocation(0x10, -100, 6'100);   // 6 us: past outer's end: "[memory]"
    b.allocation(0x40, 1'000, 2'500);  // 2 us, a device allocation: inner and outer
    b.table().events.back().template get<event_kind::allocation>().device_type = 1;
    b.allocation(0x50, 3, 900);  // 0 us: before outer
    event_table t = b.take();
    build_tree(t);
    const auto rows = key_averages(t);
    const key_average_row* outer = row_named(rows, "outer");
    const key_average_row* inner = row_named(rows, "inner");
    const key_average_row* memory = row_named(rows, "[memory]");
    REQUIRE(outer != nullptr);
    REQUIRE(inner != nullptr);
    REQUIRE(memory != nullptr);
    CHECK(outer->cpu_memory_bytes == 147);
    CHECK(outer->self_cpu_memory_bytes == 107);
    CHECK(outer->device_memory_bytes == 1'000);
    CHECK(outer->self_device_memory_bytes == 0);
    CHECK(inner->cpu_memory_bytes == 40);
    CHECK(inner->self_cpu_memory_bytes == 40);
    CHECK(inner->device_memory_bytes == 1'000);
    CHECK(memory->count == 2);
    CHECK(memory->cpu_memory_bytes == -97);
    CHECK(memory->self_cpu_memory_bytes == -97);
    CHECK(memory->total_ns == 0);
    const std::string text = format_key_averages(rows);
    CHECK(text.find("CPU Mem") != std::string::npos);
    CHECK(text.find("Device Mem") != std::string::npos);
    CHECK(text.find("147 b") != std::string::npos);
    CHECK(text.find("-97 b") != std::string::npos);
    CHECK(key_averages(t, {.memory_rows = false}).size() == 2);
  }

  TEST_CASE("memory_columns: PyTorch's units") {
    CHECK(format_memory(0) == "0 b");
    CHECK(format_memory(1023) == "1023 b");
    CHECK(format_memory(1536) == "1.50 Kb");
    CHECK(format_memory(-2 * 1024 * 1024) == "-2.00 Mb");
    CHECK(format_memory(std::int64_t{5} << 30) == "5.00 Gb");
  }

  TEST_CASE("memory_columns: random ops and allocations against a brute-force count") {
    std::mt19937_64 rng(66);
    for (int round = 0; round < 30; ++round) {
      table_builder b;
      std::vector<std::pair<std::int64_t, std::int64_t>> ops;
      for (int k = 0; k < 12; ++k) {
        const std::int64_t s = std::int64_t(rng() % 50'000), d = std::int64_t(rng() % 8'000);
        b.op("op" + std::to_string(k), s, s + d, thread_key(1 + rng() % 2));
        ops.emplace_back(s, s + d);
      }
      std::vector<std::pair<std::int64_t, std::int64_t>> allocs;  // (time, bytes)
      for (int k = 0; k < 40; ++k) {
        const std::int64_t at = std::int64_t(rng() % 60'000);
        const std::int64_t bytes = std::int64_t(rng() % 1'000) - 300;
        b.allocation(0x1000 + std::uint64_t(k), bytes, at, thread_key(1 + rng() % 3));
        allocs.emplace_back(at, bytes);
      }
      event_table t = b.take();
      const auto rows = key_averages(t);
      std::int64_t unheld = 0;
      std::uint64_t unheld_count = 0;
      for (auto [at, bytes] : allocs) {
        bool held = false;
        for (auto [s, e] : ops)
          held = held || (at / 1000 >= s / 1000 && at / 1000 <= s / 1000 + (e - s) / 1000);
        if (!held) {
          unheld += bytes;
          ++unheld_count;
        }
      }
      for (std::size_t k = 0; k < ops.size(); ++k) {
        std::int64_t want = 0;
        const auto [s, e] = ops[k];
        for (auto [at, bytes] : allocs)
          if (at / 1000 >= s / 1000 && at / 1000 <= s / 1000 + (e - s) / 1000) want += bytes;
        const key_average_row* r = row_named(rows, "op" + std::to_string(k));
        REQUIRE(r != nullptr);
        CHECK(r->cpu_memory_bytes == want);
      }
      const key_average_row* memory = row_named(rows, "[memory]");
      CHECK((memory == nullptr ? 0 : memory->cpu_memory_bytes) == unheld);
      CHECK((memory == nullptr ? 0 : memory->count) == unheld_count);
    }
  }

  TEST_CASE("memory_timeline: a training step, every category by PyTorch's passes") {
    table_builder b;
    b.allocation(0x200, 32, 5);                                    // X, the input
    op_with(b, "aten::mm", 10, 20, {{0xB, 0x200}, {0xA, 0x100}});  // X @ W (W: never allocated)
    b.allocation(0x300, 16, 12);                                   // Y
    op_with(b, "aten::relu", 21, 30, {{0xC, 0x300}});
    b.allocation(0x400, 16, 22);  // Z
    op_with(b, "aten::mul", 31, 40, {{0xD, 0x400}});
    b.allocation(0x500, 8, 32);  // T, used and freed inside the node
    op_with(b, "aten::fill_", 33, 34, {{0xE, 0x500}});
    b.allocation(0x500, -8, 38);
    b.op("MmBackward0", 50, 70).scope(op_scope::backward_function);
    op_with(b, "aten::mm", 52, 60, {{0xB, 0x200}, {0xA, 0x100}});
    b.allocation(0x600, 64, 55);  // G, W's gradient
    b.op("torch::autograd::AccumulateGrad", 71, 80).scope(op_scope::backward_function);
    op_with(b, "aten::detach", 72, 73, {{0xF, 0x600}});
    b.allocation(0x300, -16, 85);  // Y freed
    b.annotation("Optimizer.step#SGD.step", 90, 120);
    op_with(b, "aten::add_", 95, 100, {{0xA, 0x100}, {0xF, 0x600}});
    event_table t = b.take();
    build_tree(t);
    const memory_timeline_result m = memory_timeline(t);

    auto category_at = [&](std::uint64_t address) {
      for (const memory_block& blk : m.blocks)
        if (blk.address == address) return blk.category;
      return memory_category::unknown;
    };
    CHECK(category_at(0x200) == memory_category::input);
    CHECK(category_at(0x100) == memory_category::parameter);
    CHECK(category_at(0x300) == memory_category::activation);
    CHECK(category_at(0x400) == memory_category::activation);
    CHECK(category_at(0x500) == memory_category::temporary);
    CHECK(category_at(0x600) == memory_category::gradient);

    // The raw records, PyTorch's order: time, then action.
    using A = memory_action;
    using C = memory_category;
    struct rec {
      std::int64_t t;
      A a;
      C c;
      std::int64_t bytes;
    };
    const std::vector<rec> want{{-1, A::preexisting, C::parameter, 64},
                                {5, A::create, C::input, 32},
                                {12, A::create, C::activation, 16},
                                {22, A::create, C::activation, 16},
                                {32, A::create, C::temporary, 8},
                                {38, A::destroy, C::temporary, -8},
                                {55, A::create, C::gradient, 64},
                                {85, A::destroy, C::activation, -16},
                                {95, A::increment_version, C::parameter, -64},
                                {95, A::increment_version, C::parameter, 64}};
    REQUIRE(m.records.size() == want.size());
    for (std::size_t k = 0; k < want.size(); ++k) {
      CAPTURE(k);
      CHECK(m.records[k].time_ns == want[k].t);
      CHECK(m.records[k].action == want[k].a);
      CHECK(m.records[k].category == want[k].c);
      CHECK(m.records[k].bytes == want[k].bytes);
    }
    // Samples: the preexisting time becomes the first positive one.
    std::vector<std::int64_t> times, totals;
    for (const memory_sample& s : m.samples) {
      times.push_back(s.time_ns);
      totals.push_back(s.total());
    }
    CHECK(times == std::vector<std::int64_t>{5, 5, 12, 22, 32, 38, 55, 85, 95});
    CHECK(totals == std::vector<std::int64_t>{64, 96, 112, 128, 136, 128, 192, 176, 176});
    CHECK(m.peak.time_ns == 55);
    CHECK(m.peak.bytes == 192);
    CHECK(m.peak.by_category[std::size_t(C::parameter)] == 64);
    CHECK(m.peak.by_category[std::size_t(C::gradient)] == 64);
    CHECK(m.peak.by_category[std::size_t(C::input)] == 32);
    CHECK(m.peak.by_category[std::size_t(C::activation)] == 32);
    // Live at the peak, largest first (ties in order of appearance), with their ops.
    std::vector<std::uint64_t> live;
    for (const live_block& l : m.live_at_peak) live.push_back(m.blocks[l.block].address);
    CHECK(live == std::vector<std::uint64_t>{0x100, 0x600, 0x200, 0x300, 0x400});
    const live_block& g = m.live_at_peak[1];
    CHECK(g.category == C::gradient);
    REQUIRE(g.allocated_by != no_event);
    CHECK(t.name(t.events[g.allocated_by]) == "aten::mm");
    CHECK(t.events[t.events[g.allocated_by].parent].start_ns == 50);  // the backward mm
    CHECK(m.live_at_peak[2].allocated_by == no_event);                // X: outside every op
    CHECK(m.repairs.total() == 0);
    // PyTorch's coalescing in whole microseconds (the exported file's): the preexisting sample
    // and one at 0 us, both at time 0.
    const auto in_us = coalesce_memory(m.records, m.blocks, m.device, 1000);
    REQUIRE(in_us.size() == 2);
    CHECK(in_us[0].time_ns == 0);
    CHECK(in_us[1].time_ns == 0);
    CHECK(in_us[1].total() == 176);
  }

  TEST_CASE("memory_timeline: autograd detail, in-place versions and the optimizer's state") {
    table_builder b;
    b.op("MulBackward0", 10, 20).scope(op_scope::backward_function);
    b.allocation(0x900, 1000, 11).allocation(0x900, -1000, 19);  // a workspace: no tensor uses it
    b.allocation(0x700, 40, 12);  // made in the backward pass, not a gradient
    op_with(b, "aten::mul", 13, 14, {{0x1, 0x700}});
    b.annotation("Optimizer.step#Adam.step", 30, 60);
    op_with(b, "aten::zeros_like", 31, 35, {});
    b.allocation(0x800, 24, 32);  // the optimizer's exp_avg: kept past the step
    op_with(b, "aten::mul_", 40, 41, {{0x2, 0x800}});  // updated in place: a second version
    event_table t = b.take();
    build_tree(t);
    const memory_timeline_result m = memory_timeline(t);
    REQUIRE(m.blocks.size() == 3);
    CHECK(m.blocks[0].category == memory_category::temporary);
    CHECK(m.blocks[0].tensor_id == 0);
    CHECK(m.blocks[1].category == memory_category::autograd_detail);
    CHECK(m.blocks[2].category == memory_category::optimizer_state);
    CHECK(m.blocks[2].versions == 2);
    CHECK(m.category(2, 0) == memory_category::optimizer_state);
    // As PyTorch: no optimizer state without its Python tracer, workspaces unknown.
    const memory_timeline_result plain =
        memory_timeline(t, {.optimizer_annotations = false, .untracked_temporaries = false});
    CHECK(plain.blocks[0].category == memory_category::unknown);
    CHECK(plain.blocks[2].category == memory_category::unknown);
  }

  TEST_CASE("memory_timeline: bad input is counted, repaired and kept") {
    table_builder b;
    b.allocation(0x10, -32, 5);  // a free of memory allocated before the trace
    b.allocation(0x20, 16, 10);
    b.allocation(0x20, 48, 20);  // the same address again, no free between
    b.allocation(0x20, -48, 30);
    b.allocation(0x30, 8, 40);
    b.table().events.back().get<event_kind::allocation>().total_allocated = -8;
    event_table t = b.take();
    build_tree(t);
    const memory_timeline_result m = memory_timeline(t);
    CHECK(m.repairs[anomaly::free_without_allocation] == 1);
    CHECK(m.repairs[anomaly::allocation_reused] == 1);
    CHECK(m.repairs[anomaly::negative_memory_total] == 1);
    std::vector<std::int64_t> totals;
    for (const memory_sample& s : m.samples) totals.push_back(s.total());
    // -1 (32 before the trace), 5: freed, 10: +16, 20: the 16 taken as freed, +48, 30, 40
    CHECK(totals == std::vector<std::int64_t>{32, 0, 16, 48, 0, 8});
    CHECK(m.peak.bytes == 48);
    REQUIRE(m.live_at_peak.size() == 1);
    CHECK(m.live_at_peak[0].bytes == 48);
  }

  TEST_CASE("memory_timeline: random tables, the live blocks add up to every peak") {
    std::mt19937_64 rng(6606);
    for (int round = 0; round < 60; ++round) {
      table_builder b;
      std::int64_t now = 0;
      for (int k = 0; k < 60; ++k) {
        now += std::int64_t(1 + rng() % 5);
        const std::uint64_t addr = 0x100 * (1 + rng() % 8);
        switch (rng() % 4) {
          case 0:
          case 1:
            b.allocation(addr, std::int64_t(1 + rng() % 100), now);
            break;
          case 2:
            b.allocation(addr, -std::int64_t(1 + rng() % 100), now);
            break;
          default:
            op_with(b, rng() % 2 ? "aten::add_" : "aten::mm", now, now + 3,
                    {{0x1 + rng() % 4, addr}, {0x9, 0x100 * (1 + rng() % 8)}},
                    rng() % 3 == 0 ? op_scope::backward_function : op_scope::function);
            now += 4;
        }
      }
      event_table t = b.take();
      build_tree(t);
      const memory_timeline_result m = memory_timeline(t);
      CAPTURE(round);
      std::int64_t highest = 0;
      for (const memory_sample& s : m.samples) highest = std::max(highest, s.total());
      CHECK(m.peak.bytes == highest);
      std::int64_t live = 0;
      for (const live_block& l : m.live_at_peak) {
        CHECK(l.bytes > 0);
        live += l.bytes;
      }
      CHECK(live == m.peak.bytes);
      // Kept as an envelope, the samples are memory_envelope's of the whole series.
      for (const std::size_t limit : {1u, 3u, 7u}) {
        const memory_timeline_result e = memory_timeline(t, {.sample_limit = limit});
        const auto want = memory_envelope(m.samples, limit);
        REQUIRE(e.samples.size() == want.size());
        for (std::size_t k = 0; k < want.size(); ++k) {
          CHECK(e.samples[k].time_ns == want[k].time_ns);
          CHECK(e.samples[k].bytes == want[k].bytes);
        }
        CHECK(e.peak.bytes == m.peak.bytes);
        CHECK(e.peak.time_ns == m.peak.time_ns);
        CHECK(e.live_at_peak.size() == m.live_at_peak.size());
      }
      // The full series is coalesce_memory's.
      const auto full = coalesce_memory(m.records, m.blocks, m.device);
      REQUIRE(full.size() == m.samples.size());
      for (std::size_t k = 0; k < full.size(); ++k) CHECK(full[k].bytes == m.samples[k].bytes);
    }
  }
}
