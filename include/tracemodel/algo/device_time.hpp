// tracemodel/algo — what a device spent its time on: the device intervals of one rank's table,
// each classified, under a policy.
//
//   auto iv = tracemodel::device_intervals(table);                       // exact
//   auto hta = tracemodel::device_intervals(table, tracemodel::hta_device_time{});
//
// The breakdowns (temporal_breakdown.hpp, kernel_type_breakdown.hpp, comm_comp_overlap.hpp)
// read these intervals and nothing else. A policy decides three things:
//  1. which events are device work: `exact_device_time` takes the device activities that run
//     on a stream (kernels, copies, sets, synchronization on a stream); `hta_device_time` takes
//     what Holistic Trace Analysis takes, every complete event with a `stream` other than -1
//     (a Triton `cpu_op` that carries `stream: 0` too);
//  2. the time of each: exact nanoseconds as the file states them, or HTA's integer
//     microseconds (when any start is fractional, `ceil(ts)` and `floor(ts + dur)` computed in
//     doubles, as pandas does, so that short events can end before they start), with the last
//     profiler step and its kernels dropped when the traces hold two or more step names;
//  3. the class of each: `kernel_class::memory` for copies and sets, `other` for
//     synchronization, `communication` by name (the `kernel_classifier`'s patterns), else
//     `computation`; HTA classifies by name alone (its regular expressions, in order).
// Interval times are in the policy's unit (`unit_name`): "ns" or "us".
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tracemodel/algo/hta_frame.hpp"
#include "tracemodel/algo/kernel_class.hpp"
#include "tracemodel/config.hpp"
#include "tracemodel/model/table.hpp"

TRACEMODEL_BEGIN_NAMESPACE

/// One event of device work: [start, end) in the policy's unit; `end < start` only under HTA's
/// rounding. `event` is its index in the table.
struct device_interval {
  std::int64_t start = 0, end = 0;
  kernel_class cls = kernel_class::computation;
  event_index event = no_event;
  std::int64_t stream = -1;
  friend constexpr bool operator==(const device_interval&, const device_interval&) = default;
};

/// Communication kernels by name: a name that starts with one of `prefixes` or contains one of
/// `contains` (case-sensitive). The defaults cover NCCL, RCCL and HCCL.
struct kernel_classifier {
  std::vector<std::string> prefixes{"nccl", "rccl", "hccl"};
  std::vector<std::string> contains{"ncclKernel", "ncclDevKernel", "rcclKernel"};

  [[nodiscard]] bool communication(std::string_view name) const noexcept {
    for (const std::string& p : prefixes)
      if (name.starts_with(p)) return true;
    for (const std::string& c : contains)
      if (name.find(c) != std::string_view::npos) return true;
    return false;
  }
};

/// The default: device activities on a stream, nanoseconds as stated, classes by kind first.
struct exact_device_time {
  static constexpr std::string_view unit_name = "ns";
  kernel_classifier classifier{};

  template <class Schema>
  [[nodiscard]] std::vector<device_interval> intervals(const basic_event_table<Schema>& t) const {
    std::vector<device_interval> out;
    std::unordered_map<std::uint32_t, bool> communication;  // per name, asked once
    for (event_index i = 0; i < t.size(); ++i) {
      const auto* d = t.events[i].template get_if<event_kind::device_activity>();
      if (d == nullptr || d->stream < 0 || t.events[i].instant_scope != 0) continue;
      kernel_class c = kernel_class::computation;
      switch (d->activity) {
        case activity_type::kernel: {
          auto [it, added] = communication.try_emplace(static_cast<std::uint32_t>(d->name), false);
          if (added) it->second = classifier.communication(t.strings.view(d->name));
          c = it->second ? kernel_class::communication : kernel_class::computation;
          break;
        }
        case activity_type::gpu_memcpy:
        case activity_type::gpu_memset:
          c = kernel_class::memory;
          break;
        case activity_type::cuda_sync:
          c = kernel_class::other;
          break;
        case activity_type::collective_comm:
          c = kernel_class::communication;
          break;
        default:
          continue;  // runtime calls, annotations, events: not device work
      }
      out.push_back({t.events[i].start_ns, d->end_ns, c, i, d->stream});
    }
    return out;
  }
};

/// Holistic Trace Analysis's view (hta-analyses.md, sections 1 and 2), quirks included: the
/// rows of its frame (hta_frame.hpp) whose `stream` is not -1, classed by name.
struct hta_device_time {
  static constexpr std::string_view unit_name = "us";
  /// Drop the last profiler step and the kernels launched in it (HTA does when the ranks' traces
  /// hold two or more distinct `ProfilerStep#N` names: see `hta_step_names`).
  bool drop_last_step = false;

  template <class Schema>
  [[nodiscard]] std::vector<device_interval> intervals(const basic_event_table<Schema>& t) const {
    return intervals(t, hta_frame(t, drop_last_step));
  }
  /// The same from a frame made already.
  template <class Schema>
  [[nodiscard]] static std::vector<device_interval> intervals(
      [[maybe_unused]] const basic_event_table<Schema>& t, const hta_frame& f) {
    std::vector<device_interval> out;
    for (const hta_row& r : f.rows)
      if (r.stream != -1) out.push_back({r.ts, r.end, r.cls, r.event, r.stream});
    return out;
  }
};

/// The device intervals of `t` under `policy` (default: exact).
template <class Schema, class Policy = exact_device_time>
[[nodiscard]] std::vector<device_interval> device_intervals(const basic_event_table<Schema>& t,
                                                            const Policy& policy = {}) {
  return policy.intervals(t);
}

/// Merged intervals: sorted by start, a new one where a start lies after every end before it
/// (touching intervals merge); each [its first start, its greatest end].
struct span {
  std::int64_t start = 0, end = 0;
  friend constexpr bool operator==(const span&, const span&) = default;
};
template <class Pred>
[[nodiscard]] std::vector<span> merge_intervals(const std::vector<device_interval>& iv, Pred keep) {
  std::vector<span> s;
  for (const device_interval& d : iv)
    if (keep(d)) s.push_back({d.start, d.end});
  auto by_start = [](const span& a, const span& b) { return a.start < b.start; };
  if (!std::is_sorted(s.begin(), s.end(), by_start))  // a table's intervals mostly are
    std::sort(s.begin(), s.end(), by_start);
  std::vector<span> out;
  std::int64_t reach = 0;  // the greatest end so far (of every interval, not only the group's)
  for (const span& x : s) {
    if (out.empty() || x.start > reach)
      out.push_back(x);
    else
      out.back().end = std::max(out.back().end, x.end);
    reach = out.size() == 1 && &x == s.data() ? x.end : std::max(reach, x.end);
  }
  return out;
}

TRACEMODEL_END_NAMESPACE
