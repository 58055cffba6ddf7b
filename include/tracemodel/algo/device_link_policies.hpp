// tracemodel/algo — the host/device linker's policies and what it returns (algo/flows.hpp says
// what the linker does).
#pragma once

#include <cstddef>

#include "tracemodel/algo/concepts.hpp"
#include "tracemodel/config.hpp"
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

TRACEMODEL_END_NAMESPACE
