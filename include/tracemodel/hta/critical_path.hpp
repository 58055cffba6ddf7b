// tracemodel/hta — Holistic Trace Analysis's critical path, quirk for quirk (docs/hta-rules.md,
// "Critical path").
//
//   const auto cp = tracemodel::hta::critical_path_of(table, {.annotation = "ProfilerStep",
//                                                              .instance = 1});
//
// On HTA's frame (`hta::frame`: microseconds, its last step dropped when the trace has two or
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
//  - the longest path as networkx's `dag_longest_path` finds it, ties included (the nodes in
//    generations of Kahn's algorithm, in the order edges named them; each node's best incoming
//    edge the first of the longest in the edges' order: algo/critical_path_graph.hpp).
// Times in the result are nanoseconds: HTA's microseconds times 1000 (node times from the
// trace's base time), converted at this layer's edge; the causes are algo/'s.
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

#include "tracemodel/algo/critical_path_graph.hpp"
#include "tracemodel/algo/kernel_class.hpp"
#include "tracemodel/config.hpp"
#include "tracemodel/hta/frame.hpp"
#include "tracemodel/hta/numpy.hpp"
#include "tracemodel/hta/queue_length.hpp"
#include "tracemodel/model/table.hpp"

TRACEMODEL_BEGIN_NAMESPACE
namespace hta {

struct critical_path_options {
  std::string annotation{};  ///< a part of the window's row name; empty: the whole frame
  std::size_t instance = 0;
  bool zero_weight_launch_edges = true;  ///< HTA's CRITICAL_PATH_ADD_ZERO_WEIGHT_LAUNCH_EDGE=1
  std::int64_t kernel_kernel_threshold_us = 1500;  ///< a larger gap is no edge; 0: no limit
  std::optional<bool> drop_last_step{};  ///< default: HTA's rule (two or more profiler steps)
};

namespace detail {
/// A directed graph kept as networkx's `DiGraph` keeps one: one edge per pair of nodes (adding
/// it again replaces its type and weight, and its event when the new one names one, in place),
/// the nodes in the order edges first named them.
struct nx_digraph {
  static constexpr std::uint32_t none = ~std::uint32_t{0};
  row_list<cp_edge> edges;
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

/// networkx's `topological_sort` of `g`: generations of Kahn's algorithm, in the order nodes
/// and edges were added.
inline tracemodel::detail::topological_order generation_order(const nx_digraph& g,
                                                              std::size_t nodes) {
  std::vector<std::uint32_t> out_first(nodes + 1, 0), pending(nodes, 0);
  for (const cp_edge& e : g.edges) {
    ++out_first[e.from + 1];
    ++pending[e.to];
  }
  for (std::size_t v = 0; v < nodes; ++v) out_first[v + 1] += out_first[v];
  std::vector<std::uint32_t> outs(g.edges.size());
  {
    std::vector<std::uint32_t> at(out_first.begin(), out_first.end() - 1);
    for (std::uint32_t k = 0; k < g.edges.size(); ++k) outs[at[g.edges[k].from]++] = k;
  }
  tracemodel::detail::topological_order o;
  o.nodes.reserve(g.order.size());
  for (const std::uint32_t v : g.order)
    if (pending[v] == 0) o.nodes.push_back(v);
  for (std::size_t k = 0; k < o.nodes.size(); ++k) {  // generation after generation
    const std::uint32_t u = o.nodes[k];
    for (std::uint32_t j = out_first[u]; j < out_first[u + 1]; ++j)
      if (--pending[g.edges[outs[j]].to] == 0) o.nodes.push_back(g.edges[outs[j]].to);
  }
  o.acyclic = o.nodes.size() == g.order.size();
  return o;
}

/// HTA's graph of one frame, built step by step (see the header comment).
template <class Schema>
class hta_cp_graph {
 public:
  using row_index = std::uint32_t;
  static constexpr row_index no_row = ~row_index{0};
  static constexpr std::uint32_t no_node = ~std::uint32_t{0};

