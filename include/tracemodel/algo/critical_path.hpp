// tracemodel/algo — what bounds a stretch of a trace: the dependency graph of its host ops,
// launch calls and device work, and its longest path.
//
//   const tracemodel::critical_path cp = tracemodel::critical_path_of(table);      // whole trace
//   const auto step = tracemodel::critical_path_of(table, {.annotation = "ProfilerStep"});
//   for (const auto& [cause, ns] : cp.bound_by) ...   // cpu_bound, gpu_compute_bound, ...
//
// The exact rules (nanoseconds as stated). The window: the `instance`-th event (0-based, in
// table order) whose name contains `annotation`, or the whole trace when `annotation` is empty.
// Nodes: the start and the end of every host op and launch call (runtime or driver, any API)
// that starts in the window, and of the device work that those calls launched (`device_view`).
// Edges, each weighted by the time from its source to its destination unless said otherwise:
//  - per thread (pid and tid), along the nesting of its host events (user annotations nest the
//  others but
//    are not nodes): into an event's start from the node before it, out of its end to the node
//    after it (`operator`), and between two top-level events of a thread `dependency` (weight 0);
//  - per device and stream, each piece of work's start to its end (`operator`); into its start
//    from its launching call's start when the stream was idle when the call started
//    (`kernel_launch_delay`), else from the end of the work before it on the stream
//    (`kernel_kernel_delay`);
//  - a synchronization record (`cuda_sync` named `... Sync`: context, stream or event) ties the
//    end of the last work that ended before it (on its stream; for a context sync, or a record
//    without a stream, on its device) to the end of the call that waited (`sync_dependency`,
//    weight 0), whose own time is then no host time. A stream's wait for an event holds no host.
// Nodes are numbered in time order (then by event, a start before its end). The longest path is
// found over a topological order of the graph (an edge at one instant may go to a lower number):
// no recursion; a cycle, which only events of one instant could make, is reported.
// Each edge on the path is charged to a cause: an `operator` edge to its event (a host event
// `cpu_bound`, device work `gpu_communication_bound` when the classifier names it
// communication, else `gpu_compute_bound`); launch and kernel-to-kernel edges to
// `gpu_kernel_launch_overhead` and `gpu_kernel_kernel_overhead`; dependency and sync edges to
// nothing.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <queue>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tracemodel/algo/device_time.hpp"
#include "tracemodel/config.hpp"
#include "tracemodel/detail/flat_map.hpp"
#include "tracemodel/model/table.hpp"

TRACEMODEL_BEGIN_NAMESPACE

enum class cp_edge_type : std::uint8_t {
  operator_kernel,
  dependency,
  kernel_launch_delay,
  kernel_kernel_delay,
  sync_dependency
};
/// HTA's names of the edge types.
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

struct critical_path_options {
  std::string annotation;  ///< a part of the window's event name; empty: the whole trace
  std::size_t instance = 0;
  kernel_classifier classifier{};
};

struct critical_path {
  std::vector<cp_node> nodes;  ///< in time order (ts, then starts before ends, then event)
  std::vector<cp_edge> edges;
  std::vector<std::uint32_t> path;               ///< the critical edges, in order
  std::vector<event_index> events;               ///< the events on the path, each once, in order
  std::int64_t length = 0;                       ///< ns
  std::map<std::string, std::int64_t> bound_by;  ///< ns per cause
  bool acyclic = true;  ///< else the nodes on a cycle (at one instant) are left out of the path
  std::optional<std::pair<std::int64_t, std::int64_t>> window;  ///< [start, end) ns
};

