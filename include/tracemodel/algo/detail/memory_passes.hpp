// tracemodel/algo/detail — the memory timeline's passes (memory_timeline.hpp states the rules):
// the storages, the data-flow graph, PyTorch's category passes, the records and the peak.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "tracemodel/algo/memory_types.hpp"
#include "tracemodel/algo/tensor_ids.hpp"
#include "tracemodel/algo/walk.hpp"
#include "tracemodel/config.hpp"
#include "tracemodel/model/table.hpp"

TRACEMODEL_BEGIN_NAMESPACE

namespace detail::memory {
inline constexpr std::uint8_t unset = 0xff;

/// Bytes per element of PyTorch's dtype names ("float", "c10::Half", "long int", ...).
inline std::int64_t element_size(std::string_view dtype) noexcept {
  if (dtype == "double" || dtype == "long int" || dtype == "long" || dtype == "int64_t" ||
      dtype == "c10::complex<float>" || dtype == "ComplexFloat")
    return 8;
  if (dtype == "c10::complex<double>" || dtype == "ComplexDouble") return 16;
  if (dtype == "c10::Half" || dtype == "c10::BFloat16" || dtype == "short int" ||
      dtype == "short" || dtype == "Half" || dtype == "BFloat16")
    return 2;
  if (dtype == "bool" || dtype == "signed char" || dtype == "unsigned char" || dtype == "char" ||
      dtype.starts_with("c10::Float8") || dtype.starts_with("c10::quint") ||
      dtype.starts_with("c10::qint8"))
    return 1;
  return 4;  // float, int, c10::qint32, and names a trace may spell otherwise
}

/// An in-place op: "ns::name_" (not a dunder).
inline bool in_place(std::string_view name) noexcept {
  const auto sep = name.rfind("::");
  if (sep == std::string_view::npos) return false;
  const std::string_view base = name.substr(sep + 2);
  return base.size() > 1 && base.back() == '_' && !base.ends_with("__");
}

struct edge {
  std::uint32_t block;
  std::int32_t input_version;  ///< -1: created here (PyTorch's None)
  std::uint8_t mutated;        ///< 0 no, 1 yes, 2 deleted (PyTorch's None)
  [[nodiscard]] bool allocation() const noexcept { return input_version < 0; }
  [[nodiscard]] bool deletion() const noexcept { return mutated == 2; }
  [[nodiscard]] bool output() const noexcept {
    return (allocation() && !deletion()) || mutated == 1;
  }
  [[nodiscard]] std::uint32_t output_version() const noexcept {
    return allocation() ? 0 : static_cast<std::uint32_t>(input_version) + 1;
  }
  [[nodiscard]] std::uint32_t version() const noexcept {  // as an input
    return static_cast<std::uint32_t>(input_version);
  }
};

template <class Schema>
class pass {
  using table_t = basic_event_table<Schema>;
  using edge = detail::memory::edge;
  static constexpr std::uint8_t unset = detail::memory::unset;
  static constexpr std::uint32_t none = detail::storage_identities::none;

 public:
  pass(const table_t& t, const memory_timeline_options& o, memory_timeline_result& r)
      : t_(t), o_(o), r_(r) {}

  void run() {
    order_ = detail::start_order(t_.events);
    ids_ = detail::identify_storages(t_, order_);
    const std::size_t nb = ids_.tensor_id.size();
    r_.blocks.resize(nb);
    for (std::size_t b = 0; b < nb; ++b) {
      r_.blocks[b].address = ids_.address[b];
      r_.blocks[b].tensor_id = ids_.tensor_id[b];
    }
    by_key_.assign(nb, unset);
    by_id_.assign(ids_.ids + 1, unset);
    current_.assign(nb, 0);
    sizes();
    graph();
    version_slots();
    categories();
    timeline();
    versions_out();
    peak();
  }

