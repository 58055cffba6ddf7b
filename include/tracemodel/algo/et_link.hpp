// tracemodel/algo — joining an execution trace with a host/device trace.
//
//   tracemodel::analyze(host);                                   // links and tree first
//   auto r = tracemodel::link_execution_trace(et, host);
//   std::string plus = tracemodel::enhanced_execution_trace(et, host, r);  // formats/
//
// (The enhanced execution trace is written by formats/execution_trace_writer.hpp.)
//
// 1. Iterations: when the host trace has annotations named `iteration_prefix…` (ProfilerStep#N),
//    the span of those named like an execution-trace node is used (PyTorch 2 records several
//    steps in one execution trace), else the whole trace.
// 2. Op matching, per thread (an execution-trace tid maps to the host thread of that id when
//    there is one, else to the unused host thread whose op names overlap its names most):
//    - by id: when nodes carry `rf_id` and host ops the `Record function id` arg, exactly;
//    - by order otherwise: op nodes in id order (ids are handed out at op start) against host
//      ops (cpu_op, user_annotation) in start order, aligned by name. Where names disagree the
//      aligner looks ahead up to `window` ops on both sides for the nearest point where they
//      agree again (this covers a constant shift, an inserted or a missing op); what it skips
//      is reported, never a reason to stop.
// 3. Device ops (kernel, memcpy, memset) join their launching host op: device op -> runtime
//    call by correlation or `ac2g` flow (the parent the device linker gave it), runtime call ->
//    the innermost host op around it whose correlation id equals the call's `External id`,
//    else the innermost host op around it (interval alone); without a launch, the op whose
//    correlation id is the device op's `External id`. Launches are recognized by correlation
//    and flow, not by names, so graph launches, cooperative launches, Triton and HIP work.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tracemodel/config.hpp"
#include "tracemodel/model/execution_trace.hpp"
#include "tracemodel/model/table.hpp"

TRACEMODEL_BEGIN_NAMESPACE

struct et_link_options {
  std::string iteration_prefix = "ProfilerStep";
  std::size_t window = 32;  ///< ops looked ahead on each side when names disagree
};

/// How a device op found its host op.
enum class attach_by : std::uint8_t { correlation, external_id, interval };
inline constexpr std::string_view attach_by_names[] = {"correlation", "external_id", "interval"};

struct et_device_op {
  event_index device = no_event;
  event_index host = no_event;  ///< the launching host op
  std::size_t node = 0;  ///< the execution-trace node it joins (the host op's, or an ancestor's)
  attach_by how = attach_by::correlation;
};

struct et_unmatched {
  std::size_t node = 0;  ///< index into the execution trace's nodes
  std::string reason;
};

struct et_link_result {
  std::string method;                  ///< "rf_id" or "order"
  event_index iteration = no_event;    ///< the first iteration annotation used, if any
  std::size_t iterations = 0;          ///< iteration annotations named in both traces
  std::vector<event_index> node_host;  ///< per node: the matched host op, or no_event
  std::size_t op_nodes = 0;            ///< nodes that are ops (not process/thread annotations)
  std::size_t matched = 0;
  std::vector<et_unmatched> unmatched;   ///< op nodes without a host op, with the reason
  std::vector<et_device_op> device_ops;  ///< attached device ops
  std::size_t device_total = 0;
  std::size_t orphaned = 0;       ///< device ops with no host op (or no matched node)
  std::size_t by[3] = {0, 0, 0};  ///< attached device ops per `attach_by`
};

