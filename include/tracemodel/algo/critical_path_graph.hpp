// tracemodel/algo — what every critical path shares, whatever rules built its graph: the graph's
// nodes and edges, its longest path, and the time of the path charged to causes.
//
//   critical_path cp;                            // nodes and edges, by some rules
//   auto order = tracemodel::detail::lowest_first_order(cp.nodes.size(), cp.edges);
//   cp.path = tracemodel::detail::longest_path(order.nodes, cp.nodes.size(), cp.edges, ...);
//   tracemodel::detail::charge_path(cp, cause_of, /*clamp=*/true);
//
// The longest path is taken over a topological order of the nodes: each node's best incoming
// edge is the first of the longest in an order of its incoming edges that the caller chooses
// (negative weights count as 0 on the path), and the path ends at the first node of the longest
// distance in the topological order. No recursion.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <queue>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tracemodel/algo/measure.hpp"
#include "tracemodel/config.hpp"
#include "tracemodel/model/table.hpp"

TRACEMODEL_BEGIN_NAMESPACE

enum class cp_edge_type : std::uint8_t {
  operator_kernel,
  dependency,
  kernel_launch_delay,
  kernel_kernel_delay,
  sync_dependency
};
/// The edge types' names, as the overlaid trace and the reports print them.
inline constexpr std::string_view cp_edge_type_names[] = {
    "critical_path_operator", "critical_path_dependency", "critical_path_kernel_launch_delay",
    "critical_path_kernel_kernel_delay", "critical_path_sync_dependency"};

struct cp_node {
  event_index event = no_event;
  std::int64_t ts = 0;  ///< ns
  bool start = true;
};

struct cp_edge {
  std::uint32_t from = 0, to = 0;  ///< node ids
  std::int64_t weight = 0;         ///< ns
  cp_edge_type type = cp_edge_type::operator_kernel;
  event_index charged = no_event;  ///< the event an operator edge's time belongs to
};

/// A critical path: the graph, its longest path, and what the path's time is spent on.
struct critical_path {
  row_list<cp_node> nodes;  ///< in time order
  row_list<cp_edge> edges;
  row_list<std::uint32_t> path;                  ///< the critical edges, in order
  row_list<event_index> events;                  ///< the events on the path, each once, in order
  std::int64_t length = 0;                       ///< ns
  std::map<std::string, std::int64_t> bound_by;  ///< ns per cause
  row_list<std::uint8_t> path_causes;  ///< per edge of `path`: its cause, an index of cp_causes
  bool acyclic = true;  ///< else the nodes on a cycle (at one instant) are left out of the path
  std::optional<std::pair<std::int64_t, std::int64_t>> window;  ///< [start, end) ns
};

/// What the time of a path's edge is spent on.
inline constexpr std::string_view cp_causes[] = {
    "",  // dependency and sync edges: charged to nothing
    "cpu_bound",
    "gpu_compute_bound",
    "gpu_communication_bound",
    "gpu_kernel_launch_overhead",
    "gpu_kernel_kernel_overhead"};

