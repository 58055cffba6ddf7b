// tracemodel/algo — the host/device linker.
//
//   tracemodel::link_device_activities(table);  // then build_tree(table) places the rest
//
// Device activities (kernels, memcpy, memset, synchronization, CUDA events, GPU annotations)
// and the runtime or driver calls that launched them share a correlation id; a device profiler
// may also draw an `ac2g` flow from the call to the activity. As PyTorch:
//  1. each id names its first event in the table: the flow starts of the host-to-device kind (a
//     later start with the same id is counted as a duplicate), the runtime calls by correlation
//     id, the ops by their correlation id;
//  2. a device activity without a parent hangs under its flow's start if it ends a flow (a flow
//     end whose id never started is counted), else under the runtime call with its correlation
//     id (an id no call has is counted as dangling), else under the op whose correlation id is
//     its external id (PyTorch's linked activity), else nowhere;
//  3. a runtime call without a parent hangs under the op whose correlation id is its external
//     id.
// What it writes: the `parent` and `link` (`parent_link::flow`, `correlation` or `external_id`)
// of each event it places, and one host-to-device link per device activity it places, added to
// the end of `table.links` (in table order of the activities); the anomalies it counts. Events
// placed before are left alone, so a second run links nothing new. It returns
// `device_link_stats`.
//
// PyTorch then lets device subtrees take the thread of their parent: its Kineto events have no
// thread of their own. Ours keep their track (pid = device, tid = stream), which writers and
// viewers need, so that step is the opt-in policy `pytorch_thread_inheritance` (it writes the
// `pid` and `tid` of the activities placed).
//
// Which calls start flows is the device profiler's business (the CUPTI adapter decides it by a
// registry of callback ids, not by names); this linker follows the flags the events carry.
//
// Policies (members of a policy struct; see `pytorch_device_links`; the concept is in
// algo/concepts.hpp):
//   use_flows          a flow end takes its flow start as parent
//   use_correlation    else the runtime call with the same correlation id
//   use_external_id    else the op whose correlation id is the activity's external id
//   link_runtime_calls runtime calls hang under the op of their external id
//   inherit_thread     placed device activities take their parent's pid and tid (off)
//
// `analyze` (algo/analyze.hpp) runs the same rules fused with the tree builder.
#pragma once

#include <cstdint>
#include <vector>

#include "tracemodel/algo/concepts.hpp"
#include "tracemodel/config.hpp"
#include "tracemodel/detail/flat_map.hpp"
#include "tracemodel/model/table.hpp"

TRACEMODEL_BEGIN_NAMESPACE

struct pytorch_device_links {
  using policy_kind = device_link_policy_kind;
  static constexpr bool use_flows = true;
  static constexpr bool use_correlation = true;
  static constexpr bool use_external_id = true;
  static constexpr bool link_runtime_calls = true;
  static constexpr bool inherit_thread = false;
};
/// PyTorch's last step as well: device subtrees take the thread of their parent.
struct pytorch_thread_inheritance : pytorch_device_links {
  static constexpr bool inherit_thread = true;
};
/// Correlation ids only: what the links are without the flow records of a file.
struct correlation_device_links : pytorch_device_links {
  static constexpr bool use_flows = false;
};

/// What the host/device linker did.
struct device_link_stats {
  std::size_t by_flow = 0;         ///< device activities placed under their flow's start
  std::size_t by_correlation = 0;  ///< ... under the runtime call with their correlation id
  std::size_t by_external_id = 0;  ///< ... under the op of their external id
  std::size_t runtime_calls = 0;   ///< runtime calls placed under their op
  std::size_t unlinked = 0;        ///< device activities with no parent found
  std::size_t duplicate_flow_starts = 0;
  std::size_t flow_ends_without_start = 0;
  std::size_t dangling_correlations = 0;  ///< a correlation id no runtime call has
  /// Links added to `table.links` (one per device activity placed).
  [[nodiscard]] std::size_t links() const noexcept {
    return by_flow + by_correlation + by_external_id;
  }
};

namespace detail {
/// Linked device activities take the pid and tid of their nearest ancestor that is not a
/// linked device activity (`candidates`: the events the linker looked at).
template <class Schema, class Indices>
void inherit_device_threads(basic_event_table<Schema>& t, const Indices& candidates) {
  constexpr auto device = event_kind::device_activity;
  for (const event_index i : candidates) {
    auto& e = t.events[i];
    if (is_runtime_call(e.template get<device>().activity)) continue;
    if (e.link != parent_link::flow && e.link != parent_link::correlation &&
        e.link != parent_link::external_id)
      continue;
    event_index p = e.parent;
    while (p != no_event && t.events[p].template is<device>() &&
           is_device_side(t.events[p].template get<device>().activity) &&
           t.events[p].parent != no_event)
      p = t.events[p].parent;
    e.tid = t.events[p].tid;
    e.pid = t.events[p].pid;
  }
}
}  // namespace detail

