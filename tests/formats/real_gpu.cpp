// Traces made on a real GPU (an H100): the CUPTI adapter's own example, read back; PyTorch 2.11's
// traces of a small training loop, with PyTorch's own key averages.
#include <doctest/doctest.h>

#include <simdjson.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <string>

#include <tracemodel/algo/analyze.hpp>
#include <tracemodel/algo/et_link.hpp>
#include <tracemodel/algo/key_averages.hpp>
#include <tracemodel/formats/chrome_trace_reader.hpp>
#include <tracemodel/formats/chrome_trace_writer.hpp>
#include <tracemodel/formats/execution_trace.hpp>

using namespace tracemodel;
namespace fs = std::filesystem;

namespace {
std::string h100(const char* name) {
  return (fs::path(TRACEMODEL_TEST_DATA_DIR) / "h100" / name).string();
}
}  // namespace

TEST_SUITE("formats") {
  TEST_CASE(
      "an H100 trace from the CUPTI adapter: every GPU activity under its launch, under its op") {
    // examples/cupti_kernels on an H100 (CUDA 13, driver 580): 3 steps of 6 ops with a memcpy, a
    // memset and 4 kernels, then 2000 empty kernels in ops; its warm-up ran with the queue stopped.
    event_table t = read_chrome_trace_file(h100("cupti_kernels.json.gz"));
    REQUIRE(t.size() == 8082);
    const analysis a = analyze(t);
    CHECK(a.device.unlinked == 0);
    CHECK(a.device.dangling_correlations == 0);
    CHECK(a.device.by_flow == 2018);  // one ac2g flow per launch: 2018 in the file
    std::map<std::string, int> gpu;
    std::size_t host_calls = 0, ops = 0;
    thread_key op_tid = 0;
    for (event_index i = 0; i < t.size(); ++i) {
      const auto& e = t.events[i];
      if (e.is<event_kind::op>()) {
        ++ops;
        op_tid = e.tid;
        continue;
      }
      const auto* d = e.get_if<event_kind::device_activity>();
      REQUIRE(d != nullptr);
      if (d->activity == activity_type::cuda_runtime) {
        ++host_calls;
        CHECK(e.tid == op_tid);  // CUPTI's thread id was mapped to the ops' thread
        continue;
      }
      if (d->activity != activity_type::kernel && d->activity != activity_type::gpu_memcpy &&
          d->activity != activity_type::gpu_memset)
        continue;
      ++gpu[std::string(t.name(i))];
      const event_index launch = e.parent;
      REQUIRE(launch != no_event);
      CHECK(t.events[launch].get<event_kind::device_activity>().activity ==
            activity_type::cuda_runtime);
      CHECK(t.events[launch].get<event_kind::device_activity>().correlation_id ==
            d->correlation_id);
      CHECK(t.events[t.events[launch].parent].is<event_kind::op>());
    }
    CHECK(ops == 2018);
    CHECK(host_calls > 4018);
    // Kernel names demangled as Kineto writes them.
    CHECK(gpu == std::map<std::string, int>{
                     {"(anonymous namespace)::block_sum(float const*, float*, int)", 3},
                     {"(anonymous namespace)::empty_kernel()", 2000},
                     {"(anonymous namespace)::saxpy(float const*, float*, float, int)", 3},
                     {"(anonymous namespace)::scale(float*, float, int)", 3},
                     {"Memcpy HtoD (Pageable -> Device)", 3},
                     {"Memset (Device)", 6}});
    // Write, read, write: the same bytes.
    const std::string once = chrome_trace_string(t);
    event_table back = read_chrome_trace_string(once);
    analyze(back);
    CHECK(chrome_trace_string(back) == once);
  }

  TEST_CASE(
      "PyTorch 2.11 on an H100: key averages equal PyTorch's, with and without Python frames") {
    // make_torch_traces.py: 2 profiled steps of an MLP with Adam and 12 `.item()` calls per step;
    // PyTorch's `prof.key_averages()` beside each trace. PyTorch counts runtime calls as CPU
    // events, merges ProfilerStep#N into ProfilerStep*, and nests by containment among its
    // events; device activities (kernels, memcpy, memset, GPU annotations) have rows of their own
    // with no CPU time, apart from ops of the same name (PyTorch keys on the device too).
    for (const char* tag : {"torch-2.11_stack", "torch-2.11_nostack"}) {
      CAPTURE(tag);
      event_table t = read_chrome_trace_file(h100((std::string(tag) + ".json.gz").c_str()));
      analyze(t);
      std::map<std::pair<std::string, bool>, key_average_row> ours;  // (name, device activities)
      for (auto& r : key_averages(t))
        CHECK(ours.emplace(std::pair(r.name, r.device_activities), r).second);
      simdjson::dom::parser parser;
      const simdjson::dom::element oracle =
          parser.load(h100((std::string(tag) + ".key_averages.json").c_str()));
      std::size_t rows = 0, device_rows = 0;
      for (simdjson::dom::element r : oracle["rows"].get_array()) {
        const double cpu_us = r["cpu_us"].get_double(), self_us = r["self_cpu_us"].get_double();
        const std::string key(std::string_view(r["key"].get_string()));
        CAPTURE(key);
        const bool device = cpu_us == 0 && self_us == 0;
        const auto it = ours.find({key, device});
        REQUIRE(it != ours.end());
        CHECK(it->second.count == static_cast<std::uint64_t>(r["count"].get_int64()));
        if (device) {
          ++device_rows;
          CHECK(it->second.total_ns == 0);
          CHECK(it->second.device_total_ns > 0);
          // A GPU annotation spans other activities: a device total, no self time.
          CHECK(it->second.self_device_ns ==
                (it->second.gpu_annotations ? 0 : it->second.device_total_ns));
          continue;
        }
        ++rows;
        CHECK(std::abs(static_cast<double>(it->second.total_ns) - cpu_us * 1000) < 2);
        CHECK(std::abs(static_cast<double>(it->second.self_ns) - self_us * 1000) < 2);
      }
      CHECK(rows == 67);
      CHECK(device_rows == 31);
      CHECK(ours.size() == rows + device_rows);
      // Every device activity of these traces has its op (by external id): the ops' self device
      // times add up to the device rows' self time; the two steps' device totals to
      // ProfilerStep*'s.
      std::int64_t op_device = 0, activities = 0;
      std::size_t annotations = 0;
      for (const auto& [key, r] : ours) {
        annotations += r.gpu_annotations ? 1 : 0;
        (r.device_activities ? activities : op_device) += r.self_device_ns;
      }
      CHECK(annotations == 4);  // train_step_2, train_step_3, Adam's zero_grad and step
      CHECK(ours.at({"train_step_2", true}).gpu_annotations);
      CHECK(activities > 0);
      CHECK(op_device == activities);
      auto cpu = [&](const char* name) -> const key_average_row& { return ours.at({name, false}); };
      CHECK(cpu("train_step_2").device_total_ns + cpu("train_step_3").device_total_ns ==
            cpu("ProfilerStep*").device_total_ns);
      CHECK(cpu("aten::linear").device_total_ns == cpu("aten::addmm").device_total_ns);
      CHECK(cpu("aten::linear").self_device_ns == 0);
      CHECK(cpu("aten::addmm").self_device_ns > 0);
      CHECK(key_averages(t, {.device_rows = false}).size() == rows);
    }
    // The built tree's nesting (PyTorch's C++ tree): with Python frames, an annotation closes
    // with the Python call it started in and keeps no children.
    event_table t = read_chrome_trace_file(h100("torch-2.11_stack.json.gz"));
    analyze(t);
    std::size_t seen = 0;
    for (const auto& r : key_averages(t, {.children = nesting::tree}))
      if (r.name == "train_step_2" && !r.device_activities) {
        ++seen;
        CHECK(r.self_ns == r.total_ns);
        CHECK(r.total_ns == 6'693'045);  // PyTorch: 6693.045 us, of which 3035.622 self
      }
    CHECK(seen == 1);
  }

  TEST_CASE(
      "PyTorch 2.11 on an H100: its execution trace (fields in attrs) joins its trace by rf_id") {
    // make_torch_et.py: one execution trace over the two profiled steps. Schema 1.1.1 keeps
    // rf_id, tid, op_schema and the rest in each node's `attrs` list.
    const execution_trace_file et = read_execution_trace_file(h100("torch-2.11_et.json.gz"));
    const auto fill =
        std::find_if(et.nodes.begin(), et.nodes.end(), [](const et_node& n) { return n.id == 17; });
    REQUIRE(fill != et.nodes.end());
    CHECK(fill->name == "aten::fill_");
    CHECK(fill->rf_id == 9);
    CHECK(fill->tid == 1);
    CHECK(fill->seq_id == -1);
    CHECK(fill->parent == 14);
    CHECK(fill->op_schema.starts_with("aten::fill_.Scalar("));
    event_table t = read_chrome_trace_file(h100("torch-2.11_et_trace.json.gz"));
    analyze(t);
    const et_link_result r = link_execution_trace(et, t);
    CHECK(r.method == "rf_id");
    CHECK(r.iterations == 2);  // ProfilerStep#2 and #3
    CHECK(r.op_nodes == 516);
    CHECK(r.matched == 516);
    CHECK(r.unmatched.empty());
    std::size_t same_id = 0;
    for (std::size_t k = 0; k < et.nodes.size(); ++k) {
      if (r.node_host[k] == no_event) continue;
      for (const attribute& a : t.attrs_of(t.events[r.node_host[k]]))
        if (t.strings.view(a.key) == "Record function id")
          same_id += a.i == et.nodes[k].rf_id ? 1 : 0;
    }
    CHECK(same_id == 516);
    CHECK(r.device_total == 120);  // 120 ac2g flows in the trace
    CHECK(r.by[static_cast<int>(attach_by::correlation)] == 120);
    CHECK(r.orphaned == 0);
  }
}
