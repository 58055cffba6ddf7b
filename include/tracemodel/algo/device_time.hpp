// tracemodel/algo — what a device spent its time on: the device intervals of one rank's table,
// each classified.
//
//   auto iv = tracemodel::device_intervals(table);                  // nanoseconds, as stated
//   const tracemodel::device_view v(table);                         // shared by several measures
//
// Device work is every device activity that runs on a stream: kernels, copies, sets,
// synchronization on a stream, collectives. Its class: `kernel_class::memory` for copies and
// sets, `other` for synchronization, `communication` for collectives and for kernels that the
// `kernel_classifier` names so (NCCL, RCCL and HCCL by default), else `computation`. The
// breakdowns (temporal_breakdown.hpp, kernel_type_breakdown.hpp, comm_comp_overlap.hpp) read
// these intervals and nothing else; they take intervals of any unit.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tracemodel/algo/kernel_class.hpp"
#include "tracemodel/algo/measure.hpp"
#include "tracemodel/config.hpp"
#include "tracemodel/detail/flat_map.hpp"
#include "tracemodel/model/table.hpp"

TRACEMODEL_BEGIN_NAMESPACE

/// One event of device work: [start, end) (nanoseconds from a table; intervals of another unit
/// may end before they start where that unit rounds). `event` is its index in the table.
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

/// A host call that launches device work: a runtime or driver call of any device API.
[[nodiscard]] constexpr bool is_launch_call(activity_type a) noexcept {
  return a == activity_type::cuda_runtime || a == activity_type::cuda_driver ||
         a == activity_type::xpu_runtime || a == activity_type::xpu_driver ||
         a == activity_type::mtia_runtime || a == activity_type::privateuse1_runtime ||
         a == activity_type::privateuse1_driver;
}
/// Work that occupies a stream's queue: kernels, copies and sets.
[[nodiscard]] constexpr bool is_queued_work(activity_type a) noexcept {
  return a == activity_type::kernel || a == activity_type::gpu_memcpy ||
         a == activity_type::gpu_memset;
}

/// One piece of device work on a stream, with the call that launched it.
struct device_work {
  std::int64_t start = 0, end = 0;  ///< ns
  std::int64_t stream = -1;
  std::uint64_t correlation = 0;
  std::int64_t launched = 0;  ///< when the launching call started (if there is one), ns
  event_index event = no_event;
  event_index call = no_event;   ///< the launching call: the last one of its correlation id
  std::uint32_t call_place = 0;  ///< that call's place in the view's `calls`
  std::int32_t device = -1;
  name_id name{};
  activity_type activity = activity_type::kernel;
  kernel_class cls = kernel_class::computation;
};

/// A host call that launches device work, with a correlation id.
struct launch_call {
  event_index event = no_event;
  std::int64_t start = 0, end = 0;  ///< ns
  std::uint64_t correlation = 0;
};

/// The device side of one table in one pass, shared by the measures of one table: every device
/// activity on a stream that is device work (kernels, copies, sets,
/// synchronization on a stream, collectives), in table order, classified (copies and sets
/// `memory`, synchronization `other`, collectives and kernels the classifier names
/// `communication`, other kernels `computation`), each with the runtime or driver call of its
/// correlation id; and those calls, in table order. Each measure takes a table alone (it makes
/// the view) or the view.
struct device_view {
  table_vector<device_work> work;
  table_vector<launch_call> calls;  ///< launch calls with a correlation id, in table order
  bool repeated_calls = false;      ///< two calls share a correlation id
  table_vector<event_index> gpu_annotations;  ///< GPU user annotations (not instants), in order

