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
// The rules are stated once, in the device linker (algo/detail/device_linker.hpp): this is a
// plain loop over it; `analyze` (algo/analyze.hpp) feeds it from inside the tree builder.
#pragma once

#include <cstdint>

#include "tracemodel/algo/concepts.hpp"
#include "tracemodel/algo/detail/device_linker.hpp"
#include "tracemodel/algo/device_link_policies.hpp"
#include "tracemodel/config.hpp"
#include "tracemodel/model/table.hpp"

TRACEMODEL_BEGIN_NAMESPACE

struct link_device_activities_fn {
  template <class Schema, class Policy = pytorch_device_links>
  device_link_stats operator()(basic_event_table<Schema>& t, Policy = {}) const {
    if constexpr (detail::check_device_link_policy<Policy>())
      return link<Policy>(t);
    else
      return {};
  }

 private:
  // Every row through the device linker in table order, then its second pass (the linker
  // that `analyze` feeds from inside the tree's replay: one statement of the rules).
  template <class Policy, class Schema>
  static device_link_stats link(basic_event_table<Schema>& t) {
    detail::scratch_vector<flow_link> links;
    const device_link_stats s = detail::link_devices_in_order<Schema, Policy>(t, links);
    t.links.insert(t.links.end(), links.begin(), links.end());
    return s;
  }
};

/// Places device activities and runtime calls under what launched them (see the header).
inline constexpr link_device_activities_fn link_device_activities{};

TRACEMODEL_END_NAMESPACE
