// tracemodel/algo — Holistic Trace Analysis's critical path, quirk for quirk (hta-analyses.md,
// section 11), as a policy of `critical_path_of`.
//
//   const auto cp = tracemodel::critical_path_of(table, {.annotation = "ProfilerStep",
//                                                        .instance = 1},
//                                                tracemodel::hta_critical_path{});
//
// On HTA's frame (`hta_frame`: microseconds, its last step dropped when the trace has two or
// more, its correlation partners), as HTA builds its graph:
//  - the window: the `instance`-th row of the frame (frame order) whose name contains the
//    annotation, from its start to its end; an empty annotation: the whole frame;
//  - the rows of the window: host rows (stream -1) that start in it and last more than 0, the
//    device rows that one of them launched, and every `Stream Wait Event`;
//  - nodes: the start and the end of its `cpu_op`, `cuda_runtime` and `cuda_driver` rows and of
//    its device rows that have a correlation, ordered by time, then by place in the file;
//  - the CUDA runtime lock: the calls named `cudaHostAlloc`, `cudaLaunchKernel` and
//    `cudaMemcpyAsync` on every thread, in node order: at a call's end, every start still
//    pending goes to that end (its own start as an `operator` edge, the others as
//    `dependency`), and the previous lock end, if the last lock node was one, too;
//  - per (pid, tid), the thread of the backward pass (the one thread with an `autograd` op or
//    annotation) merged into the forward pass's (the one with `forward`), HTA's old call stack
//    (ends pop whatever is open) walked depth first: an edge into each node event's start from
//    the node before it (`dependency` between top-level events, else `operator`), one out of
//    its end (weight 0 for a blocking sync call), except between two nodes of lock calls that
//    are not an end then a start; a thread with any stream above 0 or of mixed streams is none;
//  - device rows in start order (sync records by their end): each its `operator` edge; a
//    `Stream Wait Event` makes the next kernel launched to its stream from the waiting thread
//    wait for the last kernel launched to the event's stream before its `cudaEventRecord`
//    (`sync_dependency`); `Event Sync` ties that kernel's end, `Stream Sync` the stream's last
//    kernel and `Context Sync` every stream's last kernel, to the waiting call's end; a kernel
//    gets a `kernel_launch_delay` edge from its call's start when HTA's queue length was 1 at
//    the launch and 0 at its start and nothing before it on the stream (nor a kernel it waits
//    for) ended after the call started, else `kernel_kernel_delay` from the stream's last
//    kernel (streams by number alone) when what it waits for ended before that one, and the gap
//    is under `kernel_kernel_threshold_us`; with `zero_weight_launch_edges` (as HTA's tests run)
//    a launch edge of weight 0 otherwise;
//  - one edge per pair of nodes (a later edge replaces an earlier one, keeping its place);
//    negative weights count as 0 on the path, but in `bound_by` as they are;
//  - the longest path as networkx's `dag_longest_path` finds it, ties included.
// Times in the result are nanoseconds: HTA's microseconds times 1000 (node times from the
// trace's base time).
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tracemodel/algo/critical_path.hpp"
#include "tracemodel/algo/hta_frame.hpp"
#include "tracemodel/algo/kernel_class.hpp"
#include "tracemodel/algo/queue_length.hpp"
#include "tracemodel/config.hpp"
#include "tracemodel/model/table.hpp"

TRACEMODEL_BEGIN_NAMESPACE

namespace detail {
/// A directed graph kept as networkx's `DiGraph` keeps one: one edge per pair of nodes (adding
/// it again replaces its type and weight, and its event when the new one names one, in place),
/// the nodes in the order edges first named them.
struct nx_digraph {
  static constexpr std::uint32_t none = ~std::uint32_t{0};
  std::vector<cp_edge> edges;
  std::vector<std::uint32_t> order;
  std::vector<unsigned char> known;
  std::vector<std::uint32_t> first_out, next_out;  // each node's edges out, as a list