  hta_cp_graph(const basic_event_table<Schema>& t, const frame& f, const critical_path_options& o,
               critical_path& cp)
      : t_(t), rows_(f.rows), f_(f), o_(o), cp_(cp), n_(f.rows.size()), g_(0) {
    place_.resize(n_);  // the place in the file: HTA's event index, in order
    for (std::size_t k = 0; k < n_; ++k)
      place_[k] = t.info.file_order.empty() ? rows_[k].event : t.info.file_order[rows_[k].event];
  }

  /// False when the window's row is not there (the graph stays empty).
  bool build() {
    if (!find_window()) return false;
    collect_window();
    number_nodes();
    g_ = nx_digraph(cp_.nodes.size());
    mark_calls();
    lock_edges();
    host_edges();
    device_edges();
    keep_named_nodes();
    return true;
  }
  nx_digraph& graph() { return g_; }

 private:
  row_index partner(std::size_t k) const {
    return rows_[k].partner < 0 ? no_row : static_cast<row_index>(rows_[k].partner);
  }
  std::int64_t ns(std::int64_t us) const { return t_.info.base_time_ns + us * 1000; }

  bool find_window() {
    if (o_.annotation.empty()) {
      for (const row& r : rows_) from_ = std::min(from_, r.ts);
      return true;
    }
    std::size_t seen = 0;
    for (const row& r : rows_)
      if (r.name.find(o_.annotation) != std::string_view::npos && seen++ == o_.instance) {
        from_ = r.ts;
        to_ = r.end;
        cp_.window.emplace(ns(from_), ns(to_));
        return true;
      }
    return false;
  }

  /// The rows of the window, in file order.
  void collect_window() {
    std::vector<unsigned char> in(n_, 0);
    for (std::size_t k = 0; k < n_; ++k) {
      const row& r = rows_[k];
      if (r.stream == -1 && from_ <= r.ts && r.ts <= to_ && r.end - r.ts > 0) {
        in[k] = 1;
        if (const row_index p = partner(k); p != no_row && rows_[p].stream != -1) in[p] = 1;
      }
      if (r.stream != -1 && r.name == "Stream Wait Event") in[k] = 1;
    }
    for (std::size_t k = 0; k < n_; ++k)
      if (in[k] != 0) window_.push_back(static_cast<row_index>(k));
    std::sort(window_.begin(), window_.end(),
              [&](row_index a, row_index b) { return place_[a] < place_[b]; });
  }

