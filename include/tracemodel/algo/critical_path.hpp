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
//    others but are not nodes): into an event's start from the node before it, out of its end to
//    the node after it (`operator`), and between two top-level events of a thread `dependency`
//    (weight 0);
//  - per device and stream, each piece of work's start to its end (`operator`); into its start
//    from its launching call's start when the stream was idle when the call started
//    (`kernel_launch_delay`), else from the end of the work before it on the stream
//    (`kernel_kernel_delay`);
//  - a synchronization record (`cuda_sync` named `... Sync`: context, stream or event) ties the
//    end of the last work that ended before it (on its stream; for a context sync, or a record
//    without a stream, on its device) to the end of the call that waited (`sync_dependency`,
//    weight 0), whose own time is then no host time. A stream's wait for an event holds no host.
// Nodes are numbered in time order (then by event, a start before its end). The longest path is
// found over a topological order of the graph, the lowest node first among those ready (an edge
// at one instant may go to a lower number; critical_path_graph.hpp): no recursion; a cycle,
// which only events of one instant could make, is reported.
// Each edge on the path is charged to a cause: an `operator` edge to its event (a host event
// `cpu_bound`, device work `gpu_communication_bound` when the classifier names it
// communication, else `gpu_compute_bound`); launch and kernel-to-kernel edges to
// `gpu_kernel_launch_overhead` and `gpu_kernel_kernel_overhead`; dependency and sync edges to
// nothing.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tracemodel/algo/critical_path_graph.hpp"
#include "tracemodel/algo/device_time.hpp"
#include "tracemodel/config.hpp"
#include "tracemodel/detail/flat_map.hpp"
#include "tracemodel/model/table.hpp"

TRACEMODEL_BEGIN_NAMESPACE

struct critical_path_options {
  std::string annotation{};  ///< a part of the window's event name; empty: the whole trace
  std::size_t instance = 0;
  kernel_classifier classifier{};
};

namespace detail {

/// The exact rules' graph of one table, built step by step (see the header comment).
template <class Schema>
class exact_cp_graph {
 public:
  exact_cp_graph(const basic_event_table<Schema>& t, const critical_path_options& o,
                 critical_path& cp)
      : t_(t), o_(o), cp_(cp), v_(t, o.classifier) {}

  /// False when the window's event is not there (the graph stays empty).
  bool build() {
    if (!find_window()) return false;
    collect_nodes();
    number_nodes();
    find_syncs();
    host_edges();
    device_edges();
    sync_edges();
    return true;
  }

 private:
  struct item {
    event_index event;
    std::int64_t start, end;
    bool node;  // else a user annotation: nests, is no node
  };
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
  using stream_key = std::pair<std::int32_t, std::int64_t>;

  bool find_window() {
    if (o_.annotation.empty()) return true;
    std::size_t seen = 0;
    for (const auto& e : t_.events) {
      if (t_.name(e).find(o_.annotation) == std::string_view::npos || e.end_ns() == no_end_ns)
        continue;
      if (seen++ == o_.instance) {
        from_ = e.start_ns;
        to_ = e.end_ns();
        cp_.window.emplace(from_, to_);
        return true;
      }
    }
    return false;
  }

  /// The events that are nodes, and their host nesting per thread.
  void collect_nodes() {
    for (event_index i = 0; i < t_.size(); ++i) {
      const auto& e = t_.events[i];
      const std::int64_t end = e.end_ns();
      if (e.instant_scope != 0 || end == no_end_ns || e.start_ns < from_ || e.start_ns > to_)
        continue;
      const activity_type a = t_.activity(e);
      const auto* d = e.template get_if<event_kind::device_activity>();
      const bool call = d != nullptr && d->stream < 0 && is_launch_call(a);
      const std::pair<std::uint64_t, thread_key> thread{static_cast<std::uint64_t>(e.pid), e.tid};
      if (a == activity_type::cpu_op || call) {
        threads_[thread].push_back({i, e.start_ns, end, true});
        node_events_.push_back(i);
      } else if (a == activity_type::user_annotation) {
        threads_[thread].push_back({i, e.start_ns, end, false});
      }
    }
    host_node_.assign(t_.size(), false);
    for (const event_index i : node_events_) host_node_[i] = true;
    for (const device_work& w : v_.work)
      if (is_queued_work(w.activity) && w.call != no_event && host_node_[w.call]) {
        work_.push_back(&w);
        node_events_.push_back(w.event);
      }
  }