namespace detail {
template <class Schema>
bool is_host_op(const basic_event_table<Schema>& t, event_index i) {
  return t.events[i].template is<event_kind::op>();
}
template <class Schema>
std::int64_t record_function_id(const basic_event_table<Schema>& t, event_index i) {
  for (const attribute& a : t.attrs_of(t.events[i]))
    if (t.strings.view(a.key) == "Record function id")
      return a.type == attr_type::unsigned_integer ? static_cast<std::int64_t>(a.u) : a.i;
  return -1;
}

/// Aligns two name sequences (keys) greedily, resynchronizing within a window; returns the
/// matched pairs (a index, b index).
inline std::vector<std::pair<std::size_t, std::size_t>> align_by_name(
    const std::vector<std::uint32_t>& a, const std::vector<std::uint32_t>& b, std::size_t window) {
  std::vector<std::pair<std::size_t, std::size_t>> out;
  std::size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (a[i] == b[j]) {
      out.emplace_back(i++, j++);
      continue;
    }
    // Where the names agree again: among the points within the window, the one followed by
    // the longest run of agreeing names (up to 8), then the nearest (fewest ops skipped), then
    // the one that skips fewer execution-trace ops.
    constexpr std::size_t enough = 8;
    std::size_t best_run = 0, best_d = 0, best_a = 0, best_b = 0;
    for (std::size_t da = 0; da <= window && i + da < a.size(); ++da)
      for (std::size_t db = 0; db <= window && j + db < b.size(); ++db) {
        if ((da == 0 && db == 0) || a[i + da] != b[j + db]) continue;
        std::size_t run = 1;
        while (run < enough && i + da + run < a.size() && j + db + run < b.size() &&
               a[i + da + run] == b[j + db + run])
          ++run;
        const std::size_t d = da + db;
        if (run > best_run || (run == best_run && (d < best_d || (d == best_d && da < best_a)))) {
          best_run = run;
          best_d = d;
          best_a = da;
          best_b = db;
        }
      }
    const bool found = best_run > 0;
    if (found) {
      i += best_a;
      j += best_b;
    }
    if (!found) ++i;  // this node has no counterpart near here
  }
  return out;
}
}  // namespace detail

