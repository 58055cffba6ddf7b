// tracemodel/algo — the forward/backward linker.
//
//   tracemodel::link_forward_backward(table);  // fwd_bwd links at the front of table.links
//
// A backward op (one with a forward thread id) links to the forward op it was made for. The
// rules, as newest PyTorch writes its `fwdbwd` flows:
//  1. the annotation that wraps a backward function (PyTorch names it
//     "autograd::engine::evaluate_function: ...") takes the sequence number and forward thread
//     id of the backward op that follows it on its thread (PyTorch does this when it
//     materializes);
//  2. the ops with a sequence number, in order of start time (equal starts in table order), are
//     forward ops (no forward thread id) or backward ops; a backward op's key is its forward
//     thread and sequence number, a forward op's its own thread and sequence number (thread
//     ids as the `thread_resolver` policy resolves them);
//  3. they are visited in order of end time (equal ends: the one that started later first; ops
//     that never ended last); a forward op takes its key, unless a forward op that started
//     later holds it already (nested forward ops share their caller's sequence number: the
//     innermost launches the backward node); a backward op links to the forward op that holds
//     its key then, and the key is consumed, so every forward op gets one link, to the innermost
//     backward op (which ends before its wrapper). Flow ids count from 1 in that order.
// Keys are true pairs, not PyTorch's 16+48-bit packing.
// What it writes: the keys of the wrappers of rule 1 (`sequence_number`, `fwd_thread_id`); the
// links, which replace the forward/backward links of `table.links` and come before the others.
// It returns `fwd_bwd_stats`.
//
// Policies (members of a policy struct; see `pytorch_links`; the concept is in
// algo/concepts.hpp):
//   wrapper_prefix     the wrapper annotation's name prefix ("" switches rule 1 off)
//   visit_by_end       true: rule 3's order (newest PyTorch); false: start time
//   consume_on_match   true: a key is consumed by its first match (newest PyTorch)
//   thread_resolver    how a backward op's forward thread id names a thread of the table
//                      (`runtime_thread_ids`, below)
//
// `analyze` (algo/analyze.hpp) runs the same rules on a second thread beside the tree builder.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <string_view>
#include <utility>
#include <vector>

#include "tracemodel/algo/concepts.hpp"
#include "tracemodel/config.hpp"
#include "tracemodel/detail/big_allocator.hpp"
#include "tracemodel/detail/flat_map.hpp"
#include "tracemodel/model/table.hpp"

TRACEMODEL_BEGIN_NAMESPACE

/// `Fwd thread id` is the recording runtime's own small thread id (1 for the first thread that
/// recorded), while a trace file's `tid` is the operating system's. An id is used as is when a
/// thread with that id recorded forward ops (in the backward op's process); otherwise it names
/// the k-th thread, in order of first appearance, among the threads that recorded forward ops.
struct runtime_thread_ids {
  /// `forward_threads`: threads (tids) of one process that recorded forward ops, in order of
  /// first appearance. Returns the tid that `fwd_thread_id` stands for.
  static thread_key resolve(std::uint64_t fwd_thread_id,
                            const std::vector<thread_key>& forward_threads) noexcept {
    for (thread_key t : forward_threads)
      if (t == fwd_thread_id) return t;
    if (fwd_thread_id >= 1 && fwd_thread_id <= forward_threads.size())
      return forward_threads[fwd_thread_id - 1];
    return fwd_thread_id;
  }
};
/// Uses the id as is (tables whose thread ids are the runtime's own).
struct literal_thread_ids {
  static thread_key resolve(std::uint64_t fwd_thread_id, const std::vector<thread_key>&) noexcept {
    return fwd_thread_id;
  }
};

/// Newest PyTorch (the default).
struct pytorch_links {
  using policy_kind = fwd_bwd_policy_kind;
  static constexpr std::string_view wrapper_prefix = "autograd::engine::evaluate_function: ";
  static constexpr bool visit_by_end = true;
  static constexpr bool consume_on_match = true;
  using thread_resolver = runtime_thread_ids;
};
/// PyTorch 1.13's (disabled) algorithm: start order, keys kept, so every backward op that finds
/// a forward op links (wrappers too).
struct pytorch_1_13_links : pytorch_links {
  static constexpr bool visit_by_end = false;
  static constexpr bool consume_on_match = false;
};

/// What the forward/backward linker did.
struct fwd_bwd_stats {
  std::size_t links = 0;         ///< forward/backward links (at the front of `table.links`)
  std::size_t backward_ops = 0;  ///< ops with a key and a forward thread id (wrappers too)
  std::size_t wrappers = 0;      ///< wrappers that took the keys of their backward op (rule 1)
};

namespace detail {
/// `t.links` with its forward/backward links replaced by `fwd_bwd`, which come first.
template <class Schema, class Links>
void put_fwd_bwd_links(basic_event_table<Schema>& t, const Links& fwd_bwd) {
  std::erase_if(t.links, [](const flow_link& l) { return l.kind == flow_kind::fwd_bwd; });
  t.links.insert(t.links.begin(), fwd_bwd.begin(), fwd_bwd.end());
}
}  // namespace detail