  /// Nodes in time order (then by event, a start before its end).
  void number_nodes() {
    for (const event_index i : node_events_) {
      const auto& e = t_.events[i];
      cp_.nodes.push_back({i, e.start_ns, true});
      cp_.nodes.push_back({i, e.end_ns(), false});
    }
    std::stable_sort(cp_.nodes.begin(), cp_.nodes.end(), [](const cp_node& a, const cp_node& b) {
      if (a.ts != b.ts) return a.ts < b.ts;
      if (a.event != b.event) return a.event < b.event;
      return a.start && !b.start;
    });
    start_of_.resize(t_.size());
    end_of_.resize(t_.size());
    for (std::uint32_t k = 0; k < cp_.nodes.size(); ++k)
      (cp_.nodes[k].start ? start_of_ : end_of_)[cp_.nodes[k].event] = k;
  }

  void add(std::uint32_t a, std::uint32_t b, cp_edge_type type, event_index charged) {
    const bool timed = type != cp_edge_type::dependency && type != cp_edge_type::sync_dependency;
    cp_.edges.push_back({a, b, timed ? cp_.nodes[b].ts - cp_.nodes[a].ts : 0, type, charged});
  }

  /// The host's waits: context, stream and event syncs, each with the call that waited; and the
  /// streams' waits for events. An event is the work launched last to its stream before its
  /// record call (`cudaEventRecord`, named by the sync record's
  /// `wait_on_cuda_event_record_corr_id` and `wait_on_stream`).
  void find_syncs() {
    detail::flat_map<event_index> call_of(v_.calls.size());
    for (const launch_call& c : v_.calls) call_of.insert_or_assign(c.correlation, c.event);
    // Each stream's work in launch order, and the record calls' times by correlation id.
    for (const device_work& w : v_.work)
      if (is_queued_work(w.activity) && w.call != no_event)
        launched_[{w.device, w.stream}].push_back(&w);
    for (auto& [key, list] : launched_)
      std::stable_sort(list.begin(), list.end(), [](const device_work* a, const device_work* b) {
        return a->launched < b->launched;
      });
    std::unordered_map<std::uint64_t, std::int64_t> recorded_at, called_at;
    name_id on_stream_key{}, record_key{};
    const bool wait_args = t_.strings.find("wait_on_stream", on_stream_key) &&
                           t_.strings.find("wait_on_cuda_event_record_corr_id", record_key);
    for (const auto& e : t_.events) {
      const auto* d = e.template get_if<event_kind::device_activity>();
      if (d == nullptr || d->correlation_id == 0 || d->stream >= 0) continue;
      called_at.try_emplace(d->correlation_id, e.start_ns);
      const std::string_view n = t_.strings.view(d->name);
      if (n == "cudaEventRecord" || n == "hipEventRecord")
        recorded_at.try_emplace(d->correlation_id, e.start_ns);
    }
    for (event_index i = 0; i < t_.size(); ++i) {
      const auto& e = t_.events[i];
      const auto* d = e.template get_if<event_kind::device_activity>();
      if (d == nullptr || d->activity != activity_type::cuda_sync || d->correlation_id == 0 ||
          e.instant_scope != 0)
        continue;
      const std::string_view n = t_.strings.view(d->name);
      const device_work* recorded = nullptr;
      if (wait_args) {
        const std::int64_t record = detail::int_arg(t_, i, record_key, -1);
        const std::int64_t on = detail::int_arg(t_, i, on_stream_key, -1);
        const auto at = recorded_at.find(static_cast<std::uint64_t>(record));
        if (record > 0 && on >= 0 && at != recorded_at.end())
          recorded = last_before(d->device, on, at->second);
      }
      if (n == "Stream Wait Event") {
        const auto call = called_at.find(d->correlation_id);
        const device_work* next =
            call == called_at.end() ? nullptr : first_after(d->device, d->stream, call->second);
        if (recorded != nullptr && next != nullptr && next != recorded)
          stream_waits_.push_back({recorded, next});
        continue;
      }
      if (!n.ends_with("Sync")) continue;
      const event_index* c = call_of.find(d->correlation_id);
      if (c == nullptr || !host_node_[*c]) continue;
      syncs_.push_back({*c, d->end_ns, d->stream, d->device,
                        n.starts_with("Context") || d->stream < 0, recorded});
    }
    waits_.assign(t_.size(), false);
    for (const host_sync& s : syncs_) waits_[s.call] = true;
  }
  /// The last work launched to (device, stream) at or before `ts`.
  const device_work* last_before(std::int32_t device, std::int64_t stream, std::int64_t ts) const {
    const auto it = launched_.find({device, stream});
    if (it == launched_.end()) return nullptr;
    const auto p =
        std::upper_bound(it->second.begin(), it->second.end(), ts,
                         [](std::int64_t x, const device_work* w) { return x < w->launched; });
    return p == it->second.begin() ? nullptr : *(p - 1);
  }
  /// The first work launched to (device, stream) at or after `ts`.
  const device_work* first_after(std::int32_t device, std::int64_t stream, std::int64_t ts) const {
    const auto it = launched_.find({device, stream});
    if (it == launched_.end()) return nullptr;
    const auto p =
        std::lower_bound(it->second.begin(), it->second.end(), ts,
                         [](const device_work* w, std::int64_t x) { return w->launched < x; });
    return p == it->second.end() ? nullptr : *p;
  }