template <class Schema>
et_link_result link_execution_trace(const execution_trace& et, const basic_event_table<Schema>& t,
                                    const et_link_options& o = {}) {
  et_link_result r;
  r.node_host.assign(et.nodes.size(), no_event);
  // ---- the iteration ----
  std::int64_t lo = std::numeric_limits<std::int64_t>::min(),
               hi = std::numeric_limits<std::int64_t>::max();
  {
    std::unordered_map<std::string_view, bool> et_names;
    for (const et_node& n : et.nodes)
      if (std::string_view(n.name).starts_with(o.iteration_prefix)) et_names[n.name] = true;
    for (event_index i = 0; i < t.size() && !o.iteration_prefix.empty(); ++i) {
      if (!detail::is_host_op(t, i)) continue;
      const std::string_view name = t.name(i);
      if (name.starts_with(o.iteration_prefix) && et_names.count(name) != 0) {
        if (r.iterations++ == 0) {
          r.iteration = i;
          lo = t.events[i].start_ns;
          hi = t.events[i].end_ns();
        }
        lo = std::min(lo, t.events[i].start_ns);
        hi = std::max(hi, t.events[i].end_ns());
      }
    }
  }
  auto in_iteration = [&](event_index i) {
    return t.events[i].start_ns >= lo && t.events[i].start_ns <= hi;
  };

  // ---- host ops per thread, in start order ----
  std::map<thread_key, std::vector<event_index>> host;
  std::vector<thread_key> host_threads;  // in order of first appearance
  bool host_has_rf = false;
  for (event_index i = 0; i < t.size(); ++i) {
    if (!detail::is_host_op(t, i) || !in_iteration(i)) continue;
    auto [it, inserted] = host.try_emplace(t.events[i].tid);
    if (inserted) host_threads.push_back(t.events[i].tid);
    it->second.push_back(i);
  }
  for (auto& [tid, v] : host) {
    std::stable_sort(v.begin(), v.end(), [&t](event_index a, event_index b) {
      return t.events[a].start_ns < t.events[b].start_ns;
    });
    for (event_index i : v) host_has_rf = host_has_rf || detail::record_function_id(t, i) >= 0;
  }
  std::vector<std::size_t> op_nodes;
  bool et_has_rf = false;
  for (std::size_t k = 0; k < et.nodes.size(); ++k) {
    if (et.nodes[k].synthetic) continue;
    op_nodes.push_back(k);
    et_has_rf = et_has_rf || et.nodes[k].rf_id > 0;
  }
  r.op_nodes = op_nodes.size();

  if (host_has_rf && et_has_rf) {
    // ---- exact, by RecordFunction id ----
    r.method = "rf_id";
    std::unordered_map<std::int64_t, event_index> by_rf;
    for (const auto& [tid, v] : host)
      for (event_index i : v)
        if (const std::int64_t rf = detail::record_function_id(t, i); rf >= 0) by_rf.emplace(rf, i);
    for (std::size_t k : op_nodes) {
      const auto it = by_rf.find(et.nodes[k].rf_id);
      if (it != by_rf.end()) r.node_host[k] = it->second;
    }
  } else {
    // ---- by order and name, per thread ----
    r.method = "order";
    std::map<std::int64_t, std::vector<std::size_t>> et_by_tid;
    std::vector<std::int64_t> et_threads;
    for (std::size_t k : op_nodes) {
      auto [it, inserted] = et_by_tid.try_emplace(et.nodes[k].tid);
      if (inserted) et_threads.push_back(et.nodes[k].tid);
      it->second.push_back(k);
    }
    std::sort(et_threads.begin(), et_threads.end());
    // Names as small integers shared by both sides.
    std::unordered_map<std::string_view, std::uint32_t> keys;
    auto key = [&keys](std::string_view s) {
      return keys.try_emplace(s, static_cast<std::uint32_t>(keys.size())).first->second;
    };
    std::vector<thread_key> used_threads;
    for (std::size_t rank = 0; rank < et_threads.size(); ++rank) {
      const std::int64_t etid = et_threads[rank];
      auto& nodes = et_by_tid[etid];
      std::sort(nodes.begin(), nodes.end(),
                [&et](std::size_t a, std::size_t b) { return et.nodes[a].id < et.nodes[b].id; });
      // The host thread: the same id when one exists, else the unused thread whose op names
      // overlap this thread's most (threads the program never named, like Kineto's
      // "PyTorch Profiler" lane, then drop out by themselves).
      const std::vector<event_index>* ops = nullptr;
      if (const auto it = host.find(static_cast<thread_key>(etid)); it != host.end()) {
        ops = &it->second;
        used_threads.push_back(it->first);
      } else {
        std::unordered_map<std::string_view, std::size_t> want;
        for (std::size_t k : nodes) ++want[et.nodes[k].name];
        std::size_t best = 0;
        thread_key best_tid = 0;
        for (thread_key h : host_threads) {
          if (std::find(used_threads.begin(), used_threads.end(), h) != used_threads.end())
            continue;
          std::unordered_map<std::string_view, std::size_t> left = want;
          std::size_t score = 0;
          for (event_index i : host[h])
            if (auto w = left.find(t.name(i)); w != left.end() && w->second > 0) {
              --w->second;
              ++score;
            }
          if (score > best) {
            best = score;
            best_tid = h;
          }
        }
        if (best > 0) {
          ops = &host[best_tid];
          used_threads.push_back(best_tid);
        }
      }
      if (ops == nullptr) continue;
      std::vector<std::uint32_t> a, b;
      a.reserve(nodes.size());
      b.reserve(ops->size());
      for (std::size_t k : nodes) a.push_back(key(et.nodes[k].name));
      for (event_index i : *ops) b.push_back(key(t.name(i)));
      for (const auto& [x, y] : detail::align_by_name(a, b, o.window))
        r.node_host[nodes[x]] = (*ops)[y];
    }
  }
  for (std::size_t k : op_nodes) {
    if (r.node_host[k] != no_event) {
      ++r.matched;
      continue;
    }
    std::string why;
    if (r.method == "rf_id")
      why = "no host op has Record function id " + std::to_string(et.nodes[k].rf_id);
    else
      why = "no host op named \"" + et.nodes[k].name + "\" at this point of thread " +
            std::to_string(et.nodes[k].tid) + "'s order";
    r.unmatched.push_back({k, std::move(why)});
  }

  // ---- device ops ----
  std::unordered_map<event_index, std::size_t> node_of_host;
  for (std::size_t k = 0; k < et.nodes.size(); ++k)
    if (r.node_host[k] != no_event) node_of_host.emplace(r.node_host[k], k);
  std::unordered_map<std::uint64_t, event_index> op_by_correlation;
  for (event_index i = 0; i < t.size(); ++i)
    if (const auto* op = t.events[i].template get_if<event_kind::op>();
        op != nullptr && op->correlation_id != 0)
      op_by_correlation.emplace(op->correlation_id, i);
  // Every host op per (process, thread), in start order, for covering-op queries.
  std::map<std::pair<process_key, thread_key>, std::vector<event_index>> ops_of_thread;
  for (event_index i = 0; i < t.size(); ++i)
    if (detail::is_host_op(t, i)) ops_of_thread[{t.events[i].pid, t.events[i].tid}].push_back(i);
  for (auto& [k, v] : ops_of_thread)
    std::stable_sort(v.begin(), v.end(), [&t](event_index a, event_index b) {
      return t.events[a].start_ns < t.events[b].start_ns;
    });
  auto covering_op = [&](event_index call) -> event_index {
    const auto it = ops_of_thread.find({t.events[call].pid, t.events[call].tid});
    if (it == ops_of_thread.end()) return no_event;
    const auto& v = it->second;
    const std::int64_t s0 = t.events[call].start_ns, e0 = t.events[call].end_ns();
    auto pos = std::upper_bound(v.begin(), v.end(), s0, [&t](std::int64_t x, event_index a) {
      return x < t.events[a].start_ns;
    });
    if (pos == v.begin()) return no_event;
    // The last op started by then; if it does not cover the call, an op that does is one of
    // its enclosing ops (ops nest).
    for (event_index h = *(pos - 1); h != no_event; h = t.events[h].parent) {
      if (!detail::is_host_op(t, h)) continue;
      const std::int64_t he = t.events[h].end_ns();
      if (t.events[h].start_ns <= s0 && (he == no_end_ns || he >= e0)) return h;
    }
    return no_event;
  };
  for (event_index i = 0; i < t.size(); ++i) {
    const auto* d = t.events[i].template get_if<event_kind::device_activity>();
    if (d == nullptr ||
        (d->activity != activity_type::kernel && d->activity != activity_type::gpu_memcpy &&
         d->activity != activity_type::gpu_memset))
      continue;
    if (!in_iteration(i)) continue;
    ++r.device_total;
    et_device_op op;
    op.device = i;
    const event_index p = t.events[i].parent;
    const auto* launch =
        p != no_event ? t.events[p].template get_if<event_kind::device_activity>() : nullptr;
    if (launch != nullptr) {
      // The innermost op of the call's thread whose interval covers the call (found by time,
      // not by the tree: the device linker may have placed the call by its External id),
      // then, among it and its enclosing ops, the innermost whose correlation id is the call's
      // External id; without one, the innermost covering op (interval alone).
      const event_index around = covering_op(p);
      if (launch->external_id != 0)
        for (event_index h = around; h != no_event; h = t.events[h].parent) {
          const auto* hop = t.events[h].template get_if<event_kind::op>();
          if (hop != nullptr && hop->correlation_id == launch->external_id) {
            op.host = h;
            op.how = attach_by::correlation;
            break;
          }
        }
      if (op.host == no_event && around != no_event) {
        op.host = around;
        op.how = attach_by::interval;
      }
    } else if (d->external_id != 0) {
      const auto it = op_by_correlation.find(d->external_id);
      if (it != op_by_correlation.end()) {
        op.host = it->second;
        op.how = attach_by::external_id;
      }
    }
    // The execution-trace node: the host op's, or its nearest matched ancestor's.
    bool joined = false;
    for (event_index h = op.host; h != no_event && !joined; h = t.events[h].parent) {
      if (const auto it = node_of_host.find(h); it != node_of_host.end()) {
        op.node = it->second;
        joined = true;
      }
    }
    if (!joined) {
      ++r.orphaned;
      continue;
    }
    ++r.by[static_cast<std::size_t>(op.how)];
    r.device_ops.push_back(op);
  }
  return r;
}

TRACEMODEL_END_NAMESPACE