 private:
  // ---- blocks: devices, events, sizes (PyTorch's SizeMap) ------------------------------
  template <class F>
  void for_each_tensor_input(event_index i, F&& f) const {  // f(entry, top-level index)
    const auto* op = t_.events[i].template get_if<event_kind::op>();
    if (op == nullptr) return;
    const std::uint32_t end = op->inputs.first + op->inputs.size;
    std::uint32_t top = 0;
    for (std::uint32_t pos = op->inputs.first; pos < end; ++top) {
      const std::uint32_t sub = std::max<std::uint32_t>(t_.inputs[pos].subtree, 1);
      for (std::uint32_t k = pos; k < std::min(pos + sub, end); ++k)
        if (ids_.input_version[k] != none) f(k, top);
      pos += sub;
    }
  }
  void sizes() {
    for (std::size_t i = 0; i < t_.size(); ++i)
      for_each_tensor_input(static_cast<event_index>(i), [&](std::uint32_t k, std::uint32_t) {
        const input_value& v = t_.inputs[k];
        memory_block& b = r_.blocks[ids_.input_version[k]];
        b.device = {v.device_type, v.device_index};
        if (v.layout != strided_layout) return;
        const auto sizes = t_.sizes(v);
        const std::span<const std::int64_t> strides =
            v.has_strides ? t_.strides(v) : std::span<const std::int64_t>{};
        std::int64_t n = sizes.empty() ? 1 : 0;
        const std::size_t dims = strides.empty() ? std::min<std::size_t>(sizes.size(), 1)
                                                 : std::min(sizes.size(), strides.size());
        for (std::size_t d = 0; d < dims; ++d)
          n = std::max(n, sizes[d] * (strides.empty() ? 1 : strides[d]));
        const std::int64_t bytes = n * element_size(v.dtype);
        b.bytes = std::max(b.bytes, bytes);
      });
    std::vector<bool> sized(r_.blocks.size(), false);
    for (const event_index i : order_) {
      const auto* a = t_.events[i].template get_if<event_kind::allocation>();
      if (a == nullptr) continue;
      if (a->total_allocated < 0 || a->total_reserved < 0)
        r_.repairs.add(anomaly::negative_memory_total);
      const std::uint32_t v = ids_.event_version[i];
      if (v == none) continue;
      memory_block& b = r_.blocks[v];
      b.device = {a->device_type, a->device_index};
      if (a->alloc_size > 0) {
        b.allocation = i;
        b.allocated_by = op_around(i);
      } else {
        b.free = i;
        b.freed_by = op_around(i);
      }
      if (!sized[v]) {
        sized[v] = true;
        b.bytes = a->alloc_size < 0 ? -a->alloc_size : a->alloc_size;
      }
    }
  }
  /// Bytes per element of a dtype, by its name's id (a handful of names: looked up once).
  std::int64_t element_size(name_id dtype) {
    for (const auto& [id, size] : element_sizes_)
      if (id == dtype) return size;
    const std::int64_t size = detail::memory::element_size(t_.strings.view(dtype));
    element_sizes_.emplace_back(dtype, size);
    return size;
  }
  event_index op_around(event_index i) const {
    for (event_index p = t_.events[i].parent; p < t_.size(); p = t_.events[p].parent)
      if (t_.events[p].template is<event_kind::op>()) return p;
    return no_event;
  }

  // ---- the data-flow graph -----------------------------------------------------------
  bool backward_op(event_index i) const {
    const auto* op = t_.events[i].template get_if<event_kind::op>();
    if (op == nullptr) return false;
    if (op->scope == op_scope::backward_function) return true;
    // Traces keep no scopes: a backward op is one with a forward thread, but the engine's
    // `evaluate_function` wrapper, which copies its function's, is not a function itself.
    return op->fwd_thread_id != 0 && !t_.name(t_.events[i]).starts_with("autograd::engine::");
  }
  bool operator_op(event_index i) const {
    const auto* op = t_.events[i].template get_if<event_kind::op>();
    if (op == nullptr || op->scope == op_scope::user_scope) return false;
    const std::string_view name = t_.name(t_.events[i]);
    return name.find("::") != std::string_view::npos && !name.starts_with("autograd::engine::") &&
           !name.starts_with("profiler::");
  }
  /// 1: mutable, 0: not, 2: ambiguous (PyTorch's None)
  std::uint8_t mutability(event_index i, std::uint32_t top) const {
    if (!operator_op(i) && !backward_op(i)) return 2;
    return top == 0 && detail::memory::in_place(t_.name(t_.events[i])) ? 1 : 0;
  }

