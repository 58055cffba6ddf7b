// tracemodel/algo — the forward/backward linker.
//
//   auto links = tracemodel::link_forward_backward(table);  // a vector of flow_link
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
#include "tracemodel/detail/big_allocator.hpp"
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

namespace detail {
struct forward_slot {
  std::int64_t start = 0;
  event_index index = no_event;
};
/// Forward-op slots of one thread, indexed by sequence number (an array when the numbers are
/// dense, a hash map when they are not).
class sequence_slots {
 public:
  void reserve_dense(std::int64_t max_seq) {
    dense_.assign(static_cast<std::size_t>(max_seq) + 1, forward_slot{});
  }
  void use_sparse() { sparse_mode_ = true; }
  forward_slot& operator[](std::int64_t seq) {
    if (!sparse_mode_) return dense_[static_cast<std::size_t>(seq)];
    return *sparse_.try_emplace(static_cast<std::uint64_t>(seq), forward_slot{}).first;
  }

 private:
  bool sparse_mode_ = false;
  scratch_vector<forward_slot> dense_;
  flat_map<forward_slot> sparse_;
};
}  // namespace detail

struct link_forward_backward_fn {
  template <class Schema, class Policy = pytorch_links>
  table_vector<flow_link> operator()(basic_event_table<Schema>& t, Policy = {}) const {
    static_assert(fwd_bwd_policy<Policy>,
                  "tracemodel::link_forward_backward(table, P): P must model fwd_bwd_policy "
                  "(algo/fwd_bwd.hpp)");
    table_vector<flow_link> links;
    links.reserve(t.size() / 2);
    if constexpr (!Schema::template contains<event_kind::op>) {
      return links;
    } else {
      // One read pass: the ops, compactly, in start order.
      struct op_rec {
        std::int64_t start;
        std::int64_t end;
        std::int64_t seq;
        std::uint64_t fwd;
        event_index index;
        std::uint32_t thread;  // dense (pid, tid)
        op_scope scope;
      };
      detail::scratch_vector<op_rec> ops;
      ops.reserve(t.size());
      detail::pair_ids threads;
      bool sorted = true;
      for (std::size_t i = 0; i < t.size(); ++i) {
        const auto& e = t.events[i];
        const auto* op = e.template get_if<event_kind::op>();
        if (op == nullptr) continue;
        const std::int64_t end = e.end_ns();
        sorted = sorted && (ops.empty() || ops.back().start <= e.start_ns);
        ops.push_back({e.start_ns, end == no_end_ns ? std::numeric_limits<std::int64_t>::max() : end,
                       op->sequence_number, op->fwd_thread_id, static_cast<event_index>(i),
                       threads.id(static_cast<std::uint64_t>(e.pid), e.tid), op->scope});
      }
      if (!sorted)
        std::stable_sort(ops.begin(), ops.end(),
                         [](const op_rec& a, const op_rec& b) { return a.start < b.start; });

      // 1. Wrappers inherit from the backward op that follows them on their thread.
      if constexpr (!Policy::wrapper_prefix.empty()) {
        std::vector<std::size_t> last(threads.size(), ops.size());
        for (std::size_t k = 0; k < ops.size(); ++k) {
          op_rec& cur = ops[k];
          const std::size_t prev = last[cur.thread];
          last[cur.thread] = k;
          if (prev == ops.size()) continue;
          op_rec& w = ops[prev];
          const bool backward = cur.scope == op_scope::backward_function || cur.fwd > 0;
          if (!backward || w.scope != op_scope::function) continue;
          auto& wf = t.events[w.index].template get<event_kind::op>();
          if (!t.strings.view(wf.name).starts_with(Policy::wrapper_prefix)) continue;
          wf.sequence_number = w.seq = cur.seq;
          wf.fwd_thread_id = w.fwd = cur.fwd;
        }
      }

      // 2. Threads that recorded forward ops, per process, in order of first appearance.
      std::vector<std::pair<process_key, std::vector<thread_key>>> forward_threads;
      auto forward_threads_of = [&](process_key pid) -> std::vector<thread_key>& {
        for (auto& [p, v] : forward_threads)
          if (p == pid) return v;
        return forward_threads.emplace_back(pid, std::vector<thread_key>{}).second;
      };
      std::vector<bool> seen_forward(threads.size(), false);
      for (const op_rec& o : ops) {
        if (o.seq < 0 || o.fwd != 0 || seen_forward[o.thread]) continue;
        seen_forward[o.thread] = true;
        const auto& [pid, tid] = threads.pair(o.thread);
        forward_threads_of(static_cast<process_key>(pid)).push_back(tid);
      }

      // 3. The ops with a sequence number, each with the thread its key names, sorted by the
      //    visit order (end time, ties: the later start first; or start time, ties in table
      //    order), so the visit is sequential.
      struct keyed {
        std::int64_t seq;
        std::int64_t start;
        event_index index;
        std::uint32_t thread;  // forward op: its thread; backward op: the one its key names
        bool forward;
      };
      detail::scratch_vector<keyed> with_seq;
      detail::scratch_vector<std::int64_t> order_key;
      with_seq.reserve(ops.size());
      order_key.reserve(ops.size());
      for (const op_rec& o : ops) {
        if (o.seq < 0) continue;
        std::uint32_t th = o.thread;
        if (o.fwd > 0) {
          const auto& [pid, tid] = threads.pair(o.thread);
          const thread_key r = Policy::thread_resolver::resolve(
              o.fwd, forward_threads_of(static_cast<process_key>(pid)));
          th = threads.id(pid, r);
        }
        with_seq.push_back({o.seq, o.start, o.index, th, o.fwd == 0});
        order_key.push_back(Policy::visit_by_end ? o.end : o.start);
      }
      ops = {};
      // Ties in the visit key go to the op that started later: with equal ends that is the
      // inner one, so a backward op whose wrapper ends in the same nanosecond still gets the
      // link (the order is reversed here, and the sort below is stable).
      if constexpr (Policy::visit_by_end) {
        std::reverse(with_seq.begin(), with_seq.end());
        std::reverse(order_key.begin(), order_key.end());
      }
      {
        const auto order = detail::stable_order(order_key);
        order_key = {};
        detail::scratch_vector<keyed> sorted(with_seq.size());
        for (std::size_t r = 0; r < order.size(); ++r) sorted[r] = with_seq[order[r]];
        with_seq.swap(sorted);
      }
      // Slots per thread: arrays over the sequence numbers unless they are sparse. A slot keeps
      // the forward op and its start, so the visit never goes back to the table.
      std::vector<std::int64_t> max_seq(threads.size(), -1);
      std::vector<std::size_t> count(threads.size(), 0);
      for (const keyed& k : with_seq) {
        max_seq[k.thread] = std::max(max_seq[k.thread], k.seq);
        ++count[k.thread];
      }
      std::vector<detail::sequence_slots> slots(threads.size());
      for (std::size_t th = 0; th < slots.size(); ++th) {
        if (max_seq[th] < 0) continue;
        if (static_cast<std::uint64_t>(max_seq[th]) <= 4 * count[th] + 4096)
          slots[th].reserve_dense(max_seq[th]);
        else
          slots[th].use_sparse();
      }
      std::uint64_t next_id = 1;
      for (const keyed& k : with_seq) {
        detail::forward_slot& slot = slots[k.thread][k.seq];
        if (k.forward) {
          if (slot.index == no_event || k.start >= slot.start) slot = {k.start, k.index};
        } else if (slot.index != no_event) {
          links.push_back({flow_kind::fwd_bwd, next_id++, slot.index, k.index});
          if constexpr (Policy::consume_on_match) slot.index = no_event;
        }
      }
      return links;
    }
  }
};

/// Links forward ops to backward ops (see the header comment).
inline constexpr link_forward_backward_fn link_forward_backward{};

TRACEMODEL_END_NAMESPACE
