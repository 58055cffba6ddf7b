// tracemodel/testing — deterministic text dumps of built trees, for golden-text tests.
//
// One line per event in pre-order, two spaces of indent per depth level:
//   aten::linear
//     aten::t
//     aten::addmm
// Optional annotations per line (thread, times) come from `line(index)` callbacks.
#pragma once

#include <cstdint>
#include <string>

#include "tracemodel/algo/walk.hpp"
#include "tracemodel/config.hpp"
#include "tracemodel/model/table.hpp"

TRACEMODEL_BEGIN_NAMESPACE
namespace testing {

/// The tree as indented names (one line per event, pre-order).
template <class Schema>
std::string tree_text(const basic_event_table<Schema>& t) {
  std::string out;
  walk_preorder(t, [&](event_index i, std::uint32_t depth) {
    out.append(std::size_t{2} * depth, ' ');
    out.append(t.name(t.events[i]));
    out.push_back('\n');
  });
  return out;
}

/// The tree as indented lines made by `label(index)`.
template <class Schema, class Label>
std::string tree_text(const basic_event_table<Schema>& t, Label&& label) {
  std::string out;
  walk_preorder(t, [&](event_index i, std::uint32_t depth) {
    out.append(std::size_t{2} * depth, ' ');
    out.append(label(i));
    out.push_back('\n');
  });
  return out;
}

}  // namespace testing
TRACEMODEL_END_NAMESPACE