  void graph() {
    // Nodes: the topmost operators and the allocations outside them, in start order.
    walk_preorder(t_, [&](event_index i, std::uint32_t) {
      const auto& e = t_.events[i];
      if (e.template is<event_kind::allocation>() ||
          (e.template is<event_kind::op>() && (backward_op(i) || operator_op(i)))) {
        nodes_.push_back(i);
        return false;
      }
      return true;
    });
    std::stable_sort(nodes_.begin(), nodes_.end(), [&](event_index a, event_index b) {
      return t_.events[a].start_ns < t_.events[b].start_ns;
    });
    in_backward_.resize(nodes_.size());
    node_first_.reserve(nodes_.size() + 1);
    edges_.reserve(t_.inputs.size() + t_.size() / 2);  // (reserved, touched as used)
    seen_.reserve(edges_.capacity());
    std::vector<std::uint32_t> slot(r_.blocks.size(), none);  // block -> edge in this node
    if (o_.untracked_temporaries) untracked_node_.assign(r_.blocks.size(), none);
    std::vector<std::uint32_t> touched;
    std::vector<event_index> subtree;
    for (std::size_t n = 0; n < nodes_.size(); ++n) {
      const std::uint32_t first = static_cast<std::uint32_t>(edges_.size());
      node_first_.push_back(first);
      in_backward_[n] = scopes_backward(nodes_[n]);
      subtree.clear();  // (its order does not matter)
      stack_.assign(1, nodes_[n]);
      while (!stack_.empty()) {
        const event_index i = stack_.back();
        stack_.pop_back();
        subtree.push_back(i);
        for (const event_index c : t_.children_of(t_.events[i])) stack_.push_back(c);
      }
      auto edge_of = [&](std::uint32_t b) -> edge& {
        if (slot[b] == none) {
          slot[b] = static_cast<std::uint32_t>(edges_.size());
          edges_.push_back({b, 0, 0});
          touched.push_back(b);
          seen_.push_back(0);
        }
        return edges_[slot[b]];
      };
      // Inputs: mutable sets per block (bit 0 false, 1 true, 2 ambiguous).
      for (const event_index i : subtree)
        for_each_tensor_input(i, [&](std::uint32_t k, std::uint32_t top) {
          const std::uint32_t b = ids_.input_version[k];
          if (r_.blocks[b].tensor_id == 0) return;
          edge_of(b);
          seen_[slot[b]] |= static_cast<std::uint8_t>(1u << mutability(i, top));
        });
      for (std::uint32_t k = first; k < edges_.size(); ++k) {
        edges_[k].input_version = static_cast<std::int32_t>(current_[edges_[k].block]);
        const std::uint8_t s = seen_[k];
        edges_[k].mutated = (s & 2) != 0 || s == 4 ? 1 : 0;
      }
      if (o_.untracked_temporaries)  // blocks no tensor used, made and freed in this node
        for (const bool frees : {false, true})
          for (const event_index i : subtree)
            if (const auto* a = t_.events[i].template get_if<event_kind::allocation>();
                a != nullptr && (a->alloc_size < 0) == frees && ids_.event_version[i] != none &&
                r_.blocks[ids_.event_version[i]].tensor_id == 0) {
              const std::uint32_t b = ids_.event_version[i];
              if (!frees)
                untracked_node_[b] = static_cast<std::uint32_t>(n);
              else if (untracked_node_[b] == n)
                by_key_[b] = static_cast<std::uint8_t>(memory_category::temporary);
            }
      for (const event_index i : subtree)  // frees
        if (const auto* a = t_.events[i].template get_if<event_kind::allocation>();
            a != nullptr && a->alloc_size < 0 && ids_.event_version[i] != none &&
            r_.blocks[ids_.event_version[i]].tensor_id != 0) {
          edge& e = edge_of(ids_.event_version[i]);
          e.mutated = 2;
          e.input_version = static_cast<std::int32_t>(current_[e.block]);
        }
      for (const event_index i : subtree)  // allocations
        if (const auto* a = t_.events[i].template get_if<event_kind::allocation>();
            a != nullptr && a->alloc_size > 0 && ids_.event_version[i] != none &&
            r_.blocks[ids_.event_version[i]].tensor_id != 0)
          edge_of(ids_.event_version[i]).input_version = -1;
      std::sort(edges_.begin() + first, edges_.end(),
                [](const edge& a, const edge& b) { return a.block < b.block; });
      for (std::uint32_t k = first; k < edges_.size(); ++k)
        if (edges_[k].mutated == 1 && !edges_[k].allocation()) ++current_[edges_[k].block];
      for (const std::uint32_t b : touched) slot[b] = none;
      touched.clear();
    }
    node_first_.push_back(static_cast<std::uint32_t>(edges_.size()));
    seen_.clear();
    seen_.shrink_to_fit();
  }
  bool scopes_backward(event_index i) const {
    for (event_index p = i; p < t_.size(); p = t_.events[p].parent)
      if (backward_op(p)) return true;
    return false;
  }
  std::span<const edge> edges(std::size_t n) const {
    return {edges_.data() + node_first_[n], node_first_[n + 1] - node_first_[n]};
  }