  /// Nodes: by time, then place in the file, a start before its end.
  void number_nodes() {
    auto node_row = [&](const row& r) {
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
    for (const row_index k : window_)
      if (node_row(rows_[k])) {
        keys.push_back({rows_[k].ts, place_[k], false, k});
        keys.push_back({rows_[k].end, place_[k], true, k});
      }
    std::sort(keys.begin(), keys.end(), [](const node_key& a, const node_key& b) {
      if (a.ts != b.ts) return a.ts < b.ts;
      if (a.place != b.place) return a.place < b.place;
      return !a.end && b.end;
    });
    start_of_.assign(n_, no_node);
    end_of_.assign(n_, no_node);
    cp_.nodes.reserve(keys.size());
    row_of_.reserve(keys.size());
    us_.reserve(keys.size());
    for (const node_key& k : keys) {
      (k.end ? end_of_ : start_of_)[k.row] = static_cast<std::uint32_t>(cp_.nodes.size());
      cp_.nodes.push_back({rows_[k.row].event, ns(k.ts), !k.end});
      row_of_.push_back(k.row);
      us_.push_back(k.ts);
    }
  }

  void add(std::uint32_t a, std::uint32_t b, cp_edge_type type, event_index charged,
           bool zero = false) {
    const bool timed =
        !zero && type != cp_edge_type::dependency && type != cp_edge_type::sync_dependency;
    g_.add({a, b, timed ? (us_[b] - us_[a]) * 1000 : 0, type, charged});
  }
  /// HTA's attribution of an operator or kernel-to-kernel edge; `parent`: the source's parent.
  event_index charged(std::uint32_t a, std::uint32_t b, cp_edge_type type,
                      event_index parent) const {
    if (type == cp_edge_type::kernel_kernel_delay) return cp_.nodes[a].event;
    if (type != cp_edge_type::operator_kernel) return no_event;
    if (cp_.nodes[a].start) return cp_.nodes[a].event;
    return !cp_.nodes[b].start ? cp_.nodes[b].event : parent;
  }

  /// The calls that hold the CUDA runtime lock, and the blocking ones.
  void mark_calls() {
    lock_.assign(n_, 0);
    blocking_.assign(n_, 0);
    for (const row_index k : window_) {
      const std::string_view m = rows_[k].name;
      lock_[k] = m == "cudaHostAlloc" || m == "cudaLaunchKernel" || m == "cudaMemcpyAsync";
      blocking_[k] = m == "cudaDeviceSynchronize" || m == "cudaStreamSynchronize" ||
                     m == "cudaEventQuery" || m == "cudaEventSynchronize" || m == "cudaMemcpy" ||
                     m == "cudaMemcpyAsync";
    }
  }

  /// The CUDA runtime lock, across threads.
  void lock_edges() {
    std::vector<std::uint32_t> pending;
    std::uint32_t last = no_node;
    for (std::uint32_t v = 0; v < cp_.nodes.size(); ++v) {
      if (lock_[row_of_[v]] == 0) continue;
      if (cp_.nodes[v].start) {
        pending.push_back(v);
      } else {
        while (!pending.empty()) {
          const std::uint32_t p = pending.back();
          pending.pop_back();
          if (row_of_[p] == row_of_[v])
            add(p, v, cp_edge_type::operator_kernel, cp_.nodes[p].event);
          else
            add(p, v, cp_edge_type::dependency, no_event);
        }
        if (last != no_node && !cp_.nodes[last].start)
          add(last, v, cp_edge_type::dependency, no_event);
      }
      last = v;
    }
  }

  std::int64_t tid_of(row_index k) const {
    return static_cast<std::int64_t>(t_.events[rows_[k].event].tid);
  }
  std::int64_t pid_of(row_index k) const { return t_.events[rows_[k].event].pid; }
  /// The one thread whose `cpu_op` or `user_annotation` rows name `part`, if one.
  std::optional<std::int64_t> only_tid(std::string_view part) const {
    std::optional<std::int64_t> one;
    for (const row_index k : window_) {
      const row& r = rows_[k];
      if ((r.cat != "cpu_op" && r.cat != "user_annotation") ||
          r.name.find(part) == std::string_view::npos)
        continue;
      if (one && *one != tid_of(k)) return std::nullopt;
      one = tid_of(k);
    }
    return one;
  }

  /// Host threads: HTA's old call stacks.
  void host_edges() {
    const auto forward = only_tid("forward");
    const auto backward = only_tid("autograd");
    const bool merge = forward && backward && *forward != *backward;
    std::map<std::pair<std::int64_t, std::int64_t>, std::vector<row_index>> threads;
    for (const row_index k : window_) {
      std::int64_t tid = tid_of(k);
      if (merge && tid == *backward) tid = *forward;
      threads[{pid_of(k), tid}].push_back(k);
    }
    parent_.assign(n_, no_event);
    for (auto& [key, group] : threads) {
      bool device = false, host = true;
      for (const row_index k : group) {
        device = device || rows_[k].stream > 0;
        host = host && rows_[k].stream < 0;
      }
      if (device || !host) continue;  // HTA's GPU and UNKNOWN stacks are not walked
      walk_stack(stack_order(group));
    }
  }
  /// One thread's rows as HTA's old call stack orders their starts: each start's parent is what
  /// is open, and an end closes whatever is open.
  std::vector<row_index> stack_order(const std::vector<row_index>& group) {
    struct endpoint {
      std::int64_t time, dur;
      std::uint32_t place;
      bool end;
      row_index row;
    };
    std::vector<endpoint> points;
    points.reserve(group.size() * 2);
    for (const row_index k : group) {
      const std::int64_t dur = std::max<std::int64_t>(0, rows_[k].end - rows_[k].ts);
      points.push_back({rows_[k].ts, dur, place_[k], false, k});
      points.push_back({rows_[k].ts + dur, dur, place_[k], true, k});
    }
    // HTA's `compare_events` (every event of a walked stack lasts more than 0): by time; ends
    // before starts; starts longer first, then by index; ends shorter first, then by index
    // descending; an event's start before its end.
    std::sort(points.begin(), points.end(), [](const endpoint& a, const endpoint& b) {
      if (a.row == b.row) return !a.end && b.end;
      if (a.time != b.time) return a.time < b.time;
      if (a.end != b.end) return a.end;
      if (!a.end) return a.dur != b.dur ? a.dur > b.dur : a.place < b.place;
      return a.dur != b.dur ? a.dur < b.dur : a.place > b.place;
    });
    std::vector<row_index> open, starts;
    for (const endpoint& p : points) {
      if (!p.end) {
        parent_[p.row] = open.empty() ? no_event : rows_[open.back()].event;
        open.push_back(p.row);
        starts.push_back(p.row);
      } else if (!open.empty()) {
        open.pop_back();
      }
    }
    return starts;
  }
  /// The stack's depth-first walk (children in start order), without recursion.
  void walk_stack(const std::vector<row_index>& starts) {
    std::uint32_t last = no_node;
    event_index last_parent = no_event;
    int depth = 0;
    auto shares_lock = [&](std::uint32_t a, std::uint32_t b) {
      return lock_[row_of_[a]] != 0 && lock_[row_of_[b]] != 0 &&
             (cp_.nodes[a].start || !cp_.nodes[b].start);
    };
    auto enter = [&](row_index k) {
      const std::uint32_t s = start_of_[k];
      if (s == no_node) return;
      if (last != no_node && !shares_lock(last, s)) {
        const cp_edge_type type =
            depth == 0 ? cp_edge_type::dependency : cp_edge_type::operator_kernel;
        add(last, s, type, charged(last, s, type, last_parent));
      }
      last = s;
      last_parent = parent_[k];
      ++depth;
    };
    auto exit = [&](row_index k) {
      const std::uint32_t e = end_of_[k];
      if (e == no_node) return;
      if (last != no_node && !shares_lock(last, e))
        add(last, e, cp_edge_type::operator_kernel,
            charged(last, e, cp_edge_type::operator_kernel, last_parent), blocking_[k] != 0);
      last = e;
      last_parent = parent_[k];
      --depth;
    };
    std::vector<row_index> walk;  // the events entered and not yet left
    for (const row_index k : starts) {
      const event_index up = parent_[k];
      while (!walk.empty() && rows_[walk.back()].event != up) {
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

  /// `list` sorted by the rows' start as pandas' sort_values sorts it.
  void by_time(std::vector<row_index>& list) const {
    std::vector<std::int64_t> ts;
    ts.reserve(list.size());
    for (const row_index k : list) ts.push_back(rows_[k].ts);
    std::vector<row_index> sorted;
    sorted.reserve(list.size());
    for (const std::size_t j : numpy_argsort(ts)) sorted.push_back(list[j]);
    list = std::move(sorted);
  }
  std::int64_t wait_record(row_index k) const {
    return wait_keys_ ? tracemodel::detail::int_arg(t_, rows_[k].event, wait_record_key_, -1) : -1;
  }

  /// Launch calls as HTA lists them: by time, with a partner on a stream.
  void find_launches() {
    auto launch_name = [](std::string_view m) {
      return m == "cudaMemsetAsync" || m == "cudaMemcpyAsync" || m == "cudaLaunchKernel" ||
             m == "cudaLaunchKernelExC" || m == "cuLaunchKernel" ||
             m == "runFunction - job_prep_and_submit_for_execution";
    };
    for (std::size_t k = 0; k < n_; ++k) {
      const std::string_view m = rows_[k].name;
      any_record_ = any_record_ || m == "cudaEventRecord";
      any_wait_call_ = any_wait_call_ || m == "cudaStreamWaitEvent";
      any_wait_ = any_wait_ || m == "Stream Wait Event";
      if (launch_name(m) && partner(k) != no_row) launches_.push_back(static_cast<row_index>(k));
    }
    by_time(launches_);
    std::erase_if(launches_, [&](row_index k) {
      const row_index p = partner(k);
      return rows_[p].stream == -1 || partner(p) == no_row;
    });
    wait_keys_ = t_.strings.find("wait_on_stream", wait_stream_key_) &&
                 t_.strings.find("wait_on_cuda_event_record_corr_id", wait_record_key_);
  }

  /// Each recorded event's last launch before its record, on the stream it was recorded on.
  void find_recorded_launches() {
    if (!any_record_ || !wait_keys_) return;
    std::unordered_map<std::int64_t, std::pair<std::int64_t, std::int64_t>> recorded;
    for (std::size_t k = 0; k < n_; ++k) {
      const std::int64_t s = tracemodel::detail::int_arg(t_, rows_[k].event, wait_stream_key_, -1);
      if (s > -1)
        recorded.try_emplace(wait_record(static_cast<row_index>(k)),
                             std::pair{pid_of(static_cast<row_index>(k)), s});
    }
    std::vector<row_index> records;
    for (std::size_t k = 0; k < n_; ++k)
      if (rows_[k].name == "cudaEventRecord" && recorded.contains(rows_[k].correlation))
        records.push_back(static_cast<row_index>(k));
    by_time(records);
    std::vector<row_index> both(launches_);
    both.insert(both.end(), records.begin(), records.end());
    by_time(both);
    std::map<std::pair<std::int64_t, std::int64_t>, row_index> latest;  // by (gpu, stream)
    std::vector<std::uint32_t> launch_id(n_, 0);
    for (std::uint32_t j = 0; j < launches_.size(); ++j) launch_id[launches_[j]] = j;
    for (const row_index k : both) {
      if (rows_[k].name == "cudaEventRecord") {
        const auto it = latest.find(recorded.at(rows_[k].correlation));
        if (it != latest.end()) previous_launch_.try_emplace(rows_[k].correlation, it->second);
      } else {
        const row_index p = partner(k);
        row_index& l = latest.try_emplace({pid_of(p), rows_[p].stream}, k).first->second;
        if (launch_id[k] > launch_id[l]) l = k;
      }
    }
  }

  /// Each stream wait call's next launch from its thread to its stream.
  void find_next_launches() {
    if (!any_wait_call_ || !any_wait_) return;
    std::vector<row_index> waits;
    for (std::size_t k = 0; k < n_; ++k)
      if (rows_[k].name == "cudaStreamWaitEvent" && partner(k) != no_row &&
          rows_[partner(k)].stream != -1 && partner(partner(k)) != no_row)
        waits.push_back(static_cast<row_index>(k));
    by_time(waits);
    std::vector<row_index> both(launches_);
    both.insert(both.end(), waits.begin(), waits.end());
    by_time(both);
    std::vector<std::uint32_t> launch_id(n_, ~std::uint32_t{0});
    for (std::uint32_t j = 0; j < launches_.size(); ++j) launch_id[launches_[j]] = j;
    std::map<std::tuple<std::int64_t, std::int64_t, std::int64_t>, row_index> soonest;
    for (auto it = both.rbegin(); it != both.rend(); ++it) {
      const row_index k = *it;
      const std::tuple key{pid_of(k), tid_of(k), rows_[partner(k)].stream};
      if (rows_[k].name == "cudaStreamWaitEvent") {
        if (const auto s = soonest.find(key); s != soonest.end()) next_launch_[k] = s->second;
      } else {
        row_index& s = soonest.try_emplace(key, k).first->second;
        if (launch_id[k] < launch_id[s]) s = k;
      }
    }
  }

  /// Device rows: by start, sync records by their end.
  void device_edges() {
    // HTA's queue length of the whole frame, after each row's change.
    queued_.assign(n_, std::numeric_limits<std::int64_t>::min());
    {
      std::unordered_map<std::int64_t, std::int64_t> running;
      for (const auto& [c, k] : queue_changes(f_)) queued_[k] = running[c.stream] += c.delta;
    }
    find_launches();
    find_recorded_launches();
    find_next_launches();
    std::vector<row_index> work;
    std::vector<std::int64_t> sort_by;
    for (const row_index k : window_) {
      const row& r = rows_[k];
      if ((r.stream != -1 || (r.flags & flag::sync) != 0) && r.correlation >= 0) {
        work.push_back(k);
        sort_by.push_back(r.cat == "cuda_sync" ? r.end : r.ts);
      }
    }
    for (const std::size_t j : numpy_argsort(sort_by)) {
      const row_index k = work[j];
      if (rows_[k].cat == "cuda_sync")
        sync_record(k);
      else
        kernel(k);
    }
  }
  std::uint32_t* last_of(std::int64_t stream) {
    for (auto& [s, v] : last_node_)
      if (s == stream) return &v;
    return nullptr;
  }
  void sync_to_call(std::uint32_t from_node, row_index sync) {
    const row_index call = partner(sync);
    if (call != no_row && end_of_[call] != no_node)
      add(from_node, end_of_[call], cp_edge_type::sync_dependency, no_event);
  }
  /// A synchronization record: the waits it ties (see the header comment).
  void sync_record(row_index k) {
    const row& r = rows_[k];
    if (r.name == "Stream Wait Event" || r.name == "Event Sync") {
      const auto prev = previous_launch_.find(wait_record(k));
      if (prev == previous_launch_.end()) return;
      const row_index src = partner(prev->second);
      if (r.name == "Stream Wait Event") {
        const row_index call = partner(k);
        const auto next = call == no_row ? next_launch_.end() : next_launch_.find(call);
        if (next == next_launch_.end()) return;
        if (const row_index dest = partner(next->second); dest != no_row) waits_for_[dest] = src;
      } else if (src != no_row && end_of_[src] != no_node) {
        sync_to_call(end_of_[src], k);
      }
    } else if (r.name == "Context Sync") {
      for (const auto& [s, v] : last_node_) sync_to_call(v, k);
    } else if (r.name == "Stream Sync") {
      if (const std::uint32_t* v = last_of(r.stream)) sync_to_call(*v, k);
    }
  }
  /// A kernel (or copy, set): its own edge, what it waits for, its launch or kernel-to-kernel
  /// edge.
  void kernel(row_index k) {
    const row& r = rows_[k];
    const std::uint32_t s = start_of_[k], e = end_of_[k];
    add(s, e, cp_edge_type::operator_kernel, r.event);
    std::uint32_t sync_end = no_node;
    if (const auto w = waits_for_.find(k); w != waits_for_.end()) {
      if (w->second != no_row && end_of_[w->second] != no_node) {
        sync_end = end_of_[w->second];
        add(sync_end, s, cp_edge_type::sync_dependency, no_event);
      }
      waits_for_.erase(w);
    }
    const row_index call = partner(k);
    const std::uint32_t* before = last_of(r.stream);
    const std::int64_t launched = call == no_row ? 0 : rows_[call].ts;
    bool launch = false;
    if (call != no_row && queued_[call] == 1 && queued_[k] == 0 &&
        (before == nullptr || us_[*before] < launched) &&
        (sync_end == no_node || us_[sync_end] < launched)) {
      if (start_of_[call] != no_node) {
        add(start_of_[call], s, cp_edge_type::kernel_launch_delay, no_event);
        launch = true;
      }
    } else if (before != nullptr && (sync_end == no_node || us_[sync_end] < us_[*before]) &&
               (o_.kernel_kernel_threshold_us <= 0 ||
                us_[s] - us_[*before] < o_.kernel_kernel_threshold_us)) {
      add(*before, s, cp_edge_type::kernel_kernel_delay, cp_.nodes[*before].event);
    }
    // (HTA warns when no edge reached the kernel: its cost is on no CPU path.)
    if (o_.zero_weight_launch_edges && !launch && call != no_row && start_of_[call] != no_node)
      add(start_of_[call], s, cp_edge_type::kernel_launch_delay, no_event, true);
    if (std::uint32_t* v = last_of(r.stream))
      *v = e;
    else
      last_node_.emplace_back(r.stream, e);
  }

  /// HTA's graph holds the nodes that edges name (a `Stream Wait Event` record's are none).
  void keep_named_nodes() {
    std::vector<std::uint32_t> id(cp_.nodes.size(), no_node);
    row_list<cp_node> kept;
    for (std::uint32_t v = 0; v < cp_.nodes.size(); ++v)
      if (g_.known[v] != 0) {
        id[v] = static_cast<std::uint32_t>(kept.size());
        kept.push_back(cp_.nodes[v]);
      }
    for (cp_edge& e : g_.edges) {
      e.from = id[e.from];
      e.to = id[e.to];
    }
    for (std::uint32_t& v : g_.order) v = id[v];
    cp_.nodes = std::move(kept);
  }

  const basic_event_table<Schema>& t_;
  const decltype(frame::rows)& rows_;
  const frame& f_;
  const critical_path_options& o_;
  critical_path& cp_;
  const std::size_t n_;
  nx_digraph g_;
  std::vector<std::uint32_t> place_;
  std::int64_t from_ = std::numeric_limits<std::int64_t>::max();
  std::int64_t to_ = std::numeric_limits<std::int64_t>::max();
  std::vector<row_index> window_;
  std::vector<std::uint32_t> start_of_, end_of_;  // node ids by row
  std::vector<row_index> row_of_;                 // by node
  std::vector<std::int64_t> us_;                  // by node
  std::vector<unsigned char> lock_, blocking_;
  std::vector<event_index> parent_;  // each walked row's parent on its stack
  std::vector<std::int64_t> queued_;
  std::vector<row_index> launches_;
  bool any_record_ = false, any_wait_call_ = false, any_wait_ = false, wait_keys_ = false;
  name_id wait_stream_key_{}, wait_record_key_{};
  std::unordered_map<std::int64_t, row_index> previous_launch_;    // record correlation ->
  std::unordered_map<row_index, row_index> next_launch_;           // wait call -> launch
  std::vector<std::pair<std::int64_t, std::uint32_t>> last_node_;  // by stream, in order seen
  std::unordered_map<row_index, row_index> waits_for_;             // kernel -> kernel it waits for
};
}  // namespace detail

/// HTA's critical path of `t` from its frame `f` (see above).
template <class Schema>
[[nodiscard]] critical_path critical_path_of(const basic_event_table<Schema>& t, const frame& f,
                                             const critical_path_options& o) {
  critical_path cp;
  detail::hta_cp_graph<Schema> builder(t, f, o, cp);
  if (!builder.build()) return cp;
  detail::nx_digraph& g = builder.graph();
  const tracemodel::detail::topological_order order = detail::generation_order(g, cp.nodes.size());
  cp.acyclic = order.acyclic;
  if (order.acyclic)
    cp.path =
        tracemodel::detail::longest_path(order.nodes, cp.nodes.size(), g.edges,
                                         tracemodel::detail::tie_edge::by_edge_order, &cp.length);
  cp.edges = std::move(g.edges);
  std::vector<std::uint32_t> row_by_event(t.size(), ~std::uint32_t{0});
  for (std::size_t k = 0; k < f.rows.size(); ++k)
    row_by_event[f.rows[k].event] = static_cast<std::uint32_t>(k);
  tracemodel::detail::charge_path(
      cp, t.size(),
      [&](const cp_edge& e) {
        return tracemodel::detail::cause_by_type(e, [&](const cp_edge& op) -> std::size_t {
          const std::uint32_t r =
              op.charged == no_event ? ~std::uint32_t{0} : row_by_event[op.charged];
          if (r == ~std::uint32_t{0} || f.rows[r].stream < 0) return 1;  // cpu_bound
          const std::string s = short_kernel_name(f.rows[r].name);
          return s.starts_with("nccl") && s.find("Kernel", 4) != std::string::npos ? 3 : 2;
        });
      },
      /*clamp=*/false);  // as HTA sums them: negative weights too
  return cp;
}

/// HTA's critical path of `t`, from its frame (the last step dropped by HTA's rule unless
/// `drop_last_step` says).
template <class Schema>
[[nodiscard]] critical_path critical_path_of(const basic_event_table<Schema>& t,
                                             const critical_path_options& o = {}) {
  return critical_path_of(t, frame(t, o.drop_last_step.value_or(step_names(t).size() >= 2)), o);
}

}  // namespace hta
TRACEMODEL_END_NAMESPACE