namespace detail {
/// An integer argument of an event (as HTA's columns of `args` read one), or `otherwise`.
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

/// The longest path of a graph over `nodes` nodes: the edges on it, in order, taking the nodes
/// in a topological order (Kahn's, the lowest id first among the ready ones); negative weights
/// count as 0; ties go to the edge met first. Nodes on a cycle are left out, and `*acyclic`
/// says whether there was one.
inline std::vector<std::uint32_t> longest_path(std::size_t nodes, const std::vector<cp_edge>& edges,
                                               std::int64_t* length, bool* acyclic) {
  constexpr std::uint32_t none = ~std::uint32_t{0};
  // Each node's outgoing edges, in the order given: offsets into one array.
  std::vector<std::uint32_t> first(nodes + 1, 0), out(edges.size());
  std::vector<std::uint32_t> pending(nodes, 0);
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
  std::vector<std::int64_t> best(nodes, 0);
  std::vector<std::uint32_t> via(nodes, none);
  std::size_t done = 0;
  std::uint32_t end = none;
  while (!ready.empty()) {
    const std::uint32_t u = ready.top();
    ready.pop();
    ++done;
    if (end == none || best[u] > best[end]) end = u;
    for (std::uint32_t j = first[u]; j < first[u + 1]; ++j) {
      const std::uint32_t k = out[j];
      const std::uint32_t w = edges[k].to;
      const std::int64_t d = best[u] + std::max<std::int64_t>(0, edges[k].weight);
      if (via[w] == none || d > best[w]) {
        best[w] = d;
        via[w] = k;
      }
      if (--pending[w] == 0) ready.push(w);
    }
  }
  *acyclic = done == nodes;
  *length = end == none ? 0 : best[end];
  std::vector<std::uint32_t> path;
  for (std::uint32_t v = end; v != none && via[v] != none; v = edges[via[v]].from)
    path.push_back(via[v]);
  std::reverse(path.begin(), path.end());
  return path;
}
}  // namespace detail

