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

namespace detail {
/// The join of one execution trace with one host/device trace, step by step (see the header
/// comment).
template <class Schema>
class et_linker {
 public:
  et_linker(const execution_trace& et, const basic_event_table<Schema>& t, const et_link_options& o)
      : et_(et), t_(t), o_(o) {}

  et_link_result run() {
    r_.node_host.assign(et_.nodes.size(), no_event);
    find_iteration();
    collect_ops();
    if (host_has_rf_ && et_has_rf_)
      match_by_rf();
    else
      match_by_order();
    report_unmatched();
    attach_device_ops();
    return std::move(r_);
  }

 private:
  /// Step 1: the span of the host's iteration annotations that the execution trace names.
  void find_iteration() {
    std::unordered_map<std::string_view, bool> et_names;
    for (const et_node& n : et_.nodes)
      if (std::string_view(n.name).starts_with(o_.iteration_prefix)) et_names[n.name] = true;
    for (event_index i = 0; i < t_.size() && !o_.iteration_prefix.empty(); ++i) {
      if (!is_host_op(t_, i)) continue;
      const std::string_view name = t_.name(i);
      if (!name.starts_with(o_.iteration_prefix) || et_names.count(name) == 0) continue;
      if (r_.iterations++ == 0) {
        r_.iteration = i;
        lo_ = t_.events[i].start_ns;
        hi_ = t_.events[i].end_ns();
      }
      lo_ = std::min(lo_, t_.events[i].start_ns);
      hi_ = std::max(hi_, t_.events[i].end_ns());
    }
  }
  [[nodiscard]] bool in_iteration(event_index i) const {
    return t_.events[i].start_ns >= lo_ && t_.events[i].start_ns <= hi_;
  }

  /// The host ops of the iteration per thread in start order, and the execution trace's op
  /// nodes; whether both sides carry RecordFunction ids.
  void collect_ops() {
    for (event_index i = 0; i < t_.size(); ++i) {
      if (!is_host_op(t_, i) || !in_iteration(i)) continue;
      auto [it, inserted] = host_.try_emplace(t_.events[i].tid);
      if (inserted) host_threads_.push_back(t_.events[i].tid);
      it->second.push_back(i);
    }
    for (auto& [tid, v] : host_) {
      std::stable_sort(v.begin(), v.end(), [this](event_index a, event_index b) {
        return t_.events[a].start_ns < t_.events[b].start_ns;
      });
      for (event_index i : v) host_has_rf_ = host_has_rf_ || record_function_id(t_, i) >= 0;
    }
    for (std::size_t k = 0; k < et_.nodes.size(); ++k) {
      if (et_.nodes[k].synthetic) continue;
      op_nodes_.push_back(k);
      et_has_rf_ = et_has_rf_ || et_.nodes[k].rf_id > 0;
    }
    r_.op_nodes = op_nodes_.size();
  }

  /// Step 2, exactly: by RecordFunction id.
  void match_by_rf() {
    r_.method = "rf_id";
    std::unordered_map<std::int64_t, event_index> by_rf;
    for (const auto& [tid, v] : host_)
      for (event_index i : v)
        if (const std::int64_t rf = record_function_id(t_, i); rf >= 0) by_rf.emplace(rf, i);
    for (std::size_t k : op_nodes_) {
      const auto it = by_rf.find(et_.nodes[k].rf_id);
      if (it != by_rf.end()) r_.node_host[k] = it->second;
    }
  }

