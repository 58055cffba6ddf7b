// Every documented call, through the umbrella header alone: a small runtime records through a
// queue, and the table goes through every algorithm and format the README and docs/ name.
#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>
#include <span>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <tracemodel/tracemodel.hpp>

namespace tmod = tracemodel;

namespace {
struct value {
  std::vector<std::int64_t> sizes;
};
struct value_traits {
  static tmod::input_kind kind(const value&) { return tmod::input_kind::tensor; }
  static tmod::tensor_info tensor(const value& v) {
    tmod::tensor_info t;
    t.impl = 0x10;
    t.storage = 0x20;
    t.sizes = v.sizes;
    return t;
  }
  static tmod::scalar_value scalar(const value&) { return {}; }
  template <class F>
  static void for_each_element(const value&, F&&) {}
  static std::string_view dtype_name(std::uint8_t) { return "float"; }
};
struct policies : tmod::default_record_policies {
  using value_traits = ::value_traits;
};
using queue_type =
    tmod::record_queue<tmod::default_schema, tmod::record_features{.inputs = true}, policies>;

/// Two steps of forward ops and their backward ops on a second thread, with a launch and a
/// kernel.
tmod::event_table recorded() {
  queue_type q;
  const std::uint64_t main_thread = tmod::current_thread_id();
  const value x{{4, 8}};
  for (int step = 0; step < 2; ++step) {
    TRACEMODEL_SCOPED_OP(q, .name = "ProfilerStep#1", .scope = tmod::op_scope::user_scope);
    auto mm = q.begin_op({.name = "aten::mm", .sequence_number = step}, std::span(&x, 1));
    q.record_allocation(0x1000, 64, 64, 128);
    q.end_op(mm);
    std::thread autograd([&] {
      TRACEMODEL_SCOPED_OP(q, .name = "autograd::engine::evaluate_function: MmBackward0");
      TRACEMODEL_SCOPED_OP(q, .name = "MmBackward0", .sequence_number = step,
                           .fwd_thread_id = main_thread,
                           .scope = tmod::op_scope::backward_function);
    });
    autograd.join();
  }
  return tmod::materialize(q);
}
}  // namespace

