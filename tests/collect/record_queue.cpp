#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <tracemodel/collect.hpp>
#include <tracemodel/model.hpp>

#include "test_values.hpp"

using namespace tracemodel;

namespace {

template <class Table>
std::vector<std::string> names(const Table& t) {
  std::vector<std::string> out;
  for (const auto& e : t.events) out.emplace_back(t.name(e));
  return out;
}

struct input_policies : default_record_policies {
  using value_traits = tmtest::value_traits;
};

}  // namespace

// An op record without optional features is one cache line; switched-off features take no
// storage at all.
static_assert(sizeof(op_record) == 64);
static_assert(sizeof(detail::op_store<record_features{}, default_record_policies>) ==
              sizeof(append_only_list<op_record, process_id_source>));
static_assert(sizeof(detail::op_store<record_features{.inputs = true}, input_policies>) >
              sizeof(detail::op_store<record_features{}, input_policies>));
static_assert(
    sizeof(detail::op_store<record_features{.call_stack = true}, default_record_policies>) >
    sizeof(detail::op_store<record_features{}, default_record_policies>));
static_assert(
    sizeof(detail::op_store<record_features::all(), input_policies>) >
    sizeof(detail::op_store<record_features{.inputs = true, .call_stack = true}, input_policies>));

// These cases record; with recording compiled out they are skipped (see disabled.cpp).
TEST_SUITE("collect" * doctest::skip(!collection_enabled)) {
  TEST_CASE("record_queue: nested ops on one thread materialize in start order with all fields") {
    record_queue<> q;
    auto outer = q.begin_op({.name = "outer", .sequence_number = 7, .scope = op_scope::user_scope});
    auto inner = q.begin_op({.name = "aten::add",
                             .sequence_number = 8,
                             .fwd_thread_id = 3,
                             .scope = op_scope::backward_function,
                             .is_async = true,
                             .debug_handle = 99});
    CHECK(q.end_op(inner));
    CHECK(q.end_op(outer));
    const std::uint64_t c_outer = q.correlation_id(outer);
    const std::uint64_t c_inner = q.correlation_id(inner);
    CHECK(c_inner == c_outer + 1);

    event_table t = materialize(q);
    REQUIRE(t.size() == 2);
    CHECK(names(t) == std::vector<std::string>{"outer", "aten::add"});
    const auto& o = t[0].get<event_kind::op>();
    const auto& i = t[1].get<event_kind::op>();
    CHECK(o.correlation_id == c_outer);
    CHECK(i.correlation_id == c_inner);
    CHECK(o.sequence_number == 7);
    CHECK(o.scope == op_scope::user_scope);
    CHECK(i.sequence_number == 8);
    CHECK(i.fwd_thread_id == 3);
    CHECK(i.scope == op_scope::backward_function);
    CHECK((i.flags & op_flag::async) != 0);
    CHECK(i.debug_handle == 99);
    CHECK(t[0].start_ns <= t[1].start_ns);
    CHECK(t[1].end_ns() <= t[0].end_ns());
    CHECK(t[0].tid == current_thread_id());
    CHECK(t[0].end_tid() == current_thread_id());
    CHECK(t.activity(t[0]) == activity_type::user_annotation);
    CHECK(t.activity(t[1]) == activity_type::cpu_op);
    CHECK(t.anomalies.total() == 0);
  }

  TEST_CASE("record_queue: times convert to wall-clock nanoseconds") {
    const std::int64_t before = wall_ns();
    record_queue<> q;
    auto h = q.begin_op({.name = "timed"});
    std::this_thread::sleep_for(std::chrono::milliseconds(3));
    q.end_op(h);
    const std::int64_t after = wall_ns();
    event_table t = materialize(q);
    REQUIRE(t.size() == 1);
    // The converter is calibrated between queue creation and materialization; allow 1 ms of
    // calibration error around the wall-clock bracket.
    CHECK(t[0].start_ns >= before - 1'000'000);
    CHECK(t[0].end_ns() <= after + 1'000'000);
    CHECK(t[0].end_ns() - t[0].start_ns >= 2'000'000);  // it slept 3 ms
  }

  /// Ticks at twice the steady clock's nanoseconds: a slope to measure.
  struct double_ticks {
    static constexpr bool ticks_are_ns = false;
    static approx_time now() noexcept { return 2 * steady_clock_source::now(); }
  };

  TEST_CASE("piecewise time converter: a line per stretch between sync points") {
    piecewise_time_converter<double_ticks> c;
    const approx_time t0 = double_ticks::now();
    c.sync(0);  // the second point: at least 2 ms after the first
    std::this_thread::sleep_for(std::chrono::milliseconds(3));
    c.sync(0);  // a stretch of its own (stretches of 0 ns: every sync adds a point)
    const approx_time t1 = double_ticks::now();
    const std::int64_t w1 = wall_ns();
    // Now: the wall clock, within the sync points' bracket error.
    CHECK(std::abs(c(t1) - w1) < 1'000'000);
    // Ticks are half nanoseconds: 2 ms of ticks is about 1 ms.
    const std::int64_t d = c(t0 + 4'000'000) - c(t0);
    CHECK(d > 1'800'000);
    CHECK(d < 2'200'000);
    // Before the first point: the first stretch's line, extended.
    CHECK(c(t0 - 1000) < c(t0));
    // Before a second point (none synced yet): slope 1 through the only one.
    const piecewise_time_converter<double_ticks> one;
    CHECK(one(t1 + 100) - one(t1) == 100);
  }

  TEST_CASE("record_queue: an op that never ended is kept and marked") {
    record_queue<> q;
    auto a = q.begin_op({.name = "never ends"});
    auto b = q.begin_op({.name = "ends"});
    q.end_op(b);
    (void)a;
    event_table t = materialize(q);
    REQUIRE(t.size() == 2);
    const auto& f = t[0].get<event_kind::op>();
    CHECK(t.name(t[0]) == "never ends");
    CHECK(f.unfinished());
    CHECK(f.end_ns == no_end_ns);
    CHECK(t[0].end_ns() == no_end_ns);
    CHECK_FALSE(t[1].get<event_kind::op>().unfinished());
    CHECK(t.anomalies[anomaly::unfinished_op] == 1);
  }

  TEST_CASE("record_queue: malformed use has documented behaviour and corrupts nothing") {
    record_queue<> q1;
    record_queue<> q2;
    SUBCASE("ending an op twice keeps the first end") {
      auto h = q1.begin_op({.name = "twice"});
      CHECK(q1.end_op(h));
      CHECK_FALSE(q1.end_op(h));
      auto other = q1.begin_op({.name = "other"});
      q1.end_op(other);
      event_table t = materialize(q1);
      REQUIRE(t.size() == 2);
      CHECK(t.name(t[0]) == "twice");
      CHECK(t[0].end_ns() <= t[1].start_ns);  // the second end_op did not move the end
      CHECK(t.anomalies[anomaly::op_ended_twice] == 1);
    }
    SUBCASE("ending a handle from another queue is ignored by both queues") {
      auto h1 = q1.begin_op({.name = "q1 op"});
      auto h2 = q2.begin_op({.name = "q2 op"});
      CHECK_FALSE(q2.end_op(h1));
      CHECK_FALSE(q1.end_op(h2));
      CHECK(q1.end_op(h1));
      CHECK(q2.end_op(h2));
      event_table t1 = materialize(q1);
      event_table t2 = materialize(q2);
      REQUIRE(t1.size() == 1);
      REQUIRE(t2.size() == 1);
      CHECK_FALSE(t1[0].get<event_kind::op>().unfinished());
      CHECK_FALSE(t2[0].get<event_kind::op>().unfinished());
      CHECK(t1.anomalies[anomaly::foreign_handle] == 1);
      CHECK(t2.anomalies[anomaly::foreign_handle] == 1);
    }
    SUBCASE("a handle from before materialize is stale and cannot touch new events") {
      auto old = q1.begin_op({.name = "old"});
      event_table first = materialize(q1);
      REQUIRE(first.size() == 1);
      CHECK(first[0].get<event_kind::op>().unfinished());
      // The old record's block went back to the pool; a new op may reuse that very memory.
      auto fresh = q1.begin_op({.name = "fresh"});
      CHECK_FALSE(q1.end_op(old));
      event_table second = materialize(q1);
      REQUIRE(second.size() == 1);
      CHECK(second.name(second[0]) == "fresh");
      CHECK(second[0].get<event_kind::op>().unfinished());  // `old` did not end it
      CHECK(second.anomalies[anomaly::stale_handle] == 1);
      (void)fresh;
    }
    SUBCASE("materializing twice returns what was recorded in between: nothing") {
      auto h = q1.begin_op({.name = "once"});
      q1.end_op(h);
      CHECK(materialize(q1).size() == 1);
      event_table again = materialize(q1);
      CHECK(again.size() == 0);
      CHECK(again.anomalies.total() == 0);
    }
    SUBCASE("an empty handle is a no-op") {
      CHECK_FALSE(q1.end_op(op_handle{}));
      CHECK(materialize(q1).anomalies.total() == 0);
    }
  }

  TEST_CASE("record_queue: a stopped queue records nothing") {
    record_queue<> q;
    q.stop();
    auto h = q.begin_op({.name = "off"});
    CHECK_FALSE(h);
    CHECK_FALSE(q.end_op(h));
    q.record_allocation(1, 2, 3, 4);
    q.start();
    q.end_op(q.begin_op({.name = "on"}));
    event_table t = materialize(q);
    REQUIRE(t.size() == 1);
    CHECK(t.name(t[0]) == "on");
  }

  TEST_CASE("record_queue: dynamic names are copied, static names referenced") {
    record_queue<> q;
    {
      std::string name = "ProfilerStep#3";
      q.end_op(q.begin_op({.name = name, .copy_name = true}));
      name = "overwritten!!!";
    }
    event_table t = materialize(q);
    REQUIRE(t.size() == 1);
    CHECK(t.name(t[0]) == "ProfilerStep#3");
  }

  TEST_CASE("record_queue: allocations, OOMs, backend spans, script and native calls") {
    record_queue<> q;
    const std::int64_t b0 = wall_ns();
    q.record_allocation(0xabc, 256, 256, 1024, 1, 0);
    q.record_allocation(0xabc, -256, 0, 1024, 1, 0);
    q.record_out_of_memory(1 << 30, 0, 1024, 1, 0);
    q.record_backend("delegate::run", "xnnpack", b0 + 10, b0 + 20, op_scope::lite_interpreter, 5);
    const approx_time s0 = q.now();
    const approx_time s1 = q.now();
    q.record_script_call("model.py(12): forward", s0, s1, 4, 1, 0);
    q.record_native_call("<built-in method matmul>", s0, s1, 5, 4);
    event_table t = materialize(q);
    REQUIRE(t.size() == 6);
    std::multiset<std::string> kinds;
    for (const auto& e : t.events)
      kinds.insert(std::string(default_schema::kind_names[e.fields.index()]));
    CHECK(kinds == std::multiset<std::string>{"allocation", "allocation", "out_of_memory",
                                              "backend", "script_call", "native_call"});
    for (const auto& e : t.events) {
      if (const auto* a = e.get_if<event_kind::allocation>()) {
        CHECK(a->ptr == 0xabc);
        CHECK(std::abs(a->alloc_size) == 256);
        CHECK(a->device_type == 1);
        CHECK(t.name(e) == "[memory]");
        CHECK(e.is_instant());
      } else if (const auto* o = e.get_if<event_kind::out_of_memory>()) {
        CHECK(o->alloc_size == (1 << 30));
        CHECK(t.name(e) == "[OutOfMemory]");
      } else if (const auto* b = e.get_if<event_kind::backend>()) {
        CHECK(e.start_ns == b0 + 10);  // externally supplied times are kept exactly
        CHECK(e.end_ns() == b0 + 20);
        CHECK(t.strings[b->backend] == "xnnpack");
        CHECK(b->debug_handle == 5);
        CHECK(t.name(e) == "delegate::run");
      } else if (const auto* s = e.get_if<event_kind::script_call>()) {
        CHECK(t.name(e) == "model.py(12): forward");
        CHECK(s->script_id == 4);
        CHECK(t.activity(e) == activity_type::python_function);
      } else if (const auto* n = e.get_if<event_kind::native_call>()) {
        CHECK(t.name(e) == "<built-in method matmul>");
        CHECK(n->script_parent_id == 4);
      }
    }
  }

  TEST_CASE("record_queue: device records keep their tracks, host calls map to runtime tids") {
    record_queue<> q;
    auto op = q.begin_op({.name = "aten::mm"});
    device_record launch{};
    launch.start = q.now();
    launch.end = q.now();
    launch.name = "cudaLaunchKernel";
    launch.name_len = 16;
    launch.activity = activity_type::cuda_runtime;
    launch.flow_type = flow_kind::async_cpu_gpu;
    launch.flow_start = true;
    launch.correlation_id = 77;
    launch.flow_id = 77;
    launch.external_id = q.correlation_id(op);
    launch.host_thread = true;
    launch.tid = detail::os_thread_id();
    launch.cbid = 211;
    q.record_device(launch);
    q.end_op(op);
    device_record kernel{};
    kernel.start = q.now();
    kernel.end = q.now();
    kernel.name = "gemm_kernel";
    kernel.name_len = 11;
    kernel.activity = activity_type::kernel;
    kernel.flow_type = flow_kind::async_cpu_gpu;
    kernel.correlation_id = 77;
    kernel.flow_id = 77;
    kernel.pid = 0;
    kernel.tid = 7;
    kernel.device = 0;
    kernel.stream = 7;
    kernel.grid[0] = 4;
    kernel.block[0] = 128;
    kernel.registers = 32;
    q.record_device(kernel);
    event_table t = materialize(q);
    REQUIRE(t.size() == 3);
    CHECK(names(t) == std::vector<std::string>{"aten::mm", "cudaLaunchKernel", "gemm_kernel"});
    CHECK(t[1].tid == current_thread_id());  // OS tid mapped to the runtime's small id
    CHECK(t[2].tid == 7);
    CHECK(t[2].pid == 0);
    CHECK(t.category(t[2]) == "kernel");
    const auto& k = t[2].get<event_kind::device_activity>();
    CHECK(k.correlation_id == 77);
    REQUIRE(t.find_attr(t[2], "grid") != nullptr);
    CHECK(t.int_list(*t.find_attr(t[2], "grid"))[0] == 4);
    CHECK(t.find_attr(t[2], "registers per thread")->i == 32);
    CHECK(t.find_attr(t[1], "cbid")->i == 211);
    CHECK(t[1].get<event_kind::device_activity>().external_id ==
          t[0].get<event_kind::op>().correlation_id);
  }

  TEST_CASE("record_queue: device records decoded after stop are kept by recording window") {
    // An adapter decodes CUPTI's buffers after the queue stopped (the documented order), so
    // record_device stores whatever comes and materialize judges each record by its window.
    record_queue<> q;
    auto tick = [&q] {
      const approx_time a = q.now();
      approx_time b = q.now();
      while (b == a) b = q.now();
      return b;
    };
    q.stop();                           // the first window: from creation to here
    const approx_time before = tick();  // after that window
    (void)tick();                       // so that the next window opens after `before`
    q.start();
    const approx_time in1 = tick(), in2 = tick();
    q.stop();
    const approx_time after = tick();
    const auto w = q.recording_windows();
    REQUIRE(w.size() == 2);
    CHECK(w[0].begin == 0);
    CHECK(w[0].end < before);
    CHECK(before < w[1].begin);
    CHECK(w[1].begin < in1);
    CHECK(in2 <= w[1].end);
    CHECK(w[1].end < after);

    auto rec = [&q](const char* name, approx_time start, std::uint64_t corr, bool host) {
      device_record r{};
      r.start = start;
      r.end = start;
      r.name = name;
      r.name_len = static_cast<std::uint32_t>(std::string_view(name).size());
      r.activity = host ? activity_type::cuda_runtime : activity_type::kernel;
      r.correlation_id = corr;
      r.host_thread = host;
      r.tid = host ? detail::os_thread_id() : 7;
      q.record_device(r);
    };
    rec("early", 1, 9, true);  // in the first window
    rec("launch_in", in1, 1, true);
    rec("kernel_late", after, 1, false);  // ran after stop: kept with its launch
    rec("launch_out", before, 2, true);   // launched between the windows
    rec("kernel_of_out", in1, 2, false);  // dropped with its launch, though it ran inside
    rec("nocorr_in", in1, 0, false);      // no correlation: its own start decides
    rec("orphan_in", in2, 3, false);      // no host call with its id: its own start decides
    rec("orphan_out", after, 4, false);
    event_table t = materialize(q);
    CHECK(names(t) ==
          std::vector<std::string>{"early", "launch_in", "nocorr_in", "orphan_in", "kernel_late"});
    CHECK(t.anomalies[anomaly::outside_recording] == 3);
    CHECK(t.anomalies.total() == 3);

    // A queue that never stopped keeps every record, whenever it comes.
    record_queue<> all;
    device_record r{};
    r.name = "k";
    r.name_len = 1;
    r.activity = activity_type::kernel;
    r.correlation_id = 5;
    for (approx_time s : {approx_time{1}, approx_time{1} << 30, approx_time{1} << 40}) {
      r.start = r.end = s;
      all.record_device(r);
    }
    event_table u = materialize(all);
    CHECK(u.size() == 3);
    CHECK(u.anomalies.total() == 0);
  }

  TEST_CASE("record_queue: side streams are zipped back onto their ops") {
    record_queue<default_schema,
                 record_features{.call_stack = true, .module_hierarchy = true, .extra_args = true}>
        q;
    auto a = q.begin_op({.name = "a"});
    const std::string_view stack[] = {"main.py(3): <module>", "model.py(9): forward"};
    q.record_call_stack(a, stack);
    const std::string_view modules[] = {"TOP(Net)::forward", "fc1(Linear)::forward"};
    q.record_module_hierarchy(a, modules);
    auto b = q.begin_op({.name = "b"});  // no side data for b
    const extra_arg args[] = {extra_arg::integer("flops", 1200), extra_arg::string("kernel", "mkl"),
                              extra_arg::floating("ratio", 0.5), extra_arg::boolean("fused", true)};
    q.record_extra_args(a, args);  // recorded after b began: still lands on a
    q.end_op(b);
    q.end_op(a);
    event_table t = materialize(q);
    REQUIRE(t.size() == 2);
    CHECK(t.attrs_of(t[1]).empty());
    const attribute* cs = t.find_attr(t[0], "Call stack");
    REQUIRE(cs != nullptr);
    REQUIRE(cs->type == attr_type::string_list);
    auto frames = t.string_list(*cs);
    REQUIRE(frames.size() == 2);
    CHECK(t.strings[frames[1]] == "model.py(9): forward");
    const attribute* mh = t.find_attr(t[0], "Module Hierarchy");
    REQUIRE(mh != nullptr);
    CHECK(t.strings[t.string_list(*mh)[0]] == "TOP(Net)::forward");
    CHECK(t.find_attr(t[0], "flops")->i == 1200);
    CHECK(t.strings[t.find_attr(t[0], "kernel")->s] == "mkl");
    CHECK(t.find_attr(t[0], "ratio")->f == 0.5);
    CHECK(t.find_attr(t[0], "fused")->b);
  }

  TEST_CASE("record_queue: op inputs through the runtime's value traits") {
    record_queue<default_schema, record_features{.inputs = true}, input_policies> q;
    using tmtest::value;
    std::vector<value> in{value::tensor({8, 16}, {16, 1}, 0, 0x10, 0x20),
                          value::scalar_of(scalar_value::floating(1.0))};
    auto h = q.begin_op({.name = "aten::addmm"}, std::span<const value>(in));
    q.end_op(q.begin_op({.name = "aten::empty"}));  // no inputs
    q.end_op(h);
    event_table t = materialize(q);
    REQUIRE(t.size() == 2);
    auto ins = t.inputs_of(t[0]);
    REQUIRE(ins.size() == 2);
    CHECK(ins[0].kind == input_kind::tensor);
    CHECK(t.strings[ins[0].dtype] == "float");
    CHECK(std::vector<std::int64_t>(t.sizes(ins[0]).begin(), t.sizes(ins[0]).end()) ==
          std::vector<std::int64_t>{8, 16});
    CHECK(std::vector<std::int64_t>(t.strides(ins[0]).begin(), t.strides(ins[0]).end()) ==
          std::vector<std::int64_t>{16, 1});
    CHECK(ins[0].storage == 0x20);
    CHECK(ins[1].scalar == scalar_value::floating(1.0));
    CHECK(t.strings[ins[1].dtype] == "Scalar");
    CHECK(t.inputs_of(t[1]).empty());
  }

  TEST_CASE("record_queue: blocks are recycled across sessions") {
    auto& pool = block_pool::instance();
    {
      record_queue<> warm;
      for (int i = 0; i < 5000; ++i) warm.end_op(warm.begin_op({.name = "x"}));
      (void)materialize(warm);
    }
    const auto before = pool.stats();
    record_queue<> q;  // a new session
    for (int i = 0; i < 5000; ++i) q.end_op(q.begin_op({.name = "x"}));
    CHECK(pool.stats().blocks_owned == before.blocks_owned);
    event_table t = materialize(q);
    CHECK(t.size() == 5000);
    CHECK(pool.stats().blocks_free >= before.blocks_free);
  }

  TEST_CASE("record_queue: the thread cache survives destroying a queue and creating another") {
    for (int round = 0; round < 5; ++round) {
      auto q = std::make_unique<record_queue<>>();
      q->end_op(q->begin_op({.name = "r"}));
      event_table t = materialize(*q);
      REQUIRE(t.size() == 1);
      CHECK(q->thread_count() == 1);
      q.reset();  // the thread's cache now holds a dangling pointer under a dead id
    }
    record_queue<> a;
    record_queue<> b;
    for (int i = 0; i < 3; ++i) {  // alternating between two live queues
      a.end_op(a.begin_op({.name = "a"}));
      b.end_op(b.begin_op({.name = "b"}));
    }
    event_table ta = materialize(a);
    event_table tb = materialize(b);
    CHECK(names(ta) == std::vector<std::string>(3, "a"));
    CHECK(names(tb) == std::vector<std::string>(3, "b"));
  }

  TEST_CASE("record_queue: correlation ids are unique across queues and sessions") {
    std::set<std::uint64_t> ids;
    std::size_t n = 0;
    record_queue<> a;
    record_queue<> b;
    for (int s = 0; s < 2; ++s) {
      for (int i = 0; i < 3000; ++i) {
        a.end_op(a.begin_op({.name = "a"}));
        b.end_op(b.begin_op({.name = "b"}));
      }
      for (auto* q : {&a, &b}) {
        event_table t = materialize(*q);
        for (const auto& e : t.events) {
          ids.insert(e.correlation_id());
          ++n;
        }
      }
    }
    CHECK(n == 12000);
    CHECK(ids.size() == n);
  }

  TEST_CASE("TRACEMODEL_SCOPED_OP records a scope") {
    record_queue<> q;
    {
      TRACEMODEL_SCOPED_OP(q, .name = "scoped", .sequence_number = 4);
      TRACEMODEL_SCOPED_OP(q, .name = "inner");
    }
    event_table t = materialize(q);
    if constexpr (collection_enabled) {
      REQUIRE(t.size() == 2);
      CHECK(names(t) == std::vector<std::string>{"scoped", "inner"});
      CHECK(t[0].get<event_kind::op>().sequence_number == 4);
      CHECK(t[1].end_ns() <= t[0].end_ns());
    } else {
      CHECK(t.size() == 0);
    }
  }
}