  /// Step 2 otherwise: by order and name, per thread.
  void match_by_order() {
    r_.method = "order";
    std::map<std::int64_t, std::vector<std::size_t>> et_by_tid;
    std::vector<std::int64_t> et_threads;
    for (std::size_t k : op_nodes_) {
      auto [it, inserted] = et_by_tid.try_emplace(et_.nodes[k].tid);
      if (inserted) et_threads.push_back(et_.nodes[k].tid);
      it->second.push_back(k);
    }
    std::sort(et_threads.begin(), et_threads.end());
    for (const std::int64_t etid : et_threads) {
      auto& nodes = et_by_tid[etid];
      std::sort(nodes.begin(), nodes.end(),
                [this](std::size_t a, std::size_t b) { return et_.nodes[a].id < et_.nodes[b].id; });
      const std::vector<event_index>* ops = host_thread_for(etid, nodes);
      if (ops == nullptr) continue;
      std::vector<std::uint32_t> a, b;
      a.reserve(nodes.size());
      b.reserve(ops->size());
      for (std::size_t k : nodes) a.push_back(key(et_.nodes[k].name));
      for (event_index i : *ops) b.push_back(key(t_.name(i)));
      for (const auto& [x, y] : align_by_name(a, b, o_.window)) r_.node_host[nodes[x]] = (*ops)[y];
    }
  }
  /// Names as small integers shared by both sides.
  std::uint32_t key(std::string_view s) {
    return keys_.try_emplace(s, static_cast<std::uint32_t>(keys_.size())).first->second;
  }
  /// The host ops of execution-trace thread `etid`: the host thread of that id when one exists,
  /// else the unused thread whose op names overlap this thread's most (threads the program never
  /// named, like Kineto's "PyTorch Profiler" lane, then drop out by themselves).
  const std::vector<event_index>* host_thread_for(std::int64_t etid,
                                                  const std::vector<std::size_t>& nodes) {
    if (const auto it = host_.find(static_cast<thread_key>(etid)); it != host_.end()) {
      used_threads_.push_back(it->first);
      return &it->second;
    }
    std::unordered_map<std::string_view, std::size_t> want;
    for (std::size_t k : nodes) ++want[et_.nodes[k].name];
    std::size_t best = 0;
    thread_key best_tid = 0;
    for (thread_key h : host_threads_) {
      if (std::find(used_threads_.begin(), used_threads_.end(), h) != used_threads_.end()) continue;
      std::unordered_map<std::string_view, std::size_t> left = want;
      std::size_t score = 0;
      for (event_index i : host_[h])
        if (auto w = left.find(t_.name(i)); w != left.end() && w->second > 0) {
          --w->second;
          ++score;
        }
      if (score > best) {
        best = score;
        best_tid = h;
      }
    }
    if (best == 0) return nullptr;
    used_threads_.push_back(best_tid);
    return &host_[best_tid];
  }

  void report_unmatched() {
    for (std::size_t k : op_nodes_) {
      if (r_.node_host[k] != no_event) {
        ++r_.matched;
        continue;
      }
      std::string why;
      if (r_.method == "rf_id")
        why = "no host op has Record function id " + std::to_string(et_.nodes[k].rf_id);
      else
        why = "no host op named \"" + et_.nodes[k].name + "\" at this point of thread " +
              std::to_string(et_.nodes[k].tid) + "'s order";
      r_.unmatched.push_back({k, std::move(why)});
    }
  }