TEST_SUITE("umbrella") {
  TEST_CASE("every documented call compiles and works through tracemodel/tracemodel.hpp alone") {
    tmod::event_table t = recorded();
    REQUIRE(t.size() == 10);  // 2 x (step, mm, allocation, wrapper, backward)

    // The three algorithms, plainly, then `analyze` on a copy: the same table.
    tmod::event_table plain = t;
    const tmod::fwd_bwd_stats f = tmod::link_forward_backward(plain);
    const tmod::device_link_stats d = tmod::link_device_activities(plain);
    const tmod::tree_stats s = tmod::build_tree(plain);
    CHECK(f.links == 2);
    CHECK(f.wrappers == 2);
    CHECK(d.links() == 0);
    CHECK(s.roots == 2);  // the steps (the wrappers fall back to them: rule 3)
    tmod::analyze_options one;
    one.threads = 1;
    const tmod::analysis a = tmod::analyze(t, tmod::pytorch_tree{}, one);
    CHECK(a.fwd_bwd.links == 2);
    CHECK(a.tree.roots == 2);
    CHECK(t.links == plain.links);
    CHECK(tmod::testing::tree_text(t) == tmod::testing::tree_text(plain));
    CHECK(tmod::analyze(plain, tmod::hta::tree{}, tmod::correlation_device_links{}).tree.roots ==
          2);

    // Walks, tensor identities, key averages, patterns.
    CHECK(tmod::roots(t).size() == 2);
    CHECK(tmod::depths(t).size() == t.size());
    std::size_t walked = 0;
    tmod::walk_preorder(t, [&](tmod::event_index, std::uint32_t) {
      ++walked;
      return true;
    });
    CHECK(walked == t.size());
    CHECK(tmod::assign_tensor_ids(t).tensors == 2);
    const auto rows =
        tmod::key_averages(t, {.group = tmod::group_by::shapes, .sort = tmod::sort_by::self});
    CHECK(!tmod::format_key_averages(rows, 5).empty());
    const tmod::tree_view view(t);
    auto context = tmod::context_of(t, tmod::device_properties(t));
    auto rule =
        tmod::rule("Two mm", "two matmuls in a row",
                   tmod::sibling_sequence(tmod::name_is("aten::mm"), tmod::name_is("aten::mm")));
    auto pytorch = tmod::pytorch_patterns();
    const auto results = std::apply(
        [&](auto&... p) { return tmod::find_patterns(view, context, p..., rule); }, pytorch);
    CHECK(!tmod::format_pattern_report(results).empty());

    // Formats: the Chrome trace written and read back, the flame chart, an execution trace
    // joined with the host trace.
    const std::string json = tmod::chrome_trace_string(t);
    tmod::event_table back = tmod::read_chrome_trace_string(json);
    CHECK(back.size() == t.size());
    CHECK(tmod::analyze(back).fwd_bwd.links == 2);
    CHECK(tmod::flame_svg(back).find("<svg") != std::string::npos);
    const auto et = tmod::read_execution_trace_string(
        R"({"schema":"1.0.1","pid":1,"nodes":[{"name":"[pytorch|profiler|execution_graph|thread]",)"
        R"("id":1,"parent":1,"tid":1},{"name":"aten::mm","id":2,"parent":1,"tid":1,"inputs":[],)"
        R"("input_shapes":[],"input_types":[],"outputs":[],"output_shapes":[],"output_types":[]}]})");
    const auto joined = tmod::link_execution_trace(et, back);
    CHECK(!tmod::enhanced_execution_trace(et, back, joined).empty());

    // Device time (docs/gpu.md), exact and by HTA's rules (docs/hta-rules.md), and across ranks.
    std::string dev = R"({"traceEvents":[)"
                      R"({"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,)"
                      R"("ts":1,"dur":2,"args":{"correlation":1}},)"
                      R"({"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":5,"dur":4,)"
                      R"("args":{"stream":7,"correlation":1,"device":0}}]})";
    const tmod::event_table gpu = tmod::read_chrome_trace(dev, dev.size());
    const auto iv = tmod::device_intervals(gpu);
    CHECK(tmod::temporal_breakdown(iv).kernel_time == 4000);
    CHECK(tmod::kernel_type_breakdown({iv}).size() == 1);
    CHECK(!tmod::comm_comp_overlap(iv).has_value());
    CHECK(tmod::idle_time_breakdown(gpu).size() == 1);
    CHECK(tmod::kernel_breakdown(gpu, {.top = 3}).size() == 1);
    CHECK(tmod::launch_stats(gpu).size() == 1);
    const tmod::device_view work(gpu);
    CHECK(tmod::launch_stats(work).size() == 1);
    CHECK(tmod::device_intervals(work).size() == 1);
    CHECK(tmod::queue_length(gpu).size() == 1);
    const tmod::hta::frame frame(gpu);
    CHECK(tmod::hta::device_intervals(frame).size() == 1);
    CHECK(tmod::hta::idle_time_breakdown(frame).size() == 1);
    CHECK(tmod::hta::kernel_breakdown(frame).size() == 1);
    CHECK(tmod::hta::annotation_breakdown(frame).empty());
    CHECK(tmod::hta::launch_stats(frame).size() == 1);
    CHECK(tmod::hta::queue_length(frame).size() == 1);
    CHECK(tmod::hta::memory_bandwidth(frame).empty());
    CHECK(tmod::hta::kernel_class_of("ncclKernel") == tmod::kernel_class::communication);
    CHECK(tmod::memory_bandwidth(gpu).empty());
    CHECK(tmod::annotation_breakdown(gpu).empty());
    CHECK(tmod::spread_across_ranks({{0, tmod::rank_timeline_of(gpu)}}).steps.empty());
    CHECK(!tmod::chrome_trace_string(gpu).empty());
    std::string with_counters;
    tmod::json_output cout = tmod::json_output::to_string(with_counters);
    tmod::export_view counted{gpu};
    counted.counters = tmod::counter_tracks(tmod::queue_length(gpu), {});
    tmod::write_chrome_trace(counted, cout);
    CHECK(with_counters.find("\"ph\":\"C\"") != std::string::npos);
    CHECK(tmod::rank_in_name("x_rank-2.json") == 2);
    const tmod::op_totals side = tmod::op_totals_of(gpu);
    CHECK(side.by_name.at("k").duration == 4000);
    const auto same = tmod::compare_totals(side, side);
    CHECK(tmod::ops_diff(same).unchanged.size() == 2);  // the call and the kernel
    CHECK(tmod::top_regressions(same, 3).empty());
    CHECK(tmod::hta::step_totals_of(frame).iterations().empty());
    CHECK(tmod::hta::trace_steps(frame).empty());
    CHECK(tmod::trace_steps(gpu).empty());
    CHECK(tmod::short_kernel_name("void k<int>(float)") == "k");
    const tmod::critical_path cp = tmod::critical_path_of(gpu);
    CHECK(cp.length == 8000);  // the call's start to the kernel's (launch delay), then the kernel
    CHECK(cp.bound_by.at("gpu_compute_bound") == 4000);
    CHECK(tmod::top_events(cp, 1).at(0).second == 4000);  // the kernel
    const tmod::critical_path hta = tmod::hta::critical_path_of(gpu);
    CHECK(hta.length == 8000);  // HTA's rules: the same path here, in whole microseconds
    std::string overlaid;
    tmod::json_output oo = tmod::json_output::to_string(overlaid);
    tmod::write_critical_path_overlay(gpu, cp, oo);
    CHECK(overlaid.find("\"critical\":1") != std::string::npos);
    {
      const std::string streamed =
          (std::filesystem::temp_directory_path() / "tracemodel_every_call_stream.json").string();
      tmod::chrome_trace_stream stream(streamed);
      stream.write(gpu);
      stream.write(gpu);
      CHECK(tmod::read_chrome_trace_file(streamed).size() == 2 * gpu.size());
      std::filesystem::remove(streamed);
    }

    // Threads and memory.
    tmod::analyze_options own;
    own.threads = 2;
    own.start_thread = [](std::function<void()> task) { std::thread(std::move(task)).detach(); };
    tmod::event_table again = t;
    tmod::analyze(again, own);
    CHECK(again.links == t.links);
    const tmod::memory_stats m = tmod::memory_usage();
    CHECK(m.block_limit > 0);
    tmod::program_memory_cache();
    CHECK(tmod::memory_usage().region_limit > m.region_limit);
    tmod::set_memory_cache_limits(m.region_limit, m.block_limit);
    tmod::release_cached_memory();
    CHECK(tmod::memory_usage().cached() == 0);
  }
}