  // ---- categories (PyTorch's CategoryDict and passes) -----------------------------------
  /// A (block, version) pair's slot in the per-version arrays (versions past the graph's
  /// last, which the graph never names, share the last one's).
  std::uint32_t vkey(std::uint32_t b, std::uint32_t v) const {
    return vbase_[b] + std::min(v, current_[b]);
  }
  void version_slots() {
    vbase_.resize(r_.blocks.size() + 1);
    std::uint32_t k = 0;
    for (std::size_t b = 0; b < r_.blocks.size(); ++b) {
      vbase_[b] = k;
      k += current_[b] + 1;
    }
    vbase_.back() = k;
    by_version_.assign(k, unset);
    vflag_.assign(k, 0);
  }
  std::uint8_t get(std::uint32_t b, std::uint32_t v) const {
    if (const std::uint8_t c = by_id_[r_.blocks[b].tensor_id]; c != unset) return c;
    if (by_key_[b] != unset) return by_key_[b];
    return by_version_[vkey(b, v)];
  }
  void set_by_id(std::uint32_t b, memory_category c) {
    by_id_[r_.blocks[b].tensor_id] = static_cast<std::uint8_t>(c);
    id_keys_.push_back(b);
  }
  void setdefault(std::uint32_t b, std::uint32_t v, memory_category c) {
    std::uint8_t& slot = by_version_[vkey(b, v)];
    if (slot == unset) slot = static_cast<std::uint8_t>(c);
  }
  // Sets of (block, version) pairs, as bits of `vflag_`.
  enum flag : std::uint8_t { produces = 1, forward = 2, candidate = 4, used = 8 };
  bool has(std::uint32_t b, std::uint32_t v, flag f) const { return (vflag_[vkey(b, v)] & f) != 0; }
  void mark(std::uint32_t b, std::uint32_t v, flag f) { vflag_[vkey(b, v)] |= f; }
  void unmark(std::uint32_t b, std::uint32_t v, flag f) {
    vflag_[vkey(b, v)] &= static_cast<std::uint8_t>(~f);
  }
  /// Calls f(block, version) for every pair in set `f`.
  template <class F>
  void for_marked(flag f, F&& fn) const {
    for (std::uint32_t b = 0; b < r_.blocks.size(); ++b)
      for (std::uint32_t v = 0; v <= current_[b]; ++v)
        if ((vflag_[vbase_[b] + v] & f) != 0) fn(b, v);
  }
  bool is(std::uint32_t b, std::uint32_t v, memory_category c) const {
    return get(b, v) == static_cast<std::uint8_t>(c);
  }

  template <class F>
  void for_inputs(std::size_t n, F&& f) const {
    for (const edge& e : edges(n))
      if (!e.allocation()) f(e.block, e.version(), e.mutated);
  }
  template <class F>
  void for_outputs(std::size_t n, F&& f) const {
    for (const edge& e : edges(n))
      if (e.output()) f(e.block, e.output_version());
  }

  void categories() {
    // Gradients: AccumulateGrad's first child's first input.
    for (std::size_t i = 0; i < t_.size(); ++i) {
      const auto& e = t_.events[i];
      if (!e.template is<event_kind::op>() || !backward_op(static_cast<event_index>(i)) ||
          t_.name(e) != "torch::autograd::AccumulateGrad")
        continue;
      const auto kids = t_.children_of(e);
      if (kids.empty()) continue;
      const auto& c = t_.events[kids[0]];
      const auto* op = c.template get_if<event_kind::op>();
      if (op == nullptr || (t_.name(c) != "aten::detach" && t_.name(c) != "aten::add_") ||
          op->inputs.size == 0)
        continue;
      const std::uint32_t b = ids_.input_version[op->inputs.first];
      if (b != none && t_.inputs[op->inputs.first].kind == input_kind::tensor)
        set_by_id(b, memory_category::gradient);
    }
    // Temporaries: created and freed within one node.
    for (const edge& e : edges_)
      if (e.allocation() && e.deletion())
        by_key_[e.block] = static_cast<std::uint8_t>(memory_category::temporary);
    inputs();
    parameters();
    activations();
    if (o_.optimizer_annotations) optimizer_state();
    if (o_.gradient_fed_state) gradient_fed_state();
    autograd_detail();
  }

  std::vector<bool> any_version_depends_on_gradient() const {
    std::vector<bool> dep(by_id_.size(), false);
    for (bool grew = true; grew;) {
      grew = false;
      for (std::size_t n = 0; n < nodes_.size(); ++n) {
        bool any = false;
        for_inputs(n, [&](std::uint32_t b, std::uint32_t v, std::uint8_t) {
          const std::uint64_t id = r_.blocks[b].tensor_id;
          if (is(b, v, memory_category::gradient) || is(b, v, memory_category::parameter) ||
              dep[id]) {
            any = true;
            if (!dep[id]) grew = dep[id] = true;
          }
        });
        if (!any) continue;
        for_outputs(n, [&](std::uint32_t b, std::uint32_t) {
          const std::uint64_t id = r_.blocks[b].tensor_id;
          if (!dep[id]) grew = dep[id] = true;
        });
      }
    }
    return dep;
  }