  explicit nx_digraph(std::size_t nodes) : known(nodes, 0), first_out(nodes, none) {}
  void add(const cp_edge& e) {
    for (const std::uint32_t v : {e.from, e.to})
      if (known[v] == 0) {
        known[v] = 1;
        order.push_back(v);
      }
    for (std::uint32_t k = first_out[e.from]; k != none; k = next_out[k]) {
      if (edges[k].to != e.to) continue;
      cp_edge& old = edges[k];
      old.type = e.type;
      old.weight = e.weight;
      if (e.charged != no_event) old.charged = e.charged;
      return;
    }
    next_out.push_back(first_out[e.from]);
    first_out[e.from] = static_cast<std::uint32_t>(edges.size());
    edges.push_back(e);
  }
};

/// networkx's `dag_longest_path` over `g` (negative weights as 0): nodes in the order of
/// `topological_sort` (generations of Kahn's algorithm, in the order nodes and edges were
/// added), each node's best predecessor the first of the longest, the path ending at the first
/// node of the longest distance. The edges on it, in order; empty when the graph has a cycle
/// (`*acyclic` false) or no edge.
inline std::vector<std::uint32_t> nx_longest_path(const nx_digraph& g, std::size_t nodes,
                                                  std::int64_t* length, bool* acyclic) {
  constexpr std::uint32_t none = ~std::uint32_t{0};
  std::vector<std::uint32_t> out_first(nodes + 1, 0), in_first(nodes + 1, 0);
  for (const cp_edge& e : g.edges) {
    ++out_first[e.from + 1];
    ++in_first[e.to + 1];
  }
  for (std::size_t v = 0; v < nodes; ++v) {
    out_first[v + 1] += out_first[v];
    in_first[v + 1] += in_first[v];
  }
  std::vector<std::uint32_t> outs(g.edges.size()), ins(g.edges.size());
  {
    std::vector<std::uint32_t> o(out_first.begin(), out_first.end() - 1);
    std::vector<std::uint32_t> i(in_first.begin(), in_first.end() - 1);
    for (std::uint32_t k = 0; k < g.edges.size(); ++k) {
      outs[o[g.edges[k].from]++] = k;
      ins[i[g.edges[k].to]++] = k;
    }
  }
  std::vector<std::uint32_t> pending(nodes, 0), topo;
  topo.reserve(g.order.size());
  for (const std::uint32_t v : g.order) {
    pending[v] = in_first[v + 1] - in_first[v];
    if (pending[v] == 0) topo.push_back(v);
  }
  for (std::size_t k = 0; k < topo.size(); ++k) {  // generation after generation
    const std::uint32_t u = topo[k];
    for (std::uint32_t j = out_first[u]; j < out_first[u + 1]; ++j)
      if (--pending[g.edges[outs[j]].to] == 0) topo.push_back(g.edges[outs[j]].to);
  }
  *acyclic = topo.size() == g.order.size();
  *length = 0;
  if (!*acyclic || topo.empty()) return {};
  std::vector<std::int64_t> dist(nodes, 0);
  std::vector<std::uint32_t> via(nodes, none);
  std::uint32_t end = topo.front();
  for (const std::uint32_t v : topo) {
    for (std::uint32_t j = in_first[v]; j < in_first[v + 1]; ++j) {
      const cp_edge& e = g.edges[ins[j]];
      const std::int64_t d = dist[e.from] + std::max<std::int64_t>(0, e.weight);
      if (via[v] == none || d > dist[v]) {
        dist[v] = d;
        via[v] = ins[j];
      }
    }
    if (dist[v] > dist[end]) end = v;
  }
  *length = dist[end];
  std::vector<std::uint32_t> path;
  for (std::uint32_t v = end; via[v] != none; v = g.edges[via[v]].from) path.push_back(via[v]);
  std::reverse(path.begin(), path.end());
  return path;
}

}  // namespace detail