  /// Host: along each thread's nesting.
  void host_edges() {
    for (auto& [tid, items] : threads_) {
      std::stable_sort(items.begin(), items.end(), [](const item& a, const item& b) {
        return a.start != b.start ? a.start < b.start : a.end > b.end;
      });
      thread_walk walk{*this};
      for (const item& x : items) {
        walk.close_until(x.start);
        walk.open_item(x);
      }
      walk.close_until(std::numeric_limits<std::int64_t>::max());
    }
  }
  /// One thread's walk: the events open, the last node, and how many node events are open.
  struct thread_walk {
    exact_cp_graph& g;
    std::vector<const item*> open{};  // the enclosing events
    static constexpr std::uint32_t none = ~std::uint32_t{0};
    std::uint32_t last = none;  // the last node (a sentinel, not an optional: g++ 12 at -O2
                                // warned of an optional read uninitialized)
    event_index last_event = no_event;
    int depth = 0;

    void close_until(std::int64_t ts) {
      while (!open.empty() && open.back()->end <= ts) {
        const item* x = open.back();
        open.pop_back();
        if (!x->node) continue;
        --depth;
        const std::uint32_t e = g.end_of_[x->event];
        if (last != none) {
          g.add(last, e, cp_edge_type::operator_kernel, x->event);
          if (g.waits_[x->event]) g.cp_.edges.back().weight = 0;  // explained by its sync edge
        }
        last = e;
        last_event = x->event;
      }
    }
    void open_item(const item& x) {
      if (x.node) {
        const std::uint32_t s = g.start_of_[x.event];
        if (last != none) {
          if (depth == 0) {
            g.add(last, s, cp_edge_type::dependency, no_event);
          } else {
            event_index parent = no_event;  // the gap belongs to the enclosing node event
            for (auto it = open.rbegin(); it != open.rend(); ++it)
              if ((*it)->node) {
                parent = (*it)->event;
                break;
              }
            g.add(last, s, cp_edge_type::operator_kernel,
                  g.cp_.nodes[last].start ? last_event : parent);
          }
        }
        last = s;
        last_event = x.event;
        ++depth;
      }
      open.push_back(&x);
    }
  };

