// tracemodel/algo — the forward/backward linker.
//
//   std::vector<flow_link> links = tracemodel::link_forward_backward(table);
//
// A backward op (one with a forward thread id) links to the forward op with the same
// (forward thread, sequence number). Among forward ops sharing a key, the one that started last
// wins (nested forward ops share their caller's sequence number; the innermost launches the
// backward node). By default, as newest PyTorch: ops are visited in order of end time and a key
// is consumed by its first match, so every forward op gets one link, to the innermost backward
// op (which ends before its `evaluate_function` wrapper), and the links equal the `fwdbwd` flows
// PyTorch writes. Flow ids count from 1 in the order links are made. Keys are true pairs.
//
// Before linking, the annotation that wraps a backward function (PyTorch names it
// "autograd::engine::evaluate_function: ...") inherits sequence number and forward thread id
// from the backward op that follows it on its thread (PyTorch does this when it materializes).
//
// Policies (members of a policy struct; see `pytorch_links`):
//   wrapper_prefix     the wrapper annotation's name prefix ("" switches inheritance off)
//   visit_by_end       true: visit in order of end time (newest PyTorch); false: start time
//   consume_on_match   true: a key is removed by its first match (newest PyTorch)
//   thread_resolver    how a backward op's forward thread id names a thread of the table
//                      (`runtime_thread_ids`, below)
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string_view>
#include <vector>

#include "tracemodel/config.hpp"
#include "tracemodel/detail/flat_map.hpp"
#include "tracemodel/detail/radix_sort.hpp"
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

template <class P>
concept fwd_bwd_policy = requires(std::uint64_t id, const std::vector<thread_key>& threads) {
  { P::wrapper_prefix } -> std::convertible_to<std::string_view>;
  { P::visit_by_end } -> std::convertible_to<bool>;
  { P::consume_on_match } -> std::convertible_to<bool>;
  { P::thread_resolver::resolve(id, threads) } -> std::same_as<thread_key>;
};

struct link_forward_backward_fn {
  template <class Schema, class Policy = pytorch_links>
  std::vector<flow_link> operator()(basic_event_table<Schema>& t, Policy = {}) const {
    static_assert(fwd_bwd_policy<Policy>,
                  "tracemodel::link_forward_backward(table, P): P must model fwd_bwd_policy "
                  "(algo/fwd_bwd.hpp)");
    std::vector<flow_link> links;
    if constexpr (!Schema::template contains<event_kind::op>) {
      return links;
    } else {
      const std::size_t n = t.size();
      std::vector<std::int64_t> starts(n);
      for (std::size_t i = 0; i < n; ++i) starts[i] = t.events[i].start_ns;
      const std::vector<event_index> by_start = detail::stable_order(starts);

      // 1. Wrappers inherit from the backward op that follows them on their thread.
      if constexpr (!Policy::wrapper_prefix.empty()) {
        detail::pair_ids threads;
        std::vector<event_index> last;  // previous op per thread
        for (event_index i : by_start) {
          auto* op = t.events[i].template get_if<event_kind::op>();
          if (op == nullptr) continue;
          const std::uint32_t th = threads.id(static_cast<std::uint64_t>(t.events[i].pid),
                                              t.events[i].tid);
          if (th == last.size()) last.push_back(no_event);
          const event_index prev = last[th];
          last[th] = i;
          if (prev == no_event) continue;
          auto& w = t.events[prev].template get<event_kind::op>();
          const bool backward = op->scope == op_scope::backward_function || op->fwd_thread_id > 0;
          if (backward && w.scope == op_scope::function &&
              t.strings.view(w.name).starts_with(Policy::wrapper_prefix)) {
            w.sequence_number = op->sequence_number;
            w.fwd_thread_id = op->fwd_thread_id;
          }
        }
      }

      // 2. Threads that recorded forward ops, per process, in order of first appearance.
      detail::pair_ids thread_ids;  // (pid, tid) -> dense id
      std::vector<std::pair<process_key, std::vector<thread_key>>> forward_threads;
      auto forward_threads_of = [&](process_key pid) -> std::vector<thread_key>& {
        for (auto& [p, v] : forward_threads)
          if (p == pid) return v;
        return forward_threads.emplace_back(pid, std::vector<thread_key>{}).second;
      };
      auto is_forward = [](const extra_fields<event_kind::op>& op) {
        return op.sequence_number >= 0 && op.fwd_thread_id == 0;
      };
      for (event_index i : by_start) {
        const auto* op = t.events[i].template get_if<event_kind::op>();
        if (op == nullptr || !is_forward(*op)) continue;
        auto& v = forward_threads_of(t.events[i].pid);
        if (std::find(v.begin(), v.end(), t.events[i].tid) == v.end()) v.push_back(t.events[i].tid);
      }

      // 3. Visit ops with a sequence number in the policy's order.
      std::vector<event_index> order;
      if constexpr (Policy::visit_by_end) {
        std::vector<std::int64_t> ends(n);
        for (std::size_t r = 0; r < n; ++r) {
          const std::int64_t e = t.events[by_start[r]].end_ns();
          ends[r] = e == no_end_ns ? std::numeric_limits<std::int64_t>::max() : e;
        }
        const std::vector<event_index> r = detail::stable_order(ends);
        order.resize(n);
        for (std::size_t k = 0; k < n; ++k) order[k] = by_start[r[k]];
      } else {
        order = by_start;
      }
      detail::pair_ids keys;             // (thread id, sequence number) -> slot
      std::vector<event_index> slot;     // the forward op holding each key
      std::uint64_t next_id = 1;
      for (event_index i : order) {
        const auto& e = t.events[i];
        const auto* op = e.template get_if<event_kind::op>();
        if (op == nullptr || op->sequence_number < 0) continue;
        thread_key tid = e.tid;
        if (op->fwd_thread_id > 0)
          tid = Policy::thread_resolver::resolve(op->fwd_thread_id, forward_threads_of(e.pid));
        const std::uint32_t th = thread_ids.id(static_cast<std::uint64_t>(e.pid), tid);
        const std::uint32_t k =
            keys.id(th, static_cast<std::uint64_t>(op->sequence_number));
        if (k == slot.size()) slot.push_back(no_event);
        if (op->fwd_thread_id == 0) {
          if (slot[k] == no_event || e.start_ns >= t.events[slot[k]].start_ns) slot[k] = i;
        } else if (slot[k] != no_event) {
          links.push_back({flow_kind::fwd_bwd, next_id++, slot[k], i});
          if constexpr (Policy::consume_on_match) slot[k] = no_event;
        }
      }
      return links;
    }
  }
};

/// Links forward ops to backward ops (see the header comment).
inline constexpr link_forward_backward_fn link_forward_backward{};

TRACEMODEL_END_NAMESPACE