/// The critical path of `t` (see above).
template <class Schema>
[[nodiscard]] critical_path critical_path_of(const basic_event_table<Schema>& t,
                                             const critical_path_options& o = {}) {
  critical_path cp;
  std::int64_t from = std::numeric_limits<std::int64_t>::min();
  std::int64_t to = std::numeric_limits<std::int64_t>::max();
  if (!o.annotation.empty()) {
    std::size_t seen = 0;
    for (const auto& e : t.events) {
      if (t.name(e).find(o.annotation) == std::string_view::npos || e.end_ns() == no_end_ns)
        continue;
      if (seen++ == o.instance) {
        from = e.start_ns;
        to = e.end_ns();
        cp.window.emplace(from, to);
        break;
      }
    }
    if (!cp.window) return cp;  // no such instance: an empty graph
  }
  auto inside = [&](std::int64_t ts) { return from <= ts && ts <= to; };
  const device_view v(t, o.classifier);

  // The events that are nodes, and their host nesting per thread.
  struct item {
    event_index event;
    std::int64_t start, end;
    bool node;  // else a user annotation: nests, is no node
  };
  std::map<std::pair<std::uint64_t, thread_key>, std::vector<item>> threads;  // by (pid, tid)
  std::vector<event_index> node_events;
  for (event_index i = 0; i < t.size(); ++i) {
    const auto& e = t.events[i];
    const std::int64_t end = e.end_ns();
    if (e.instant_scope != 0 || end == no_end_ns || !inside(e.start_ns)) continue;
    const activity_type a = t.activity(e);
    const auto* d = e.template get_if<event_kind::device_activity>();
    const bool call = d != nullptr && d->stream < 0 && is_launch_call(a);
    if (a == activity_type::cpu_op || call) {
      threads[{static_cast<std::uint64_t>(e.pid), e.tid}].push_back({i, e.start_ns, end, true});
      node_events.push_back(i);
    } else if (a == activity_type::user_annotation) {
      threads[{static_cast<std::uint64_t>(e.pid), e.tid}].push_back({i, e.start_ns, end, false});
    }
  }
  std::vector<bool> host_node(t.size(), false);  // events of the window that are host nodes
  for (const event_index i : node_events) host_node[i] = true;
  std::vector<const device_work*> work;
  for (const device_work& w : v.work)
    if (is_queued_work(w.activity) && w.call != no_event && host_node[w.call]) {
      work.push_back(&w);
      node_events.push_back(w.event);
    }

  // Nodes in time order.
  for (const event_index i : node_events) {
    const auto& e = t.events[i];
    cp.nodes.push_back({i, e.start_ns, true});
    cp.nodes.push_back({i, e.end_ns(), false});
  }
  std::stable_sort(cp.nodes.begin(), cp.nodes.end(), [](const cp_node& a, const cp_node& b) {
    if (a.ts != b.ts) return a.ts < b.ts;
    if (a.event != b.event) return a.event < b.event;
    return a.start && !b.start;
  });
  std::vector<std::uint32_t> start_of(t.size()), end_of(t.size());  // node ids by event
  for (std::uint32_t k = 0; k < cp.nodes.size(); ++k)
    (cp.nodes[k].start ? start_of : end_of)[cp.nodes[k].event] = k;
  auto start_node = [&](event_index i) { return start_of[i]; };
  auto end_node = [&](event_index i) { return end_of[i]; };
  auto add = [&](std::uint32_t a, std::uint32_t b, cp_edge_type type, event_index charged) {
    const bool timed = type != cp_edge_type::dependency && type != cp_edge_type::sync_dependency;
    cp.edges.push_back({a, b, timed ? cp.nodes[b].ts - cp.nodes[a].ts : 0, type, charged});
  };

  // The host's waits: context, stream and event syncs, each with the call that waited; and the
  // streams' waits for events. An event is the work launched last to its stream before its
  // record call (`cudaEventRecord`, named by the sync record's `wait_on_cuda_event_record_corr_id`
  // and `wait_on_stream`).
  struct host_sync {
    event_index call;
    std::int64_t end, stream;
    std::int32_t device;
    bool any_stream;
    const device_work* recorded;  // for an event sync, the work it waited for (if known)
  };
  struct stream_wait {
    const device_work *recorded, *next;  // the waiting stream's next work after the wait call
  };
  std::vector<host_sync> syncs;
  std::vector<stream_wait> stream_waits;
  {
    detail::flat_map<event_index> call_of(v.calls.size());
    for (const launch_call& c : v.calls) call_of.insert_or_assign(c.correlation, c.event);
    // Each stream's work in launch order, and the record calls' times by correlation id.
    std::map<std::pair<std::int32_t, std::int64_t>, std::vector<const device_work*>> launched;
    for (const device_work& w : v.work)
      if (is_queued_work(w.activity) && w.call != no_event)
        launched[{w.device, w.stream}].push_back(&w);
    for (auto& [key, list] : launched)
      std::stable_sort(list.begin(), list.end(), [](const device_work* a, const device_work* b) {
        return a->launched < b->launched;
      });
    std::unordered_map<std::uint64_t, std::int64_t> recorded_at, called_at;
    name_id stream_key{}, record_key{};
    const bool wait_args = t.strings.find("wait_on_stream", stream_key) &&
                           t.strings.find("wait_on_cuda_event_record_corr_id", record_key);
    for (const auto& e : t.events) {
      const auto* d = e.template get_if<event_kind::device_activity>();
      if (d == nullptr || d->correlation_id == 0 || d->stream >= 0) continue;
      called_at.try_emplace(d->correlation_id, e.start_ns);
      const std::string_view n = t.strings.view(d->name);
      if (n == "cudaEventRecord" || n == "hipEventRecord")
        recorded_at.try_emplace(d->correlation_id, e.start_ns);
    }
    // The last work launched to (device, stream) at or before `ts`; the first at or after it.
    auto last_before = [&](std::int32_t device, std::int64_t stream,
                           std::int64_t ts) -> const device_work* {
      const auto it = launched.find({device, stream});
      if (it == launched.end()) return nullptr;
      const auto p =
          std::upper_bound(it->second.begin(), it->second.end(), ts,
                           [](std::int64_t x, const device_work* w) { return x < w->launched; });
      return p == it->second.begin() ? nullptr : *(p - 1);
    };
    auto first_after = [&](std::int32_t device, std::int64_t stream,
                           std::int64_t ts) -> const device_work* {
      const auto it = launched.find({device, stream});
      if (it == launched.end()) return nullptr;
      const auto p =
          std::lower_bound(it->second.begin(), it->second.end(), ts,
                           [](const device_work* w, std::int64_t x) { return w->launched < x; });
      return p == it->second.end() ? nullptr : *p;
    };
    for (event_index i = 0; i < t.size(); ++i) {
      const auto& e = t.events[i];
      const auto* d = e.template get_if<event_kind::device_activity>();
      if (d == nullptr || d->activity != activity_type::cuda_sync || d->correlation_id == 0 ||
          e.instant_scope != 0)
        continue;
      const std::string_view n = t.strings.view(d->name);
      const device_work* recorded = nullptr;
      if (wait_args) {
        const std::int64_t record = detail::int_arg(t, i, record_key, -1);
        const std::int64_t on = detail::int_arg(t, i, stream_key, -1);
        const auto at = recorded_at.find(static_cast<std::uint64_t>(record));
        if (record > 0 && on >= 0 && at != recorded_at.end())
          recorded = last_before(d->device, on, at->second);
      }
      if (n == "Stream Wait Event") {
        const auto call = called_at.find(d->correlation_id);
        const device_work* next =
            call == called_at.end() ? nullptr : first_after(d->device, d->stream, call->second);
        if (recorded != nullptr && next != nullptr && next != recorded)
          stream_waits.push_back({recorded, next});
        continue;
      }
      if (!n.ends_with("Sync")) continue;
      const event_index* c = call_of.find(d->correlation_id);
      if (c == nullptr || !host_node[*c]) continue;
      syncs.push_back({*c, d->end_ns, d->stream, d->device,
                       n.starts_with("Context") || d->stream < 0, recorded});
    }
  }
  std::vector<bool> waits(t.size(), false);  // calls whose time a sync explains
  for (const host_sync& s : syncs) waits[s.call] = true;

  // Host: along each thread's nesting.
  for (auto& [tid, items] : threads) {
    std::stable_sort(items.begin(), items.end(), [](const item& a, const item& b) {
      return a.start != b.start ? a.start < b.start : a.end > b.end;
    });
    std::vector<const item*> open;  // the enclosing events
    std::optional<std::uint32_t> last;
    event_index last_event = no_event;
    int depth = 0;  // open node events
    auto close_until = [&](std::int64_t ts) {
      while (!open.empty() && open.back()->end <= ts) {
        const item* x = open.back();
        open.pop_back();
        if (!x->node) continue;
        --depth;
        const std::uint32_t e = end_node(x->event);
        if (last) {
          add(*last, e, cp_edge_type::operator_kernel, x->event);
          if (waits[x->event]) cp.edges.back().weight = 0;  // explained by its sync edge
        }
        last = e;
        last_event = x->event;
      }
    };
    for (const item& x : items) {
      close_until(x.start);
      if (x.node) {
        const std::uint32_t s = start_node(x.event);
        if (last) {
          if (depth == 0) {
            add(*last, s, cp_edge_type::dependency, no_event);
          } else {
            event_index parent = no_event;  // the gap belongs to the enclosing node event
            for (auto it = open.rbegin(); it != open.rend(); ++it)
              if ((*it)->node) {
                parent = (*it)->event;
                break;
              }
            add(*last, s, cp_edge_type::operator_kernel,
                cp.nodes[*last].start ? last_event : parent);
          }
        }
        last = s;
        last_event = x.event;
        ++depth;
      }
      open.push_back(&x);
    }
    close_until(std::numeric_limits<std::int64_t>::max());
  }

  // Device: per stream, in start order.
  std::stable_sort(work.begin(), work.end(),
                   [](const device_work* a, const device_work* b) { return a->start < b->start; });
  std::map<std::pair<std::int32_t, std::int64_t>, const device_work*> previous;
  for (const device_work* w : work) {
    add(start_node(w->event), end_node(w->event), cp_edge_type::operator_kernel, w->event);
    const device_work*& p = previous[{w->device, w->stream}];
    if (p == nullptr || p->end <= w->launched)
      add(start_node(w->call), start_node(w->event), cp_edge_type::kernel_launch_delay, no_event);
    else
      add(end_node(p->event), start_node(w->event), cp_edge_type::kernel_kernel_delay, w->event);
    p = w;
  }

  // Synchronization: the work an event sync waited for (else the last work to end before the
  // sync ended) to the waiting call's end; a stream's wait, from the recorded work's end to the
  // start of the work the stream ran next.
  for (const host_sync& s : syncs) {
    const device_work* src = s.recorded;
    if (src == nullptr)
      for (const device_work* w : work)  // (few syncs in a window)
        if (w->end <= s.end && (s.device < 0 || w->device == s.device) &&
            (s.any_stream || w->stream == s.stream) && (src == nullptr || w->end > src->end))
          src = w;
    if (src != nullptr && host_node[src->call])
      add(end_node(src->event), end_node(s.call), cp_edge_type::sync_dependency, no_event);
  }
  for (const stream_wait& w : stream_waits)
    if (host_node[w.recorded->call] && host_node[w.next->call])
      add(end_node(w.recorded->event), start_node(w.next->event), cp_edge_type::sync_dependency,
          no_event);

  // The longest path and its causes.
  cp.path = detail::longest_path(cp.nodes.size(), cp.edges, &cp.length, &cp.acyclic);
  std::vector<bool> seen(t.size(), false);
  cp.bound_by[""] = 0;  // dependency and sync edges: charged to nothing (HTA lists it too)
  for (const std::uint32_t k : cp.path) {
    const cp_edge& e = cp.edges[k];
    for (const std::uint32_t n : {e.from, e.to})
      if (!seen[cp.nodes[n].event]) {
        seen[cp.nodes[n].event] = true;
        cp.events.push_back(cp.nodes[n].event);
      }
    std::string cause;
    switch (e.type) {
      case cp_edge_type::kernel_launch_delay:
        cause = "gpu_kernel_launch_overhead";
        break;
      case cp_edge_type::kernel_kernel_delay:
        cause = "gpu_kernel_kernel_overhead";
        break;
      case cp_edge_type::operator_kernel: {
        const auto* d = e.charged == no_event
                            ? nullptr
                            : t.events[e.charged].template get_if<event_kind::device_activity>();
        if (d == nullptr || d->stream < 0)
          cause = "cpu_bound";
        else if (o.classifier.communication(t.strings.view(d->name)))
          cause = "gpu_communication_bound";
        else
          cause = "gpu_compute_bound";
        break;
      }
      default:
        break;
    }
    cp.bound_by[cause] += std::max<std::int64_t>(0, e.weight);
  }
  return cp;
}

/// The exact rules as a policy (`critical_path_of(t, o, policy)`; HTA's: hta_critical_path.hpp).
struct exact_critical_path {
  template <class Schema>
  [[nodiscard]] critical_path operator()(const basic_event_table<Schema>& t,
                                         const critical_path_options& o = {}) const {
    return critical_path_of(t, o);
  }
};

/// The critical path of `t` by `policy`'s rules.
template <class Schema, class Policy>
[[nodiscard]] critical_path critical_path_of(const basic_event_table<Schema>& t,
                                             const critical_path_options& o, const Policy& policy) {
  return policy(t, o);
}

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