  /// Step 3: each device op of the iteration with its host op and execution-trace node.
  void attach_device_ops() {
    for (std::size_t k = 0; k < et_.nodes.size(); ++k)
      if (r_.node_host[k] != no_event) node_of_host_.emplace(r_.node_host[k], k);
    for (event_index i = 0; i < t_.size(); ++i) {
      if (const auto* op = t_.events[i].template get_if<event_kind::op>();
          op != nullptr && op->correlation_id != 0)
        op_by_correlation_.emplace(op->correlation_id, i);
      if (is_host_op(t_, i)) ops_of_thread_[{t_.events[i].pid, t_.events[i].tid}].push_back(i);
    }
    for (auto& [k, v] : ops_of_thread_)
      std::stable_sort(v.begin(), v.end(), [this](event_index a, event_index b) {
        return t_.events[a].start_ns < t_.events[b].start_ns;
      });
    for (event_index i = 0; i < t_.size(); ++i) {
      const auto* d = t_.events[i].template get_if<event_kind::device_activity>();
      if (d == nullptr ||
          (d->activity != activity_type::kernel && d->activity != activity_type::gpu_memcpy &&
           d->activity != activity_type::gpu_memset))
        continue;
      if (!in_iteration(i)) continue;
      ++r_.device_total;
      et_device_op op = host_of_device(i, *d);
      // The execution-trace node: the host op's, or its nearest matched ancestor's.
      bool joined = false;
      for (event_index h = op.host; h != no_event && !joined; h = t_.events[h].parent) {
        if (const auto it = node_of_host_.find(h); it != node_of_host_.end()) {
          op.node = it->second;
          joined = true;
        }
      }
      if (!joined) {
        ++r_.orphaned;
        continue;
      }
      ++r_.by[static_cast<std::size_t>(op.how)];
      r_.device_ops.push_back(op);
    }
  }
  /// The host op of device op `i` (see the header comment, step 3).
  template <class Fields>
  et_device_op host_of_device(event_index i, const Fields& d) const {
    et_device_op op;
    op.device = i;
    const event_index p = t_.events[i].parent;
    const auto* launch =
        p != no_event ? t_.events[p].template get_if<event_kind::device_activity>() : nullptr;
    if (launch != nullptr) {
      // The innermost op of the call's thread whose interval covers the call (found by time,
      // not by the tree: the device linker may have placed the call by its External id), then,
      // among it and its enclosing ops, the innermost whose correlation id is the call's
      // External id; without one, the innermost covering op (interval alone).
      const event_index around = covering_op(p);
      if (launch->external_id != 0)
        for (event_index h = around; h != no_event; h = t_.events[h].parent) {
          const auto* hop = t_.events[h].template get_if<event_kind::op>();
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
    } else if (d.external_id != 0) {
      const auto it = op_by_correlation_.find(d.external_id);
      if (it != op_by_correlation_.end()) {
        op.host = it->second;
        op.how = attach_by::external_id;
      }
    }
    return op;
  }
  /// The innermost host op of the call's thread whose interval covers the call.
  event_index covering_op(event_index call) const {
    const auto it = ops_of_thread_.find({t_.events[call].pid, t_.events[call].tid});
    if (it == ops_of_thread_.end()) return no_event;
    const auto& v = it->second;
    const std::int64_t s0 = t_.events[call].start_ns, e0 = t_.events[call].end_ns();
    auto pos = std::upper_bound(v.begin(), v.end(), s0, [this](std::int64_t x, event_index a) {
      return x < t_.events[a].start_ns;
    });
    if (pos == v.begin()) return no_event;
    // The last op started by then; if it does not cover the call, an op that does is one of
    // its enclosing ops (ops nest).
    for (event_index h = *(pos - 1); h != no_event; h = t_.events[h].parent) {
      if (!is_host_op(t_, h)) continue;
      const std::int64_t he = t_.events[h].end_ns();
      if (t_.events[h].start_ns <= s0 && (he == no_end_ns || he >= e0)) return h;
    }
    return no_event;
  }

  const execution_trace& et_;
  const basic_event_table<Schema>& t_;
  const et_link_options& o_;
  et_link_result r_;
  std::int64_t lo_ = std::numeric_limits<std::int64_t>::min();
  std::int64_t hi_ = std::numeric_limits<std::int64_t>::max();
  std::map<thread_key, std::vector<event_index>> host_;  // the iteration's host ops
  std::vector<thread_key> host_threads_;                 // in order of first appearance
  std::vector<thread_key> used_threads_;                 // matched to an execution-trace thread
  bool host_has_rf_ = false, et_has_rf_ = false;
  std::vector<std::size_t> op_nodes_;
  std::unordered_map<std::string_view, std::uint32_t> keys_;
  std::unordered_map<event_index, std::size_t> node_of_host_;
  std::unordered_map<std::uint64_t, event_index> op_by_correlation_;
  // Every host op per (process, thread), in start order, for covering-op queries.
  std::map<std::pair<process_key, thread_key>, std::vector<event_index>> ops_of_thread_;
};
}  // namespace detail

/// Joins `et` with `t` (see the header comment).
template <class Schema>
et_link_result link_execution_trace(const execution_trace& et, const basic_event_table<Schema>& t,
                                    const et_link_options& o = {}) {
  return detail::et_linker<Schema>(et, t, o).run();
}

TRACEMODEL_END_NAMESPACE