  device_view() = default;
  template <class Schema>
  explicit device_view(const basic_event_table<Schema>& t,
                       const kernel_classifier& classifier = {}) {
    detail::flat_map<bool> communication;  // per kernel name, asked once
    for (event_index i = 0; i < t.size(); ++i) {
      const auto& e = t.events[i];
      const auto* d = e.template get_if<event_kind::device_activity>();
      if (d == nullptr) continue;
      if (d->activity == activity_type::gpu_user_annotation) {
        if (e.instant_scope == 0) gpu_annotations.push_back(i);
        continue;
      }
      if (d->stream < 0) {
        if (d->correlation_id != 0 && is_launch_call(d->activity))
          calls.push_back({i, e.start_ns, d->end_ns, d->correlation_id});
        continue;
      }
      if (e.instant_scope != 0) continue;
      kernel_class c = kernel_class::computation;
      switch (d->activity) {
        case activity_type::kernel: {
          auto [known, added] =
              communication.try_emplace(static_cast<std::uint32_t>(d->name), false);
          if (added) *known = classifier.communication(t.strings.view(d->name));
          c = *known ? kernel_class::communication : kernel_class::computation;
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
          continue;  // annotations, events: not device work
      }
      work.push_back({e.start_ns, d->end_ns, d->stream, d->correlation_id, 0, i, no_event, 0,
                      d->device, d->name, d->activity, c});
    }
    link_calls();
  }

 private:
  /// Each piece of work's call: the last call of its correlation id. The ids are looked up in
  /// an array over their range when they are dense (Kineto numbers them in order: a hash map's
  /// random probes were a fifth of the analyses' time), else in a hash map.
  void link_calls() {
    constexpr std::uint32_t none = ~std::uint32_t{0};
    auto link = [&](device_work& w, std::uint32_t c) {
      w.call = calls[c].event;
      w.launched = calls[c].start;
      w.call_place = c;
    };
    if (calls.empty()) return;
    std::uint64_t lo = calls.front().correlation, hi = lo;
    for (const launch_call& c : calls) {
      lo = std::min(lo, c.correlation);
      hi = std::max(hi, c.correlation);
    }
    if (hi - lo < 4 * calls.size() + 1024) {
      table_vector<std::uint32_t> place(hi - lo + 1, none);
      for (std::size_t k = 0; k < calls.size(); ++k) {
        std::uint32_t& p = place[calls[k].correlation - lo];
        repeated_calls = repeated_calls || p != none;
        p = static_cast<std::uint32_t>(k);
      }
      for (device_work& w : work)
        if (w.correlation >= lo && w.correlation <= hi)
          if (const std::uint32_t c = place[w.correlation - lo]; c != none) link(w, c);
      return;
    }
    detail::flat_map<std::uint32_t> call_of(calls.size());
    for (std::size_t k = 0; k < calls.size(); ++k) {
      auto [p, added] = call_of.try_emplace(calls[k].correlation, static_cast<std::uint32_t>(k));
      if (!added) {
        repeated_calls = true;
        *p = static_cast<std::uint32_t>(k);
      }
    }
    for (device_work& w : work)
      if (w.correlation != 0)
        if (const std::uint32_t* c = call_of.find(w.correlation)) link(w, *c);
  }
};

struct device_time_options {
  kernel_classifier classifier{};
};

/// The device intervals of a view made already (its classes are its classifier's).
[[nodiscard]] inline row_list<device_interval> device_intervals(const device_view& v) {
  row_list<device_interval> out;
  out.reserve(v.work.size());
  for (const device_work& w : v.work) out.push_back({w.start, w.end, w.cls, w.event, w.stream});
  return out;
}
/// The device intervals of `t`, in table order.
template <class Schema>
[[nodiscard]] row_list<device_interval> device_intervals(const basic_event_table<Schema>& t,
                                                         const device_time_options& o = {}) {
  return device_intervals(device_view(t, o.classifier));
}

/// Merged intervals: sorted by start, a new one where a start lies after every end before it
/// (touching intervals merge); each [its first start, its greatest end].
struct span {
  std::int64_t start = 0, end = 0;
  friend constexpr bool operator==(const span&, const span&) = default;
};
template <class Pred>
[[nodiscard]] row_list<span> merge_intervals(std::span<const device_interval> iv, Pred keep) {
  row_list<span> s;  // scratch: its pages come back from the allocator's cache
  for (const device_interval& d : iv)
    if (keep(d)) s.push_back({d.start, d.end});
  auto by_start = [](const span& a, const span& b) { return a.start < b.start; };
  if (!std::is_sorted(s.begin(), s.end(), by_start))  // a table's intervals mostly are
    std::sort(s.begin(), s.end(), by_start);
  row_list<span> out;  // (reserved: untouched pages cost nothing)
  out.reserve(s.size());
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
