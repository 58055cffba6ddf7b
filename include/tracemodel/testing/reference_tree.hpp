// tracemodel/testing — a plain, index-based port of PyTorch's heap-based build_tree.
//
// Slow and simple on purpose: a min-heap of end times, a map from thread to the top of its
// stack, parent links and finished flags, exactly as PyTorch replays stacks. Tests check the
// fast builder (algo/tree.hpp) against it; users can check their own tree policies the same way.
// It returns parents and PyTorch's "finished" flags; it does not modify the table.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <queue>
#include <stdexcept>
#include <utility>
#include <vector>

#include "tracemodel/config.hpp"
#include "tracemodel/model/table.hpp"

TRACEMODEL_BEGIN_NAMESPACE
namespace testing {

struct reference_tree {
  std::vector<event_index> parent;
  std::vector<bool> finished;
};

/// PyTorch's build_tree on the events of `t` (stable order by start time; threads keyed by
/// (pid, tid); forward-thread fallback; events with a parent already set are skipped).
template <class Schema>
reference_tree pytorch_build_tree(const basic_event_table<Schema>& t) {
  constexpr std::int64_t no_end = std::numeric_limits<std::int64_t>::min();
  const std::size_t n = t.size();
  reference_tree r{std::vector<event_index>(n, no_event), std::vector<bool>(n, false)};
  std::vector<event_index> order(n);
  for (std::size_t i = 0; i < n; ++i) order[i] = static_cast<event_index>(i);
  std::stable_sort(order.begin(), order.end(), [&t](event_index a, event_index b) {
    return t.events[a].start_ns < t.events[b].start_ns;
  });
  for (std::size_t i = 0; i < n; ++i) r.parent[i] = t.events[i].parent;

  using key = std::pair<std::int64_t, std::uint64_t>;
  auto key_of = [&t](event_index i) { return key{t.events[i].pid, t.events[i].tid}; };
  auto end_of = [&t](event_index i) {
    const std::int64_t e = t.events[i].end_ns();
    return e == no_end_ns ? no_end : e;
  };
  std::map<key, event_index> stacks;
  using item = std::pair<std::int64_t, event_index>;
  std::priority_queue<item, std::vector<item>, std::greater<>> heap;

  auto push = [&](event_index i) {
    const auto& e = t.events[i];
    if (e.parent != no_event) return;  // placed by a linker
    auto it = stacks.find(key_of(i));
    if (it == stacks.end())
      if (const auto* op = e.template get_if<event_kind::op>(); op && op->fwd_thread_id > 0)
        it = stacks.find(key{e.pid, op->fwd_thread_id});
    if (it != stacks.end()) r.parent[i] = it->second;
    const std::int64_t end = end_of(i);
    if (end > e.start_ns) {
      stacks[key_of(i)] = i;
      heap.emplace(end, i);
    } else if (end == no_end) {
      stacks[key_of(i)] = i;
    } else {
      r.finished[i] = true;
    }
  };
  auto pop = [&](event_index i) {
    if (r.finished[i]) return;
    const key k = key_of(i);
    event_index frame = stacks.at(k);
    while (frame != i) {
      if (frame == no_event) throw std::logic_error("reference build_tree: broken stack");
      r.finished[frame] = true;
      frame = r.parent[frame];
    }
    r.finished[i] = true;
    stacks.erase(k);
    if (r.parent[i] != no_event) stacks[k] = r.parent[i];
  };
  for (event_index i : order) {
    while (!heap.empty() && heap.top().first < t.events[i].start_ns) {
      pop(heap.top().second);
      heap.pop();
    }
    push(i);
  }
  while (!heap.empty()) {
    pop(heap.top().second);
    heap.pop();
  }
  return r;
}

}  // namespace testing
TRACEMODEL_END_NAMESPACE
