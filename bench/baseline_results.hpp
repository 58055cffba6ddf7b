// The benchmark workload (workload.hpp) as the baseline's Result objects (baseline_tree.hpp), the
// way PyTorch has them when build_tree starts: ops open on their thread, each runtime launch
// under its op and its kernel under the launch, both finished (TransferEvents linked them), all
// sorted by start time. Shared by bench/postprocess.cpp and the test that checks that the
// baseline builds the tree `analyze` builds.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "baseline_tree.hpp"
#include "workload.hpp"

namespace baseline {

/// workload::generate's sink for one thread: its Results in `out`.
struct result_sink {
  std::vector<result_ptr> out;
  std::vector<result_ptr> open;
  std::uint64_t tid = 0;
  std::uint64_t next_corr = 1;
  std::string step;
  void step_name(std::int64_t i) { step = "ProfilerStep#" + std::to_string(i); }
  void begin(const char* name, std::int64_t seq, std::uint64_t fwd, bool user, bool backward,
             std::int64_t t) {
    auto r = std::make_shared<result>();
    r->start_time_ns = t;
    r->start_tid = tid;
    auto& f = r->extra_fields.emplace<torch_op_fields>();
    f.name = name == nullptr ? step : name;
    f.sequence_number = seq;
    f.forward_tid = fwd;
    f.scope = user       ? record_scope::user_scope
              : backward ? record_scope::backward_function
                         : record_scope::function;
    f.correlation_id = next_corr++;
    open.push_back(r);
    out.push_back(std::move(r));
  }
  void end(std::int64_t t) {
    std::get<torch_op_fields>(open.back()->extra_fields).end_time_ns = t;
    open.pop_back();
  }
  void launch(std::int64_t call, std::int64_t call_end, std::uint64_t corr, std::int64_t k0,
              std::int64_t k1) {
    // As TransferEvents leaves them: the call under its op, the kernel under the call, both
    // finished, so build_tree skips them.
    auto kineto = [this, corr](const char* name, std::int64_t start, std::int64_t end,
                               bool flow_start, const result_ptr& parent) {
      auto r = std::make_shared<result>();
      r->start_time_ns = start;
      r->start_tid = tid;
      auto& f = r->extra_fields.emplace<kineto_fields>();
      f.name = name;
      f.duration_us = (end - start) / 1000;
      f.correlation_id = corr;
      f.flow = {static_cast<std::uint32_t>(corr), 2, flow_start};
      f.linked_activity = parent;
      r->parent = parent;
      parent->children.push_back(r);
      r->finished = true;
      return r;
    };
    auto call_r = kineto("cudaLaunchKernel", call, call_end, true, open.back());
    auto k = kineto("void gemm_kernel<float>(...)", k0, k1, false, call_r);
    out.push_back(std::move(call_r));
    out.push_back(std::move(k));
  }
};

/// About `events` Results of the workload recorded by `threads` threads (thread k has tid k + 1
/// and forward thread id k + 1), stably sorted by start time.
inline std::vector<result_ptr> workload_results(std::int64_t events, int threads) {
  std::vector<result_ptr> all;
  {
    std::vector<result_sink> sinks(static_cast<std::size_t>(threads));
    for (int k = 0; k < threads; ++k) {
      sinks[static_cast<std::size_t>(k)].tid = static_cast<std::uint64_t>(k + 1);
      workload::generate(sinks[static_cast<std::size_t>(k)], events / threads,
                         static_cast<std::uint64_t>(k + 1), k, threads);
    }
    for (auto& s : sinks)
      for (auto& r : s.out) all.push_back(std::move(r));
  }
  std::stable_sort(all.begin(), all.end(), [](const auto& a, const auto& b) {
    return a->start_time_ns < b->start_time_ns;
  });
  return all;
}

}  // namespace baseline