namespace detail {

/// A topological order of a graph's nodes, and whether every node is in it (else some are on
/// a cycle and left out).
struct topological_order {
  std::vector<std::uint32_t> nodes;
  bool acyclic = true;
};

/// Kahn's algorithm taking the lowest node id first among the ready ones.
inline topological_order lowest_first_order(std::size_t nodes, std::span<const cp_edge> edges) {
  std::vector<std::uint32_t> first(nodes + 1, 0), out(edges.size()), pending(nodes, 0);
  for (const cp_edge& e : edges) {
    ++first[e.from + 1];
    ++pending[e.to];
  }
  for (std::size_t v = 0; v < nodes; ++v) first[v + 1] += first[v];
  {
    std::vector<std::uint32_t> at(first.begin(), first.end() - 1);
    for (std::uint32_t k = 0; k < edges.size(); ++k) out[at[edges[k].from]++] = k;
  }
  std::priority_queue<std::uint32_t, std::vector<std::uint32_t>, std::greater<>> ready;
  for (std::uint32_t v = 0; v < nodes; ++v)
    if (pending[v] == 0) ready.push(v);
  topological_order o;
  o.nodes.reserve(nodes);
  while (!ready.empty()) {
    const std::uint32_t u = ready.top();
    ready.pop();
    o.nodes.push_back(u);
    for (std::uint32_t j = first[u]; j < first[u + 1]; ++j)
      if (--pending[edges[out[j]].to] == 0) ready.push(edges[out[j]].to);
  }
  o.acyclic = o.nodes.size() == nodes;
  return o;
}

/// Which incoming edge of a node wins a tie of distances: the first in the order of their
/// sources in the topological order (then of the edges), or the first in the edges' order.
enum class tie_edge : std::uint8_t { by_source_order, by_edge_order };

/// The longest path over `order` (see the header comment): the edges on it, in order, and its
/// length.
inline row_list<std::uint32_t> longest_path(const std::vector<std::uint32_t>& order,
                                            std::size_t nodes, std::span<const cp_edge> edges,
                                            tie_edge ties, std::int64_t* length) {
  constexpr std::uint32_t none = ~std::uint32_t{0};
  std::vector<std::uint32_t> rank(nodes, none);
  for (std::uint32_t k = 0; k < order.size(); ++k) rank[order[k]] = k;
  // Each node's incoming edges, in the tie order.
  std::vector<std::uint32_t> first(nodes + 1, 0), in(edges.size());
  for (const cp_edge& e : edges) ++first[e.to + 1];
  for (std::size_t v = 0; v < nodes; ++v) first[v + 1] += first[v];
  {
    std::vector<std::uint32_t> at(first.begin(), first.end() - 1);
    for (std::uint32_t k = 0; k < edges.size(); ++k) in[at[edges[k].to]++] = k;
  }
  if (ties == tie_edge::by_source_order)
    for (std::size_t v = 0; v < nodes; ++v)
      std::stable_sort(in.begin() + first[v], in.begin() + first[v + 1],
                       [&](std::uint32_t a, std::uint32_t b) {
                         return rank[edges[a].from] < rank[edges[b].from];
                       });
  std::vector<std::int64_t> best(nodes, 0);
  std::vector<std::uint32_t> via(nodes, none);
  std::uint32_t end = none;
  for (const std::uint32_t v : order) {
    for (std::uint32_t j = first[v]; j < first[v + 1]; ++j) {
      const cp_edge& e = edges[in[j]];
      if (rank[e.from] == none || rank[e.from] > rank[v]) continue;  // (a node not in order)
      const std::int64_t d = best[e.from] + std::max<std::int64_t>(0, e.weight);
      if (via[v] == none || d > best[v]) {
        best[v] = d;
        via[v] = in[j];
      }
    }
    if (end == none || best[v] > best[end]) end = v;
  }
  *length = end == none ? 0 : best[end];
  row_list<std::uint32_t> path;
  for (std::uint32_t v = end; v != none && via[v] != none; v = edges[via[v]].from)
    path.push_back(via[v]);
  std::reverse(path.begin(), path.end());
  return path;
}

/// The events on `cp.path`, each once, in order, each path edge's cause `cause_of(edge)` (an
/// index of `cp_causes`) in `cp.path_causes`, and `cp.bound_by`: each edge's weight added to its
/// cause, as it is or, with `clamp`, at least 0.
template <class CauseOf>
void charge_path(critical_path& cp, std::size_t table_size, CauseOf cause_of, bool clamp) {
  std::vector<unsigned char> seen(table_size, 0);
  cp.bound_by[""] = 0;  // listed whatever the path holds
  for (const std::uint32_t k : cp.path) {
    const cp_edge& e = cp.edges[k];
    for (const std::uint32_t n : {e.from, e.to})
      if (seen[cp.nodes[n].event] == 0) {
        seen[cp.nodes[n].event] = 1;
        cp.events.push_back(cp.nodes[n].event);
      }
    const std::size_t cause = cause_of(e);
    cp.path_causes.push_back(static_cast<std::uint8_t>(cause));
    cp.bound_by[std::string(cp_causes[cause])] +=
        clamp ? std::max<std::int64_t>(0, e.weight) : e.weight;
  }
}

/// An edge's cause by its type; an operator edge's is `operator_cause(edge)`.
template <class OperatorCause>
std::size_t cause_by_type(const cp_edge& e, OperatorCause operator_cause) {
  switch (e.type) {
    case cp_edge_type::kernel_launch_delay:
      return 4;
    case cp_edge_type::kernel_kernel_delay:
      return 5;
    case cp_edge_type::operator_kernel:
      return operator_cause(e);
    default:
      return 0;
  }
}

/// An integer argument of an event (a number of any type, cut to an integer), or `otherwise`.
template <class Table>
[[nodiscard]] std::int64_t int_arg(const Table& t, event_index i, name_id key,
                                   std::int64_t otherwise) {
  for (const attribute& a : t.attrs_of(t.events[i])) {
    if (a.key != key) continue;
    if (a.type == attr_type::integer) return a.i;
    if (a.type == attr_type::unsigned_integer) return static_cast<std::int64_t>(a.u);
    if (a.type == attr_type::floating) return static_cast<std::int64_t>(a.f);
  }
  return otherwise;
}

}  // namespace detail

/// The `k` events with the most time charged to them on the path (operator and kernel-to-kernel
/// edges), most first (ties by event), with that time (ns).
[[nodiscard]] inline std::vector<std::pair<event_index, std::int64_t>> top_events(
    const critical_path& cp, std::size_t k) {
  std::vector<std::pair<event_index, std::int64_t>> each;  // (event, time) of each edge
  for (const std::uint32_t e : cp.path)
    if (cp.edges[e].charged != no_event)
      each.emplace_back(cp.edges[e].charged, std::max<std::int64_t>(0, cp.edges[e].weight));
  std::sort(each.begin(), each.end());
  std::vector<std::pair<event_index, std::int64_t>> out;  // summed per event
  for (const auto& [i, ns] : each)
    if (!out.empty() && out.back().first == i)
      out.back().second += ns;
    else
      out.emplace_back(i, ns);
  std::stable_sort(out.begin(), out.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  if (out.size() > k) out.resize(k);
  return out;
}

TRACEMODEL_END_NAMESPACE