struct link_forward_backward_fn {
  template <class Schema, class Policy = pytorch_links>
  fwd_bwd_stats operator()(basic_event_table<Schema>& t, Policy = {}) const {
    if constexpr (detail::check_fwd_bwd_policy<Policy>())
      return link<Policy>(t);
    else
      return {};
  }

 private:
  template <class Policy, class Schema>
  static fwd_bwd_stats link(basic_event_table<Schema>& t) {
    fwd_bwd_stats s;
    detail::scratch_vector<flow_link> links;  // (large arrays: memory.hpp)
    if constexpr (Schema::template contains<event_kind::op>) {
      using thread = std::pair<process_key, thread_key>;
      constexpr std::int64_t open = std::numeric_limits<std::int64_t>::max();
      auto op_of = [&](event_index i) -> auto& {
        return t.events[i].template get<event_kind::op>();
      };
      detail::scratch_vector<event_index> ops;  // in start order
      for (std::size_t i = 0; i < t.size(); ++i)
        if (t.events[i].template is<event_kind::op>()) ops.push_back(static_cast<event_index>(i));
      auto by_start = [&](event_index a, event_index b) {
        return t.events[a].start_ns < t.events[b].start_ns;
      };
      if (!std::is_sorted(ops.begin(), ops.end(), by_start))  // (tables usually are)
        std::stable_sort(ops.begin(), ops.end(), by_start);

      // Rule 1.
      if constexpr (!Policy::wrapper_prefix.empty()) {
        std::map<thread, event_index> previous;  // each thread's last op
        for (const event_index i : ops) {
          const auto& e = t.events[i];
          const auto& op = op_of(i);
          const bool backward = op.scope == op_scope::backward_function || op.fwd_thread_id > 0;
          const auto [it, first] = previous.try_emplace({e.pid, e.tid}, i);
          if (!first) {
            auto& w = op_of(it->second);
            if (backward && w.scope == op_scope::function &&
                t.strings.view(w.name).starts_with(Policy::wrapper_prefix)) {
              w.sequence_number = op.sequence_number;
              w.fwd_thread_id = op.fwd_thread_id;
              ++s.wrappers;
            }
            it->second = i;
          }
        }
      }

      // Rule 2.
      struct record {
        event_index index;
        thread key_thread;  // the thread whose forward ops the key names (resolved below)
        std::int64_t seq, start, end;
        bool forward;
      };
      detail::scratch_vector<record> records;
      std::map<process_key, std::vector<thread_key>> forward_threads;  // by first appearance
      for (const event_index i : ops) {
        const auto& e = t.events[i];
        const auto& op = op_of(i);
        if (op.sequence_number < 0) continue;
        const bool forward = op.fwd_thread_id == 0;
        records.push_back({i,
                           {e.pid, e.tid},
                           op.sequence_number,
                           e.start_ns,
                           op.end_ns == no_end_ns ? open : op.end_ns,
                           forward});
        if (!forward) continue;
        auto& threads = forward_threads[e.pid];
        if (std::find(threads.begin(), threads.end(), e.tid) == threads.end())
          threads.push_back(e.tid);
      }
      for (record& r : records) {
        if (r.forward) continue;
        ++s.backward_ops;
        const thread_key fwd = op_of(r.index).fwd_thread_id;
        r.key_thread.second =
            Policy::thread_resolver::resolve(fwd, forward_threads[r.key_thread.first]);
      }

      // Rule 3.
      detail::scratch_vector<std::size_t> visit(records.size());
      for (std::size_t k = 0; k < visit.size(); ++k) visit[k] = k;
      if constexpr (Policy::visit_by_end)
        std::sort(visit.begin(), visit.end(), [&](std::size_t a, std::size_t b) {
          return records[a].end != records[b].end ? records[a].end < records[b].end : a > b;
        });
      struct holder {
        event_index index;
        std::int64_t start;
      };
      // Each thread's keys, by sequence number; a consumed key holds no op.
      std::map<thread, detail::flat_map<holder>> keys;
      for (const std::size_t k : visit) {
        const record& r = records[k];
        auto& of_thread = keys[r.key_thread];
        const auto seq = static_cast<std::uint64_t>(r.seq);
        if (r.forward) {
          const auto [h, first] = of_thread.try_emplace(seq, holder{r.index, r.start});
          if (!first && (h->index == no_event || r.start >= h->start)) *h = {r.index, r.start};
        } else if (holder* h = of_thread.find(seq); h != nullptr && h->index != no_event) {
          links.push_back({flow_kind::fwd_bwd, links.size() + 1, h->index, r.index});
          if constexpr (Policy::consume_on_match) h->index = no_event;
        }
      }
    }
    s.links = links.size();
    detail::put_fwd_bwd_links(t, links);
    return s;
  }
};

/// Links forward ops to backward ops (see the header comment).
inline constexpr link_forward_backward_fn link_forward_backward{};

TRACEMODEL_END_NAMESPACE