  void inputs() {
    const std::vector<bool> depends = any_version_depends_on_gradient();
    for (std::size_t n = nodes_.size(); n-- > 0;) {
      bool any = false;
      auto check = [&](std::uint32_t b, std::uint32_t v) {
        any = any || is(b, v, memory_category::gradient) || is(b, v, memory_category::parameter) ||
              has(b, v, produces);
      };
      for_inputs(n, [&](std::uint32_t b, std::uint32_t v, std::uint8_t) { check(b, v); });
      for_outputs(n, check);
      if (!any) continue;
      for_inputs(n, [&](std::uint32_t b, std::uint32_t v, std::uint8_t) { mark(b, v, produces); });
      for_outputs(n, [&](std::uint32_t b, std::uint32_t v) { mark(b, v, produces); });
    }
    for (std::size_t n = 0; n < nodes_.size(); ++n)
      if (in_backward_[n])
        for_outputs(n, [&](std::uint32_t b, std::uint32_t v) { unmark(b, v, produces); });
    for_marked(produces, [&](std::uint32_t b, std::uint32_t v) {
      if (!depends[r_.blocks[b].tensor_id]) setdefault(b, v, memory_category::input);
    });
  }

  void parameters() {
    // The snapshot's inputs: every (block, version) the graph names that is an input.
    for (std::size_t n = 0; n < nodes_.size(); ++n) {
      auto note = [&](std::uint32_t b, std::uint32_t v) {
        if (is(b, v, memory_category::input)) mark(b, v, forward);
      };
      for_inputs(n, [&](std::uint32_t b, std::uint32_t v, std::uint8_t) { note(b, v); });
      for_outputs(n, note);
    }
    for (const std::uint32_t b : id_keys_)
      if (is(b, 0, memory_category::input)) mark(b, 0, forward);
    for (std::size_t n = 0; n < nodes_.size(); ++n) {
      if (in_backward_[n]) continue;
      bool gradient = false, from_input = false;
      for_inputs(n, [&](std::uint32_t b, std::uint32_t v, std::uint8_t) {
        gradient = gradient || is(b, v, memory_category::gradient);
        from_input = from_input || has(b, v, forward);
      });
      for_outputs(n, [&](std::uint32_t b, std::uint32_t v) {
        gradient = gradient || is(b, v, memory_category::gradient);
      });
      if (gradient || !from_input) continue;
      for_outputs(n, [&](std::uint32_t b, std::uint32_t v) { mark(b, v, forward); });
      for_inputs(n, [&](std::uint32_t b, std::uint32_t v, std::uint8_t) {
        if (!has(b, v, forward)) mark(b, v, candidate);
      });
    }
    for (std::size_t n = nodes_.size(); n-- > 0;) {
      bool feeds = false;
      for_outputs(n, [&](std::uint32_t b, std::uint32_t v) {
        feeds = feeds || is(b, v, memory_category::gradient) || has(b, v, used);
      });
      if (feeds)
        for_inputs(n, [&](std::uint32_t b, std::uint32_t v, std::uint8_t) { mark(b, v, used); });
    }
    const std::vector<bool> depends = any_version_depends_on_gradient();
    std::vector<bool> parameter(by_id_.size(), false);
    for_marked(candidate, [&](std::uint32_t b, std::uint32_t v) {
      const std::uint64_t id = r_.blocks[b].tensor_id;
      if (has(b, v, used) && depends[id]) parameter[id] = true;
    });
    for (std::uint32_t b = 0; b < r_.blocks.size(); ++b)
      if (parameter[r_.blocks[b].tensor_id] && r_.blocks[b].tensor_id != 0)
        set_by_id(b, memory_category::parameter);
  }

  void activations() {
    for (std::size_t n = 0; n < nodes_.size(); ++n) {
      if (in_backward_[n]) continue;
      bool required = false, other = false;
      for_inputs(n, [&](std::uint32_t b, std::uint32_t v, std::uint8_t) {
        const std::uint8_t c = get(b, v);
        if (c == std::uint8_t(memory_category::input) ||
            c == std::uint8_t(memory_category::activation))
          required = true;
        else if (c != std::uint8_t(memory_category::parameter) &&
                 c != std::uint8_t(memory_category::temporary))
          other = true;
      });
      if (required && !other)
        for_outputs(n, [&](std::uint32_t b, std::uint32_t v) {
          setdefault(b, v, memory_category::activation);
        });
    }
  }