/// Holistic Trace Analysis's critical path (see above).
struct hta_critical_path {
  bool zero_weight_launch_edges = true;  ///< HTA's CRITICAL_PATH_ADD_ZERO_WEIGHT_LAUNCH_EDGE=1
  std::int64_t kernel_kernel_threshold_us = 1500;  ///< a larger gap is no edge; 0: no limit
  std::optional<bool> drop_last_step;  ///< default: HTA's rule (two or more profiler steps)

  template <class Schema>
  [[nodiscard]] critical_path operator()(const basic_event_table<Schema>& t,
                                         const critical_path_options& o = {}) const {
    return (*this)(t, hta_frame(t, drop_last_step.value_or(hta_step_names(t).size() >= 2)), o);
  }

  template <class Schema>
  [[nodiscard]] critical_path operator()(const basic_event_table<Schema>& t, const hta_frame& f,
                                         const critical_path_options& o) const {
    using row_index = std::uint32_t;
    constexpr row_index no_row = ~row_index{0};
    constexpr std::uint32_t no_node = ~std::uint32_t{0};
    critical_path cp;
    const auto& rows = f.rows;
    const std::size_t n = rows.size();
    const std::int64_t base = t.info.base_time_ns;
    auto ns = [base](std::int64_t us) { return base + us * 1000; };
    auto partner = [&](std::size_t k) {
      return rows[k].partner < 0 ? no_row : static_cast<row_index>(rows[k].partner);
    };
    std::vector<std::uint32_t> place(n);  // the place in the file: HTA's event index, in order
    for (std::size_t k = 0; k < n; ++k)
      place[k] = t.info.file_order.empty() ? rows[k].event : t.info.file_order[rows[k].event];

    // The window.
    std::int64_t from = std::numeric_limits<std::int64_t>::max();
    std::int64_t to = std::numeric_limits<std::int64_t>::max();
    if (o.annotation.empty()) {
      for (const hta_row& r : rows) from = std::min(from, r.ts);
    } else {
      std::size_t seen = 0;
      for (const hta_row& r : rows)
        if (r.name.find(o.annotation) != std::string_view::npos && seen++ == o.instance) {
          from = r.ts;
          to = r.end;
          cp.window.emplace(ns(from), ns(to));
          break;
        }
      if (!cp.window) return cp;
    }

    // The rows of the window, in file order.
    std::vector<unsigned char> in(n, 0);
    for (std::size_t k = 0; k < n; ++k) {
      const hta_row& r = rows[k];
      if (r.stream == -1 && from <= r.ts && r.ts <= to && r.end - r.ts > 0) {
        in[k] = 1;
        if (const row_index p = partner(k); p != no_row && rows[p].stream != -1) in[p] = 1;
      }
      if (r.stream != -1 && r.name == "Stream Wait Event") in[k] = 1;
    }
    std::vector<row_index> window;
    for (std::size_t k = 0; k < n; ++k)
      if (in[k] != 0) window.push_back(static_cast<row_index>(k));
    std::sort(window.begin(), window.end(),
              [&](row_index a, row_index b) { return place[a] < place[b]; });

    // Nodes.
    auto node_row_p = [&](const hta_row& r) {
      return r.cat == "cpu_op" || r.cat == "cuda_runtime" || r.cat == "cuda_driver" ||
             (r.stream != -1 && r.correlation >= 0);
    };
    struct node_key {
      std::int64_t ts;
      std::uint32_t place;
      bool end;
      row_index row;
    };
    std::vector<node_key> keys;
    for (const row_index k : window)
      if (node_row_p(rows[k])) {
        keys.push_back({rows[k].ts, place[k], false, k});
        keys.push_back({rows[k].end, place[k], true, k});
      }
    std::sort(keys.begin(), keys.end(), [](const node_key& a, const node_key& b) {
      if (a.ts != b.ts) return a.ts < b.ts;
      if (a.place != b.place) return a.place < b.place;
      return !a.end && b.end;
    });
    std::vector<std::uint32_t> start_of(n, no_node), end_of(n, no_node);
    std::vector<row_index> row_of;  // by node
    std::vector<std::int64_t> us;   // by node
    cp.nodes.reserve(keys.size());
    row_of.reserve(keys.size());
    us.reserve(keys.size());
    for (const node_key& k : keys) {
      (k.end ? end_of : start_of)[k.row] = static_cast<std::uint32_t>(cp.nodes.size());
      cp.nodes.push_back({rows[k.row].event, ns(k.ts), !k.end});
      row_of.push_back(k.row);
      us.push_back(k.ts);
    }
    const std::size_t nodes = cp.nodes.size();

    detail::nx_digraph g(nodes);
    auto add = [&](std::uint32_t a, std::uint32_t b, cp_edge_type type, event_index charged,
                   bool zero = false) {
      const bool timed =
          !zero && type != cp_edge_type::dependency && type != cp_edge_type::sync_dependency;
      g.add({a, b, timed ? (us[b] - us[a]) * 1000 : 0, type, charged});
    };
    // HTA's attribution of an operator or kernel-to-kernel edge; `parent`: the source's parent.
    auto charged = [&](std::uint32_t a, std::uint32_t b, cp_edge_type type, event_index parent) {
      if (type == cp_edge_type::kernel_kernel_delay) return cp.nodes[a].event;
      if (type != cp_edge_type::operator_kernel) return no_event;
      if (cp.nodes[a].start) return cp.nodes[a].event;
      return !cp.nodes[b].start ? cp.nodes[b].event : parent;
    };
    std::vector<unsigned char> lock(n, 0), blocking(n, 0);
    for (const row_index k : window) {
      const std::string_view m = rows[k].name;
      lock[k] = m == "cudaHostAlloc" || m == "cudaLaunchKernel" || m == "cudaMemcpyAsync";
      blocking[k] = m == "cudaDeviceSynchronize" || m == "cudaStreamSynchronize" ||
                    m == "cudaEventQuery" || m == "cudaEventSynchronize" || m == "cudaMemcpy" ||
                    m == "cudaMemcpyAsync";
    }

    // The CUDA runtime lock, across threads.
    {
      std::vector<std::uint32_t> pending;
      std::uint32_t last = no_node;
      for (std::uint32_t v = 0; v < nodes; ++v) {
        if (lock[row_of[v]] == 0) continue;
        if (cp.nodes[v].start) {
          pending.push_back(v);
        } else {
          while (!pending.empty()) {
            const std::uint32_t p = pending.back();
            pending.pop_back();
            if (row_of[p] == row_of[v])
              add(p, v, cp_edge_type::operator_kernel, cp.nodes[p].event);
            else
              add(p, v, cp_edge_type::dependency, no_event);
          }
          if (last != no_node && !cp.nodes[last].start)
            add(last, v, cp_edge_type::dependency, no_event);
        }
        last = v;
      }
    }

    // Host threads: HTA's old call stacks.
    {
      auto tid_of = [&](row_index k) {
        return static_cast<std::int64_t>(t.events[rows[k].event].tid);
      };
      auto only_tid = [&](std::string_view part) -> std::optional<std::int64_t> {
        std::optional<std::int64_t> one;
        for (const row_index k : window) {
          const hta_row& r = rows[k];
          if ((r.cat != "cpu_op" && r.cat != "user_annotation") ||
              r.name.find(part) == std::string_view::npos)
            continue;
          if (one && *one != tid_of(k)) return std::nullopt;
          one = tid_of(k);
        }
        return one;
      };
      const auto forward = only_tid("forward");
      const auto backward = only_tid("autograd");
      const bool merge = forward && backward && *forward != *backward;
      std::map<std::pair<std::int64_t, std::int64_t>, std::vector<row_index>> threads;
      for (const row_index k : window) {
        std::int64_t tid = tid_of(k);
        if (merge && tid == *backward) tid = *forward;
        threads[{t.events[rows[k].event].pid, tid}].push_back(k);
      }
      std::vector<event_index> parent(n, no_event);
      for (auto& [key, group] : threads) {
        bool device = false, host = true;
        for (const row_index k : group) {
          device = device || rows[k].stream > 0;
          host = host && rows[k].stream < 0;
        }
        if (device || !host) continue;  // HTA's GPU and UNKNOWN stacks are not walked
        struct endpoint {
          std::int64_t time, dur;
          std::uint32_t place;
          bool end;
          row_index row;
        };
        std::vector<endpoint> points;
        points.reserve(group.size() * 2);
        for (const row_index k : group) {
          const std::int64_t dur = std::max<std::int64_t>(0, rows[k].end - rows[k].ts);
          points.push_back({rows[k].ts, dur, place[k], false, k});
          points.push_back({rows[k].ts + dur, dur, place[k], true, k});
        }
        // HTA's `compare_events` (every event of a walked stack lasts more than 0): by time;
        // ends before starts; starts longer first, then by index; ends shorter first, then by
        // index descending; an event's start before its end.
        std::sort(points.begin(), points.end(), [](const endpoint& a, const endpoint& b) {
          if (a.row == b.row) return !a.end && b.end;
          if (a.time != b.time) return a.time < b.time;
          if (a.end != b.end) return a.end;
          if (!a.end) return a.dur != b.dur ? a.dur > b.dur : a.place < b.place;
          return a.dur != b.dur ? a.dur < b.dur : a.place > b.place;
        });
        // The tree: a start's parent is what is open; an end closes whatever is open.
        std::vector<row_index> open, starts;
        for (const endpoint& p : points) {
          if (!p.end) {
            parent[p.row] = open.empty() ? no_event : rows[open.back()].event;
            open.push_back(p.row);
            starts.push_back(p.row);
          } else if (!open.empty()) {
            open.pop_back();
          }
        }
        // Its depth-first walk (children in start order), without recursion.
        std::uint32_t last = no_node;
        event_index last_parent = no_event;
        int depth = 0;
        auto shares_lock = [&](std::uint32_t a, std::uint32_t b) {
          return lock[row_of[a]] != 0 && lock[row_of[b]] != 0 &&
                 (cp.nodes[a].start || !cp.nodes[b].start);
        };
        auto enter = [&](row_index k) {
          const std::uint32_t s = start_of[k];
          if (s == no_node) return;
          if (last != no_node && !shares_lock(last, s)) {
            const cp_edge_type type =
                depth == 0 ? cp_edge_type::dependency : cp_edge_type::operator_kernel;
            add(last, s, type, charged(last, s, type, last_parent));
          }
          last = s;
          last_parent = parent[k];
          ++depth;
        };
        auto exit = [&](row_index k) {
          const std::uint32_t e = end_of[k];
          if (e == no_node) return;
          if (last != no_node && !shares_lock(last, e))
            add(last, e, cp_edge_type::operator_kernel,
                charged(last, e, cp_edge_type::operator_kernel, last_parent), blocking[k] != 0);
          last = e;
          last_parent = parent[k];
          --depth;
        };
        std::vector<row_index> walk;  // the events entered and not yet left
        for (const row_index k : starts) {
          const event_index up = parent[k];
          while (!walk.empty() && rows[walk.back()].event != up) {
            exit(walk.back());
            walk.pop_back();
          }
          enter(k);
          walk.push_back(k);
        }
        while (!walk.empty()) {
          exit(walk.back());
          walk.pop_back();
        }
      }
    }

    // Device rows.
    {
      // HTA's queue length of the whole frame, after each row's change.
      constexpr std::int64_t no_length = std::numeric_limits<std::int64_t>::min();
      std::vector<std::int64_t> queued(n, no_length);
      {
        std::unordered_map<std::int64_t, std::int64_t> running;
        for (const auto& [c, k] : detail::hta_queue_changes(f))
          queued[k] = running[c.stream] += c.delta;
      }
      // Launch calls as HTA lists them: by time, with a partner on a stream.
      auto launch_name = [](std::string_view m) {
        return m == "cudaMemsetAsync" || m == "cudaMemcpyAsync" || m == "cudaLaunchKernel" ||
               m == "cudaLaunchKernelExC" || m == "cuLaunchKernel" ||
               m == "runFunction - job_prep_and_submit_for_execution";
      };
      auto by_time = [&](std::vector<row_index>& list) {
        std::vector<std::int64_t> ts;
        ts.reserve(list.size());
        for (const row_index k : list) ts.push_back(rows[k].ts);
        std::vector<row_index> sorted;
        sorted.reserve(list.size());
        for (const std::size_t j : numpy_argsort(ts)) sorted.push_back(list[j]);
        list = std::move(sorted);
      };
      auto pid_of = [&](row_index k) { return t.events[rows[k].event].pid; };
      std::vector<row_index> launches;
      bool any_record = false, any_wait_call = false, any_wait = false;
      for (std::size_t k = 0; k < n; ++k) {
        const std::string_view m = rows[k].name;
        any_record = any_record || m == "cudaEventRecord";
        any_wait_call = any_wait_call || m == "cudaStreamWaitEvent";
        any_wait = any_wait || m == "Stream Wait Event";
        if (launch_name(m) && partner(k) != no_row) launches.push_back(static_cast<row_index>(k));
      }
      by_time(launches);
      std::erase_if(launches, [&](row_index k) {
        const row_index p = partner(k);
        return rows[p].stream == -1 || partner(p) == no_row;
      });
      name_id wait_stream_key{}, wait_record_key{};
      const bool wait_keys = t.strings.find("wait_on_stream", wait_stream_key) &&
                             t.strings.find("wait_on_cuda_event_record_corr_id", wait_record_key);
      auto wait_record = [&](row_index k) {
        return wait_keys ? detail::int_arg(t, rows[k].event, wait_record_key, -1) : -1;
      };
      // Each recorded event's last launch before its record, on the stream it was recorded on.
      std::unordered_map<std::int64_t, row_index> previous_launch;  // record correlation ->
      if (any_record && wait_keys) {
        std::unordered_map<std::int64_t, std::pair<std::int64_t, std::int64_t>> recorded;
        for (std::size_t k = 0; k < n; ++k) {
          const std::int64_t s = detail::int_arg(t, rows[k].event, wait_stream_key, -1);
          if (s > -1)
            recorded.try_emplace(wait_record(static_cast<row_index>(k)),
                                 std::pair{pid_of(static_cast<row_index>(k)), s});
        }
        std::vector<row_index> records;
        for (std::size_t k = 0; k < n; ++k)
          if (rows[k].name == "cudaEventRecord" && recorded.contains(rows[k].correlation))
            records.push_back(static_cast<row_index>(k));
        by_time(records);
        std::vector<row_index> both(launches);
        both.insert(both.end(), records.begin(), records.end());
        by_time(both);
        std::map<std::pair<std::int64_t, std::int64_t>, row_index> latest;  // by (gpu, stream)
        std::vector<std::uint32_t> launch_id(n, 0);
        for (std::uint32_t j = 0; j < launches.size(); ++j) launch_id[launches[j]] = j;
        for (const row_index k : both) {
          if (rows[k].name == "cudaEventRecord") {
            const auto it = latest.find(recorded.at(rows[k].correlation));
            if (it != latest.end()) previous_launch.try_emplace(rows[k].correlation, it->second);
          } else {
            const row_index p = partner(k);
            row_index& l = latest.try_emplace({pid_of(p), rows[p].stream}, k).first->second;
            if (launch_id[k] > launch_id[l]) l = k;
          }
        }
      }
      // Each stream wait call's next launch from its thread to its stream.
      std::unordered_map<row_index, row_index> next_launch;  // wait call -> launch
      if (any_wait_call && any_wait) {
        std::vector<row_index> waits;
        for (std::size_t k = 0; k < n; ++k)
          if (rows[k].name == "cudaStreamWaitEvent" && partner(k) != no_row &&
              rows[partner(k)].stream != -1 && partner(partner(k)) != no_row)
            waits.push_back(static_cast<row_index>(k));
        by_time(waits);
        std::vector<row_index> both(launches);
        both.insert(both.end(), waits.begin(), waits.end());
        by_time(both);
        std::vector<std::uint32_t> launch_id(n, ~std::uint32_t{0});
        for (std::uint32_t j = 0; j < launches.size(); ++j) launch_id[launches[j]] = j;
        std::map<std::tuple<std::int64_t, std::int64_t, std::int64_t>, row_index> soonest;
        for (auto it = both.rbegin(); it != both.rend(); ++it) {
          const row_index k = *it;
          const std::tuple key{pid_of(k), static_cast<std::int64_t>(t.events[rows[k].event].tid),
                               rows[partner(k)].stream};
          if (rows[k].name == "cudaStreamWaitEvent") {
            if (const auto s = soonest.find(key); s != soonest.end()) next_launch[k] = s->second;
          } else {
            row_index& s = soonest.try_emplace(key, k).first->second;
            if (launch_id[k] < launch_id[s]) s = k;
          }
        }
      }

      // The device rows of the window: by start, sync records by end.
      std::vector<row_index> work;
      std::vector<std::int64_t> sort_by;
      for (const row_index k : window) {
        const hta_row& r = rows[k];
        if ((r.stream != -1 || (r.flags & hta_flag::sync) != 0) && r.correlation >= 0) {
          work.push_back(k);
          sort_by.push_back(r.cat == "cuda_sync" ? r.end : r.ts);
        }
      }
      std::vector<std::pair<std::int64_t, std::uint32_t>> last_node;  // by stream, in order seen
      auto last_of = [&](std::int64_t stream) -> std::uint32_t* {
        for (auto& [s, v] : last_node)
          if (s == stream) return &v;
        return nullptr;
      };
      std::unordered_map<row_index, row_index> waits_for;  // kernel -> kernel it waits for
      auto sync_to_call = [&](std::uint32_t from_node, row_index sync) {
        const row_index call = partner(sync);
        if (call != no_row && end_of[call] != no_node)
          add(from_node, end_of[call], cp_edge_type::sync_dependency, no_event);
      };
      for (const std::size_t j : numpy_argsort(sort_by)) {
        const row_index k = work[j];
        const hta_row& r = rows[k];
        if (r.cat == "cuda_sync") {
          if (r.name == "Stream Wait Event" || r.name == "Event Sync") {
            const auto prev = previous_launch.find(wait_record(k));
            if (prev == previous_launch.end()) continue;
            const row_index src = partner(prev->second);
            if (r.name == "Stream Wait Event") {
              const row_index call = partner(k);
              const auto next = call == no_row ? next_launch.end() : next_launch.find(call);
              if (next == next_launch.end()) continue;
              if (const row_index dest = partner(next->second); dest != no_row)
                waits_for[dest] = src;
            } else if (src != no_row && end_of[src] != no_node) {
              sync_to_call(end_of[src], k);
            }
          } else if (r.name == "Context Sync") {
            for (const auto& [s, v] : last_node) sync_to_call(v, k);
          } else if (r.name == "Stream Sync") {
            if (const std::uint32_t* v = last_of(r.stream)) sync_to_call(*v, k);
          }
          continue;
        }
        const std::uint32_t s = start_of[k], e = end_of[k];
        add(s, e, cp_edge_type::operator_kernel, r.event);
        std::uint32_t sync_end = no_node;
        bool edge = false, launch = false;
        if (const auto w = waits_for.find(k); w != waits_for.end()) {
          if (w->second != no_row && end_of[w->second] != no_node) {
            sync_end = end_of[w->second];
            add(sync_end, s, cp_edge_type::sync_dependency, no_event);
            edge = true;
          }
          waits_for.erase(w);
        }
        const row_index call = partner(k);
        const std::uint32_t* before = last_of(r.stream);
        const std::int64_t launched = call == no_row ? 0 : rows[call].ts;
        if (call != no_row && queued[call] == 1 && queued[k] == 0 &&
            (before == nullptr || us[*before] < launched) &&
            (sync_end == no_node || us[sync_end] < launched)) {
          if (start_of[call] != no_node) {
            add(start_of[call], s, cp_edge_type::kernel_launch_delay, no_event);
            edge = launch = true;
          }
        } else if (before != nullptr && (sync_end == no_node || us[sync_end] < us[*before]) &&
                   (kernel_kernel_threshold_us <= 0 ||
                    us[s] - us[*before] < kernel_kernel_threshold_us)) {
          add(*before, s, cp_edge_type::kernel_kernel_delay, cp.nodes[*before].event);
          edge = true;
        }
        if (zero_weight_launch_edges && !launch && call != no_row && start_of[call] != no_node)
          add(start_of[call], s, cp_edge_type::kernel_launch_delay, no_event, true);
        (void)edge;  // HTA warns when no edge reached the kernel: its cost is on no CPU path
        if (std::uint32_t* v = last_of(r.stream))
          *v = e;
        else
          last_node.emplace_back(r.stream, e);
      }
    }

    // The longest path and its causes.
    // HTA's graph holds the nodes that edges name (a `Stream Wait Event` record's are none).
    {
      std::vector<std::uint32_t> id(nodes, no_node);
      std::vector<cp_node> kept;
      for (std::uint32_t v = 0; v < nodes; ++v)
        if (g.known[v] != 0) {
          id[v] = static_cast<std::uint32_t>(kept.size());
          kept.push_back(cp.nodes[v]);
        }
      for (cp_edge& e : g.edges) {
        e.from = id[e.from];
        e.to = id[e.to];
      }
      for (std::uint32_t& v : g.order) v = id[v];
      cp.nodes = std::move(kept);
    }
    cp.path = detail::nx_longest_path(g, cp.nodes.size(), &cp.length, &cp.acyclic);
    cp.edges = std::move(g.edges);
    std::vector<row_index> row_by_event(t.size(), no_row);
    for (std::size_t k = 0; k < n; ++k) row_by_event[rows[k].event] = static_cast<row_index>(k);
    std::vector<unsigned char> seen(t.size(), 0);
    cp.bound_by[""] = 0;
    for (const std::uint32_t k : cp.path) {
      const cp_edge& e = cp.edges[k];
      for (const std::uint32_t v : {e.from, e.to})
        if (seen[cp.nodes[v].event] == 0) {
          seen[cp.nodes[v].event] = 1;
          cp.events.push_back(cp.nodes[v].event);
        }
      std::string cause;
      if (e.type == cp_edge_type::kernel_launch_delay) {
        cause = "gpu_kernel_launch_overhead";
      } else if (e.type == cp_edge_type::kernel_kernel_delay) {
        cause = "gpu_kernel_kernel_overhead";
      } else if (e.type == cp_edge_type::operator_kernel) {
        const row_index r = e.charged == no_event ? no_row : row_by_event[e.charged];
        if (r == no_row || rows[r].stream < 0)
          cause = "cpu_bound";
        else if (const std::string s = shorten_name(rows[r].name);
                 s.starts_with("nccl") && s.find("Kernel", 4) != std::string::npos)
          cause = "gpu_communication_bound";
        else
          cause = "gpu_compute_bound";
      }
      cp.bound_by[cause] += e.weight;  // as HTA sums them: negative weights too
    }
    return cp;
  }
};

TRACEMODEL_END_NAMESPACE