struct link_device_activities_fn {
  template <class Schema, class Policy = pytorch_device_links>
  device_link_stats operator()(basic_event_table<Schema>& t, Policy = {}) const {
    if constexpr (detail::check_device_link_policy<Policy>())
      return link<Policy>(t);
    else
      return {};
  }

 private:
  template <class Policy, class Schema>
  static device_link_stats link(basic_event_table<Schema>& t) {
    constexpr auto device = event_kind::device_activity;
    device_link_stats s;
    if constexpr (Schema::template contains<device>) {
      const std::size_t n = t.size();
      // Rule 1.
      detail::flat_map<event_index> flow_starts, calls, ops;
      for (std::size_t i = 0; i < n; ++i) {
        const auto& e = t.events[i];
        const auto idx = static_cast<event_index>(i);
        if (const auto* d = e.template get_if<device>()) {
          if (d->flow_start && d->flow_type == flow_kind::async_cpu_gpu && d->flow_id != 0)
            s.duplicate_flow_starts += flow_starts.try_emplace(d->flow_id, idx).second ? 0 : 1;
          if (is_runtime_call(d->activity) && d->correlation_id != 0)
            calls.try_emplace(d->correlation_id, idx);
        } else if (const auto* op = e.template get_if<event_kind::op>()) {
          if (op->correlation_id != 0) ops.try_emplace(op->correlation_id, idx);
        }
      }
      t.anomalies.add(anomaly::duplicate_flow_start, s.duplicate_flow_starts);
      auto find = [](const detail::flat_map<event_index>& map, std::uint64_t id) {
        const event_index* i = map.find(id);
        return i == nullptr ? no_event : *i;
      };
      detail::scratch_vector<event_index> candidates;  // for the thread inheritance
      auto place = [&](event_index child, event_index parent, parent_link how, std::uint64_t id) {
        t.events[child].parent = parent;
        t.events[child].link = how;
        if (how != parent_link::external_id ||
            !is_runtime_call(t.events[child].template get<device>().activity))
          t.links.push_back({flow_kind::async_cpu_gpu, id, parent, child});
      };
      for (std::size_t i = 0; i < n; ++i) {
        const auto idx = static_cast<event_index>(i);
        const auto* d = t.events[i].template get_if<device>();
        if (d == nullptr || t.events[i].parent != no_event) continue;
        const bool call = is_runtime_call(d->activity);
        if (!call && !is_device_side(d->activity)) continue;
        if constexpr (Policy::inherit_thread) candidates.push_back(idx);
        // Rule 3.
        if (call) {
          if constexpr (Policy::link_runtime_calls && Policy::use_external_id) {
            if (const event_index op = d->external_id == 0 ? no_event : find(ops, d->external_id);
                op != no_event) {
              place(idx, op, parent_link::external_id, d->external_id);
              ++s.runtime_calls;
            }
          }
          continue;
        }
        // Rule 2.
        if (Policy::use_flows && d->flow_type == flow_kind::async_cpu_gpu && !d->flow_start &&
            d->flow_id != 0) {
          if (const event_index start = find(flow_starts, d->flow_id); start != no_event) {
            place(idx, start, parent_link::flow, d->flow_id);
            ++s.by_flow;
            continue;
          }
          ++s.flow_ends_without_start;
          t.anomalies.add(anomaly::flow_end_without_start);
        }
        if (Policy::use_correlation && d->correlation_id != 0) {
          if (const event_index c = find(calls, d->correlation_id); c != no_event) {
            place(idx, c, parent_link::correlation, d->correlation_id);
            ++s.by_correlation;
            continue;
          }
          ++s.dangling_correlations;
          t.anomalies.add(anomaly::dangling_correlation);
        }
        if (Policy::use_external_id && d->external_id != 0) {
          if (const event_index op = find(ops, d->external_id); op != no_event) {
            place(idx, op, parent_link::external_id, d->external_id);
            ++s.by_external_id;
            continue;
          }
        }
        ++s.unlinked;
      }
      if constexpr (Policy::inherit_thread) detail::inherit_device_threads(t, candidates);
    }
    return s;
  }
};

/// Places device activities and runtime calls under what launched them (see the header).
inline constexpr link_device_activities_fn link_device_activities{};

TRACEMODEL_END_NAMESPACE