  /// Device: per stream, in start order.
  void device_edges() {
    std::stable_sort(work_.begin(), work_.end(), [](const device_work* a, const device_work* b) {
      return a->start < b->start;
    });
    std::map<stream_key, const device_work*> previous;
    for (const device_work* w : work_) {
      add(start_of_[w->event], end_of_[w->event], cp_edge_type::operator_kernel, w->event);
      const device_work*& p = previous[{w->device, w->stream}];
      if (p == nullptr || p->end <= w->launched)
        add(start_of_[w->call], start_of_[w->event], cp_edge_type::kernel_launch_delay, no_event);
      else
        add(end_of_[p->event], start_of_[w->event], cp_edge_type::kernel_kernel_delay, w->event);
      p = w;
    }
  }

  /// Synchronization: the work an event sync waited for (else the last work to end before the
  /// sync ended) to the waiting call's end; a stream's wait, from the recorded work's end to the
  /// start of the work the stream ran next.
  void sync_edges() {
    for (const host_sync& s : syncs_) {
      const device_work* src = s.recorded;
      if (src == nullptr)
        for (const device_work* w : work_)  // (few syncs in a window)
          if (w->end <= s.end && (s.device < 0 || w->device == s.device) &&
              (s.any_stream || w->stream == s.stream) && (src == nullptr || w->end > src->end))
            src = w;
      if (src != nullptr && host_node_[src->call])
        add(end_of_[src->event], end_of_[s.call], cp_edge_type::sync_dependency, no_event);
    }
    for (const stream_wait& w : stream_waits_)
      if (host_node_[w.recorded->call] && host_node_[w.next->call])
        add(end_of_[w.recorded->event], start_of_[w.next->event], cp_edge_type::sync_dependency,
            no_event);
  }

  const basic_event_table<Schema>& t_;
  const critical_path_options& o_;
  critical_path& cp_;
  const device_view v_;
  std::int64_t from_ = std::numeric_limits<std::int64_t>::min();
  std::int64_t to_ = std::numeric_limits<std::int64_t>::max();
  std::map<std::pair<std::uint64_t, thread_key>, std::vector<item>> threads_;  // by (pid, tid)
  std::vector<event_index> node_events_;
  std::vector<bool> host_node_;  // events of the window that are host nodes
  std::vector<const device_work*> work_;
  std::vector<std::uint32_t> start_of_, end_of_;  // node ids by event
  std::map<stream_key, std::vector<const device_work*>> launched_;
  std::vector<host_sync> syncs_;
  std::vector<stream_wait> stream_waits_;
  std::vector<bool> waits_;  // calls whose time a sync explains
};

}  // namespace detail

/// The critical path of `t` (see above).
template <class Schema>
[[nodiscard]] critical_path critical_path_of(const basic_event_table<Schema>& t,
                                             const critical_path_options& o = {}) {
  critical_path cp;
  if (!detail::exact_cp_graph<Schema>(t, o, cp).build()) return cp;  // no such window
  const detail::topological_order order = detail::lowest_first_order(cp.nodes.size(), cp.edges);
  cp.acyclic = order.acyclic;
  cp.path = detail::longest_path(order.nodes, cp.nodes.size(), cp.edges,
                                 detail::tie_edge::by_source_order, &cp.length);
  detail::charge_path(
      cp, t.size(),
      [&](const cp_edge& e) {
        return detail::cause_by_type(e, [&](const cp_edge& op) -> std::size_t {
          const auto* d = op.charged == no_event
                              ? nullptr
                              : t.events[op.charged].template get_if<event_kind::device_activity>();
          if (d == nullptr || d->stream < 0) return 1;                         // cpu_bound
          return o.classifier.communication(t.strings.view(d->name)) ? 3 : 2;  // gpu_...
        });
      },
      /*clamp=*/true);
  return cp;
}

TRACEMODEL_END_NAMESPACE