  void optimizer_state() {
    // Nodes inside an `Optimizer.step#...` annotation.
    for (std::size_t n = 0; n < nodes_.size(); ++n) {
      event_index step = no_event;
      for (event_index p = t_.events[nodes_[n]].parent; p < t_.size() && step == no_event;
           p = t_.events[p].parent)
        if (t_.events[p].template is<event_kind::op>() &&
            t_.name(t_.events[p]).starts_with("Optimizer.step#"))
          step = p;
      if (step == no_event) continue;
      const std::int64_t end = t_.events[step].start_ns + t_.events[step].duration_ns();
      for_outputs(n, [&](std::uint32_t b, std::uint32_t v) {
        const std::uint8_t c = get(b, v);
        const event_index f = r_.blocks[b].free;
        const bool persists = f == no_event || t_.events[f].start_ns > end;
        if ((c == unset || c == std::uint8_t(memory_category::activation) ||
             c == std::uint8_t(memory_category::input)) &&
            by_key_[b] == unset && persists)
          set_by_id(b, memory_category::optimizer_state);
      });
    }
  }

  // Tensors an op outside the backward pass changes in place from a gradient (momentum
  // buffers, Adam's averages) that are not parameters, gradients or temporaries.
  void gradient_fed_state() {
    for (std::size_t n = 0; n < nodes_.size(); ++n) {
      if (in_backward_[n]) continue;
      bool fed = false;
      for_inputs(n, [&](std::uint32_t b, std::uint32_t v, std::uint8_t) {
        fed = fed || is(b, v, memory_category::gradient);
      });
      if (!fed) continue;
      for (const edge& e : edges(n)) {
        if (e.mutated != 1 || e.allocation()) continue;
        const std::uint8_t c = get(e.block, e.version());
        if ((c == unset || c == std::uint8_t(memory_category::activation) ||
             c == std::uint8_t(memory_category::input)) &&
            by_key_[e.block] == unset)
          set_by_id(e.block, memory_category::optimizer_state);
      }
    }
  }

  void autograd_detail() {
    for (std::size_t n = 0; n < nodes_.size(); ++n) {
      if (!in_backward_[n]) continue;
      for_outputs(n, [&](std::uint32_t b, std::uint32_t v) {
        const std::uint8_t prior = v == 0 ? unset : get(b, v - 1);
        if (v == 0 || prior == unset || prior == std::uint8_t(memory_category::autograd_detail))
          setdefault(b, v, memory_category::autograd_detail);
      });
    }
  }

  // ---- the records ---------------------------------------------------------------------
  memory_category category(std::uint32_t b, std::uint32_t v) const {
    if (r_.blocks[b].tensor_id == 0)
      return by_key_[b] == unset ? memory_category::unknown
                                 : static_cast<memory_category>(by_key_[b]);
    const std::uint8_t c = get(b, v);
    return c == unset ? memory_category::unknown : static_cast<memory_category>(c);
  }
  void add(std::int64_t time, memory_action a, std::uint32_t b, std::uint32_t v,
           std::int64_t bytes) {
    r_.records.push_back({time, a, category(b, v), bytes, b});
  }

