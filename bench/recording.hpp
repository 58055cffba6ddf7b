// Recording the synthetic workload (workload.hpp) through tracemodel's public API with a
// synthetic clock, shared by the benchmarks that need a recorded table; and the resident-memory
// probes they report peaks with.
#pragma once

#include <cstdint>
#include <cstring>
#include <fstream>
#include <span>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include <tracemodel/collect.hpp>
#include <tracemodel/memory.hpp>

#include "workload.hpp"

namespace bench {

namespace tmod = tracemodel;

/// The benchmarks measure what a program that analyses trace after trace sees: freed arrays
/// kept for reuse up to the program limits (memory.hpp), set before any benchmark runs.
[[maybe_unused]] inline const bool program_memory = (tmod::program_memory_cache(), true);

// ---- memory ------------------------------------------------------------------------------------
/// A field of /proc/self/status in KiB (VmRSS, VmHWM).
inline long status_kb(const char* field) {
  std::ifstream f("/proc/self/status");
  std::string line;
  const std::size_t n = std::strlen(field);
  while (std::getline(f, line))
    if (line.compare(0, n, field) == 0) return std::stol(line.substr(n + 1));
  return 0;
}
/// Resets VmHWM to the current resident size.
inline void reset_peak() {
  std::ofstream f("/proc/self/clear_refs");
  f << "5";
}

// ---- recording
// -----------------------------------------------------------------------------------
inline thread_local tmod::approx_time synthetic_now = 0;
struct synthetic_clock {
  static constexpr bool ticks_are_ns = true;
  static tmod::approx_time now() noexcept { return synthetic_now; }
};

/// A rank-2 tensor as the value traits see it.
struct tensor {
  std::int64_t sizes[2];
  std::int64_t strides[2];
};
struct tensor_traits {
  static tmod::input_kind kind(const tensor&) { return tmod::input_kind::tensor; }
  static tmod::tensor_info tensor(const struct tensor& t) {
    return {0, 0, 0, -1, 0, tmod::strided_layout, t.sizes, t.strides};
  }
  static tmod::scalar_value scalar(const struct tensor&) { return {}; }
  template <class F>
  static void for_each_element(const struct tensor&, F&&) {}
  static std::string_view dtype_name(std::uint8_t) { return "float"; }
};

struct policies : tmod::default_record_policies {
  using clock = synthetic_clock;
  using value_traits = tensor_traits;
};
/// Without inputs (what the post-processing benchmark records) or with two tensor inputs per
/// op (what a trace file of a real run carries).
template <bool Inputs>
using queue =
    tmod::record_queue<tmod::default_schema, tmod::record_features{.inputs = Inputs}, policies>;

/// The workload's callbacks, recorded into a queue: ops, then a runtime launch and its kernel.
template <class Queue>
struct queue_sink {
  static constexpr bool inputs = std::is_same_v<Queue, queue<true>>;
  Queue& q;
  std::string_view kernel_name;
  std::vector<tmod::op_handle> open{};
  std::string step{};
  std::uint64_t os_tid = tmod::detail::os_thread_id();

  void step_name(std::int64_t i) { step = "ProfilerStep#" + std::to_string(i); }
  void begin(const char* name, std::int64_t seq, std::uint64_t fwd, bool user, bool backward,
             std::int64_t t) {
    synthetic_now = static_cast<tmod::approx_time>(t);
    const bool dynamic = name == nullptr;
    const tmod::op_info info{.name = dynamic ? std::string_view(step) : std::string_view(name),
                             .sequence_number = seq,
                             .fwd_thread_id = fwd,
                             .scope = user       ? tmod::op_scope::user_scope
                                      : backward ? tmod::op_scope::backward_function
                                                 : tmod::op_scope::function,
                             .copy_name = dynamic};
    if constexpr (inputs) {
      if (!user) {
        const tensor in[2] = {{{64, 32}, {32, 1}}, {{32, 16}, {16, 1}}};
        open.push_back(q.begin_op(info, std::span<const tensor>(in)));
        return;
      }
    }
    open.push_back(q.begin_op(info));
  }
  void end(std::int64_t t) {
    synthetic_now = static_cast<tmod::approx_time>(t);
    q.end_op(open.back());
    open.pop_back();
  }
  void launch(std::int64_t call, std::int64_t call_end, std::uint64_t corr, std::int64_t k0,
              std::int64_t k1) {
    tmod::device_record r{};
    r.start = static_cast<tmod::approx_time>(call);
    r.end = static_cast<tmod::approx_time>(call_end);
    r.name = "cudaLaunchKernel";
    r.name_len = 16;
    r.activity = tmod::activity_type::cuda_runtime;
    r.flow_type = tmod::flow_kind::async_cpu_gpu;
    r.flow_start = true;
    r.flow_id = corr;
    r.correlation_id = corr;
    r.external_id = Queue::correlation_id(open.back());
    r.host_thread = true;
    r.tid = os_tid;
    r.cbid = 211;
    q.record_device(r);
    r.start = static_cast<tmod::approx_time>(k0);
    r.end = static_cast<tmod::approx_time>(k1);
    r.name = kernel_name.data();
    r.name_len = static_cast<std::uint32_t>(kernel_name.size());
    r.activity = tmod::activity_type::kernel;
    r.flow_start = false;
    r.host_thread = false;
    r.pid = 0;
    r.tid = 7;
    r.device = 0;
    r.stream = 7;
    r.cbid = 0;
    r.grid[0] = 128;
    r.grid[1] = r.grid[2] = 1;
    r.block[0] = 256;
    r.block[1] = r.block[2] = 1;
    r.registers = 32;
    q.record_device(r);
  }
};

/// Records about `events` events of the workload from `threads` threads into `q`.
template <class Queue>
void record_workload(Queue& q, std::int64_t events, int threads,
                     std::string_view kernel_name = "void gemm_kernel<float>(...)") {
  std::vector<std::thread> ts;
  for (int k = 0; k < threads; ++k)
    ts.emplace_back([&q, events, k, threads, kernel_name] {
      queue_sink<Queue> sink{q, kernel_name};
      workload::generate(sink, events / threads, tmod::current_thread_id(), k, threads);
    });
  for (auto& t : ts) t.join();
}

}  // namespace bench
