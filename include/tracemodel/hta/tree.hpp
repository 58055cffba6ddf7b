// tracemodel/hta — HTA's tree of a trace: its ties (docs/hta-rules.md, "Call stacks").
//
//   tracemodel::build_tree(table, tracemodel::hta::tree{});
//   tracemodel::analyze(table, tracemodel::hta::tree{});
//
// PyTorch's rules but for ties: ends at t close before starts at t, an instant event at t stays
// inside, and equal starts open the longer event first (`ties_sibling`).
#pragma once

#include "tracemodel/algo/tree.hpp"
#include "tracemodel/config.hpp"

TRACEMODEL_BEGIN_NAMESPACE
namespace hta {

using tree = sibling_ties_tree;

}  // namespace hta
TRACEMODEL_END_NAMESPACE