  void timeline() {
    const std::size_t nb = r_.blocks.size();
    r_.records.reserve(edges_.size() + ids_.event_version.size() / 2);
    // Unknown blocks (no tensor): straight from their allocation events. An allocation over
    // a live one ends the old block there.
    std::vector<std::int64_t> alloc_time(nb, -1), free_time(nb, -1);
    for (const auto& [i, old] : ids_.reused) {
      r_.repairs.add(anomaly::allocation_reused);
      add(t_.events[i].start_ns, memory_action::destroy, old, current_[old], -r_.blocks[old].bytes);
    }
    r_.repairs.add(anomaly::free_without_allocation, ids_.unheld_frees.size());
    for (const event_index i : order_) {
      const auto* a = t_.events[i].template get_if<event_kind::allocation>();
      if (a == nullptr) continue;
      const std::uint32_t b = ids_.event_version[i];
      if (b == none) continue;
      const std::int64_t when = t_.events[i].start_ns;
      const bool untracked = r_.blocks[b].tensor_id == 0;
      if (a->alloc_size > 0) {
        alloc_time[b] = when;
        if (untracked) add(when, memory_action::create, b, 0, a->alloc_size);
      } else {
        if (-a->alloc_size != r_.blocks[b].bytes) r_.repairs.add(anomaly::free_size_mismatch);
        free_time[b] = when;
        if (untracked) {
          if (alloc_time[b] < 0) add(-1, memory_action::preexisting, b, 0, r_.blocks[b].bytes);
          add(when, memory_action::destroy, b, 0, -r_.blocks[b].bytes);
        }
      }
    }
    // Tensor blocks: from the graph.
    std::vector<std::uint32_t> last(nb, 0);
    std::vector<bool> named(nb, false), named_v0(nb, false);
    for (std::size_t n = 0; n < nodes_.size(); ++n)
      for (const edge& e : edges(n)) {
        named[e.block] = true;
        const std::uint32_t v = e.allocation() ? 0 : e.version();
        if (v == 0) named_v0[e.block] = true;
        last[e.block] = std::max(last[e.block], v);
        if (e.output()) {
          last[e.block] = std::max(last[e.block], e.output_version());
          if (e.output_version() == 0) named_v0[e.block] = true;
        }
      }
    for (const std::uint32_t b : id_keys_) named[b] = named_v0[b] = true;
    for (std::uint32_t b = 0; b < nb; ++b) {
      r_.blocks[b].versions = last[b] + 1;
      if (named[b] && named_v0[b] && r_.blocks[b].tensor_id != 0 && alloc_time[b] < 0)
        add(-1, memory_action::preexisting, b, 0, r_.blocks[b].bytes);
    }
    for (std::size_t n = 0; n < nodes_.size(); ++n) {
      const std::int64_t start = t_.events[nodes_[n]].start_ns;
      for (const edge& e : edges(n)) {
        const std::int64_t bytes = r_.blocks[e.block].bytes;
        if (e.allocation())
          add(alloc_time[e.block], memory_action::create, e.block, 0, bytes);
        else if (e.mutated == 1) {
          add(start, memory_action::increment_version, e.block, e.version(), -bytes);
          add(start, memory_action::increment_version, e.block, e.version() + 1, bytes);
        }
        if (e.deletion())
          add(free_time[e.block], memory_action::destroy, e.block, last[e.block], -bytes);
      }
    }
    // By time, then action (stable): one radix sort of (time - earliest) * 4 + action - 1.
    std::int64_t earliest = 0;
    for (const memory_record& rec : r_.records) earliest = std::min(earliest, rec.time_ns);
    struct keys {
      const row_list<memory_record>& r;
      std::int64_t base;
      [[nodiscard]] std::size_t size() const noexcept { return r.size(); }
      std::int64_t operator[](std::size_t i) const noexcept {
        return (r[i].time_ns - base) * 4 + static_cast<std::int64_t>(r[i].action) - 1;
      }
    };
    const auto order = detail::stable_order(keys{r_.records, earliest});
    row_list<memory_record> sorted(r_.records.size());
    for (std::size_t k = 0; k < order.size(); ++k) sorted[k] = r_.records[order[k]];
    r_.records = std::move(sorted);
  }

  void versions_out() {
    r_.version_first.resize(r_.blocks.size());
    std::uint32_t k = 0;
    for (std::uint32_t b = 0; b < r_.blocks.size(); ++b) {
      r_.version_first[b] = k;
      for (std::uint32_t v = 0; v < r_.blocks[b].versions; ++v, ++k)
        r_.version_category.push_back(category(b, v));
      r_.blocks[b].category = r_.version_category.back();
    }
  }

