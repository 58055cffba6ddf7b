// tracemodel/algo — where the memory goes: every allocation's category, the timeline, the peak.
//
//   build_tree(table);
//   const auto m = tracemodel::memory_timeline(table);
//   // m.peak.bytes, m.peak.by_category, m.live_at_peak, m.samples, m.records
//
// A measure. It follows PyTorch's memory profiler (torch/profiler/_memory_profiler.py, 2.x):
//  - Storage: every allocation is a block (tensor_ids.hpp's storage versions: one per allocation
//    and per address first seen as a tensor's storage); its size is the allocation's, else the
//    largest size × stride × element size seen on a tensor input. Allocations no tensor used are
//    blocks without a tensor id, always "unknown".
//  - The data-flow graph: its nodes are the topmost ops that are operators (backward functions,
//    and ops named "namespace::name" that are not user scopes: tracemodel's stand-in for
//    PyTorch's "matches a registered schema", which a trace cannot tell) and the allocations
//    outside them, in start order. A node's edges are the blocks of the tensor inputs and
//    allocations of its subtree: an input is mutated when its op is in place (a name ending in
//    "_": the first input, every tensor of it when a list; PyTorch reads the schemas' alias
//    annotations) or when no op of the subtree is an operator (ambiguous, as in PyTorch); a free
//    makes the edge a deletion, an allocation makes it a creation. A mutation gives the block a
//    new version.
//  - Categories, in PyTorch's order of passes, per block (by tensor id, by block, or by
//    version, the first that is set wins):
//      gradient: the first input of the first child of `torch::autograd::AccumulateGrad`
//        (`aten::detach` or `aten::add_`), every block of its tensor id;
//      temporary: created and freed within one node (and, tracemodel's addition, memory no
//        tensor used, an op's workspace, allocated and freed within one node:
//        `untracked_temporaries`; PyTorch leaves it unknown);
//      input: versions in the data flow toward a gradient or parameter (walking the nodes
//        backward), not created in the backward pass, whose tensor never depends on a gradient;
//      parameter: used in the forward data flow from the inputs, used toward a gradient, and
//        depending on a gradient (any version: PyTorch's "weakened" dependence, iterated to a
//        fixed point);
//      activation: outputs of forward nodes whose inputs include an input or activation and
//        nothing other than inputs, activations, parameters and temporaries;
//      optimizer state: PyTorch takes it from its Python tracer, which a trace does not carry;
//        tracemodel's stand-ins: blocks created or mutated inside an `Optimizer.step#...`
//        annotation and kept past it (`optimizer_annotations`), and blocks an op outside the
//        backward pass changes in place with a gradient among its inputs (momentum buffers,
//        Adam's averages: `gradient_fed_state`), when not parameters, gradients or temporaries;
//      autograd detail: outputs of backward nodes whose prior version is unset or autograd
//        detail;
//      unknown: the rest.
//    Where PyTorch guesses: the schema stand-in, mutability by name, and the optimizer stand-in
//    above; PyTorch's own guesses (the fixed point, the flood of activations) are kept as they
//    are.
//  - The records (PyTorch's raw timeline): create, increment version, destroy and preexisting
//    (a block used or freed but never allocated in the trace, at time -1), sorted by time then
//    action; the samples: per time, bytes per category (PyTorch's `_coalesce_timeline`) for one
//    device; the peak: the first sample with the most bytes, and the blocks live there.
// Repairs (counted, never fatal): a free of an address with no live allocation (taken as memory
// allocated before the trace, as PyTorch does); an allocation at an address still live (the old
// block taken as freed then); negative totals; a free of another size than the allocation (the
// allocation's size kept: PyTorch warns and keys sizes on the allocation too).
#pragma once

#include "tracemodel/algo/detail/memory_passes.hpp"
#include "tracemodel/algo/memory_types.hpp"
#include "tracemodel/config.hpp"
#include "tracemodel/model/table.hpp"

TRACEMODEL_BEGIN_NAMESPACE

struct memory_timeline_fn {
  template <class Schema>
  memory_timeline_result operator()(const basic_event_table<Schema>& t,
                                    const memory_timeline_options& o = {}) const {
    memory_timeline_result r;
    if constexpr (Schema::template contains<event_kind::op> &&
                  Schema::template contains<event_kind::allocation>) {
      detail::memory::pass<Schema> p(t, o, r);
      p.run();
    }
    return r;
  }
};

/// Every block's category, the records, samples and peak (see the header comment).
inline constexpr memory_timeline_fn memory_timeline{};

TRACEMODEL_END_NAMESPACE
