// tracemodel/algo — walking a built tree without recursion.
//
// Pre-order (depth-first, children in order) and breadth-first visits, roots, per-thread roots,
// depths, ancestors. Every walk uses an explicit stack or queue, so a tree a million levels deep
// is walked in constant native stack.
#pragma once

#include <cstdint>
#include <deque>
#include <type_traits>
#include <utility>
#include <vector>

#include "tracemodel/config.hpp"
#include "tracemodel/model/table.hpp"

TRACEMODEL_BEGIN_NAMESPACE

/// Events without a parent, in table order (start time order for sorted tables).
template <class Schema>
std::vector<event_index> roots(const basic_event_table<Schema>& t) {
  std::vector<event_index> out;
  for (std::size_t i = 0; i < t.size(); ++i)
    if (t.events[i].parent == no_event) out.push_back(static_cast<event_index>(i));
  return out;
}

/// Calls `f(index, depth)` for every event in pre-order: each root, then its subtree, children
/// in order. `f` may return false to skip the event's subtree (any other return continues).
template <class Schema, class F>
void walk_preorder(const basic_event_table<Schema>& t, const std::vector<event_index>& start,
                   F&& f) {
  std::vector<std::pair<event_index, std::uint32_t>> stack;
  for (auto it = start.rbegin(); it != start.rend(); ++it) stack.emplace_back(*it, 0);
  while (!stack.empty()) {
    const auto [i, depth] = stack.back();
    stack.pop_back();
    bool descend = true;
    if constexpr (std::is_same_v<decltype(f(i, depth)), bool>)
      descend = f(i, depth);
    else
      f(i, depth);
    if (!descend) continue;
    const auto kids = t.children_of(t.events[i]);
    for (auto it = kids.rbegin(); it != kids.rend(); ++it) stack.emplace_back(*it, depth + 1);
  }
}
template <class Schema, class F>
void walk_preorder(const basic_event_table<Schema>& t, F&& f) {
  walk_preorder(t, roots(t), std::forward<F>(f));
}

/// Calls `f(index, depth)` breadth-first from `start` (children in order, level by level).
template <class Schema, class F>
void walk_breadth_first(const basic_event_table<Schema>& t, const std::vector<event_index>& start,
                        F&& f) {
  std::deque<std::pair<event_index, std::uint32_t>> queue;
  for (event_index r : start) queue.emplace_back(r, 0);
  while (!queue.empty()) {
    const auto [i, depth] = queue.front();
    queue.pop_front();
    f(i, depth);
    for (event_index c : t.children_of(t.events[i])) queue.emplace_back(c, depth + 1);
  }
}
template <class Schema, class F>
void walk_breadth_first(const basic_event_table<Schema>& t, F&& f) {
  walk_breadth_first(t, roots(t), std::forward<F>(f));
}

/// Depth of every event (roots: 0), without recursion.
template <class Schema>
std::vector<std::uint32_t> depths(const basic_event_table<Schema>& t) {
  std::vector<std::uint32_t> d(t.size(), 0);
  walk_preorder(t, [&d](event_index i, std::uint32_t depth) { d[i] = depth; });
  return d;
}

/// The nearest ancestor of `i` (not `i` itself) for which `pred(index)` holds, or no_event.
template <class Schema, class Pred>
event_index nearest_ancestor(const basic_event_table<Schema>& t, event_index i, Pred&& pred) {
  for (event_index p = t.events[i].parent; p != no_event; p = t.events[p].parent)
    if (pred(p)) return p;
  return no_event;
}

/// The root of the tree that holds `i`.
template <class Schema>
event_index root_of(const basic_event_table<Schema>& t, event_index i) {
  while (t.events[i].parent != no_event) i = t.events[i].parent;
  return i;
}

TRACEMODEL_END_NAMESPACE