  // ---- the peak ------------------------------------------------------------------------
  void peak() {
    if (o_.choose_device) {
      bool found = false;
      for (const memory_block& b : r_.blocks)
        if (b.device.type != 0 && b.allocation != no_event &&
            (!found || b.device.type < r_.device.type ||
             (b.device.type == r_.device.type && b.device.index < r_.device.index))) {
          r_.device = b.device;
          found = true;
        }
      if (!found) r_.device = cpu_device();
    } else {
      r_.device = o_.device.type == 0 ? cpu_device() : o_.device;  // the CPU: any index
    }
    // The samples, as coalesce_memory makes them, one at a time: the peak, then the series.
    std::int64_t t_min = -1;
    const std::size_t n = each_sample([&](std::size_t k, const memory_sample& m) {
      if (t_min == -1 && m.time_ns != -1) t_min = m.time_ns;
      if (const std::int64_t total = m.total(); k == 0 || total > r_.peak.bytes)
        r_.peak = {m.time_ns, total, m.bytes, k};
    });
    r_.series = n;
    if (n == 0) return;
    if (r_.peak.time_ns == -1) r_.peak.time_ns = t_min;
    if (o_.sample_limit == 0 || n <= 2 * o_.sample_limit) {
      r_.samples.reserve(n);
      each_sample([&](std::size_t, const memory_sample& m) { r_.samples.push_back(m); });
    } else {  // memory_envelope's runs, kept as they pass
      const std::size_t runs = o_.sample_limit;
      std::size_t run = 0, end = n / runs;  // the run's samples end before `end`
      bool open = false;
      memory_sample low, high;
      std::size_t low_k = 0, high_k = 0;
      auto flush = [&] {
        r_.samples.push_back(low_k <= high_k ? low : high);
        if (low_k != high_k) r_.samples.push_back(low_k <= high_k ? high : low);
        open = false;
      };
      each_sample([&](std::size_t k, const memory_sample& m) {
        while (k >= end) {
          if (open) flush();
          ++run;
          end = n * (run + 1) / runs;
        }
        if (!open) {
          low = high = m;
          low_k = high_k = k;
          open = true;
          return;
        }
        if (m.total() < low.total()) {
          low = m;
          low_k = k;
        }
        if (m.total() > high.total()) {
          high = m;
          high_k = k;
        }
      });
      if (open) flush();
    }
    for (memory_sample& m : r_.samples)
      if (m.time_ns < 0) m.time_ns = t_min;
    // The blocks live after the peak's records: replay them.
    std::vector<std::int64_t> held(r_.blocks.size(), 0);
    std::vector<memory_category> now(r_.blocks.size(), memory_category::unknown);
    std::vector<std::uint32_t> live;
    std::size_t sample = 0;
    std::int64_t last_time = 0;
    bool first = true;
    for (const memory_record& rec : r_.records) {
      if (r_.blocks[rec.block].device != r_.device) continue;
      const std::int64_t tm = rec.time_ns;
      if (!first && tm != last_time && ++sample > r_.peak.sample) break;
      first = false;
      last_time = tm;
      if (held[rec.block] == 0 && rec.bytes > 0) live.push_back(rec.block);
      held[rec.block] += rec.bytes;
      if (rec.bytes > 0) now[rec.block] = rec.category;
    }
    for (const std::uint32_t b : live) {
      if (held[b] <= 0) continue;
      held[b] = -held[b];  // listed once
      const memory_block& blk = r_.blocks[b];
      r_.live_at_peak.push_back(
          {b, now[b], -held[b], blk.allocated_by, blk.freed_by, frame_around(blk.allocation)});
    }
    std::stable_sort(r_.live_at_peak.begin(), r_.live_at_peak.end(),
                     [](const tracemodel::live_block& a, const tracemodel::live_block& b) {
                       return a.bytes > b.bytes;
                     });
  }
  /// Calls fn(k, sample) for each sample of the device in turn (times as the records have
  /// them: -1 before the trace); returns how many.
  template <class F>
  std::size_t each_sample(F&& fn) const {
    memory_sample m;
    std::size_t k = 0;
    bool any = false;
    for (const memory_record& rec : r_.records) {
      if (r_.blocks[rec.block].device != r_.device) continue;
      if (any && rec.time_ns != m.time_ns) fn(k++, std::as_const(m));
      m.time_ns = rec.time_ns;
      any = true;
      m.bytes[static_cast<std::size_t>(rec.category)] += rec.bytes;
    }
    if (any) fn(k++, std::as_const(m));
    return k;
  }
  memory_device cpu_device() const {
    for (const memory_block& b : r_.blocks)
      if (b.device.type == 0) return b.device;
    return {};
  }
  event_index frame_around(event_index i) const {
    if (i == no_event) return no_event;
    for (event_index p = t_.events[i].parent; p < t_.size(); p = t_.events[p].parent)
      if (t_.events[p].template is<event_kind::script_call>()) return p;
    return no_event;
  }

  const table_t& t_;
  const memory_timeline_options& o_;
  memory_timeline_result& r_;
  detail::storage_identities ids_;
  std::vector<event_index> nodes_;
  std::vector<bool> in_backward_;
  std::vector<std::uint32_t> node_first_;
  std::vector<edge> edges_;
  std::vector<std::uint8_t> seen_;
  std::vector<std::uint32_t> current_;  // the graph's version of each block
  std::vector<std::uint8_t> by_id_, by_key_;
  std::vector<std::uint32_t> vbase_;  // block -> its first slot in the per-version arrays
  std::vector<std::uint8_t> by_version_, vflag_;
  detail::scratch_vector<std::uint32_t> order_;  // the events in start order
  std::vector<event_index> stack_;               // a subtree's walk
  std::vector<std::uint32_t> id_keys_;
  std::vector<std::uint32_t> untracked_node_;  // a block no tensor used: its allocation's node
  std::vector<std::pair<name_id, std::int64_t>> element_sizes_;
};
}  // namespace detail::memory

TRACEMODEL_END_NAMESPACE
