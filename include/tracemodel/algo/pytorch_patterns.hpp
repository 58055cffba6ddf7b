// tracemodel/algo — PyTorch's anti-patterns as patterns of the matcher in `patterns.hpp`.
//
// The rules are PyTorch's (`torch/profiler/_pattern_matcher.py`) and so are the names, so that
// reports can be compared; the descriptions are ours. `pytorch_patterns()` returns all eight in
// the order PyTorch's report lists them. Newer PyTorch leaves for-loop indexing out of its
// report; here it is on unless `pytorch_pattern_options::for_loop_indexing` says otherwise.
//
// Differences from PyTorch, on purpose:
//  * FP32 matmul needs a device that supports TF32 in the trace (`pattern_context::devices`)
//    and the op to have run on it (a device activity of that device below it, or an input on
//    it). PyTorch 1.13 also fires on CPU `aten::mm`, because its device test is `all()` of an
//    empty list there.
//  * The source location is the nearest user frame itself ("train.py(40): step"); PyTorch
//    prints the line that frame was executing, which a trace does not record.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "tracemodel/algo/patterns.hpp"
#include "tracemodel/config.hpp"

TRACEMODEL_BEGIN_NAMESPACE

namespace detail {
/// The top-level inputs of an op (list elements skipped), the first 16 of them, no allocation.
struct top_input_list {
  std::array<const input_value*, 16> at{};
  std::size_t n = 0;
  [[nodiscard]] std::size_t size() const noexcept { return n; }
  [[nodiscard]] bool empty() const noexcept { return n == 0; }
  const input_value* operator[](std::size_t k) const noexcept { return at[k]; }
  [[nodiscard]] const input_value* const* begin() const noexcept { return at.data(); }
  [[nodiscard]] const input_value* const* end() const noexcept { return at.data() + n; }
};
template <class Schema>
top_input_list top_inputs(const tree_view<Schema>& v, event_index i) {
  top_input_list out;
  const auto ins = v.table().inputs_of(v.event(i));
  for (std::size_t k = 0; k < ins.size() && out.n < out.at.size();
       k += ins[k].subtree == 0 ? 1 : ins[k].subtree)
    out.at[out.n++] = &ins[k];
  return out;
}
/// PyTorch's dtype of an input: a tensor's dtype, or none (empty) for anything else.
template <class Schema>
std::string_view dtype_of(const tree_view<Schema>& v, const input_value* in) {
  if (in == nullptr || in->kind != input_kind::tensor) return {};
  return v.table().strings.view(in->dtype);
}

/// The common shape of PyTorch's patterns: fixed name and description, what they need.
struct pytorch_pattern_base {
  bool enabled = true;
};
}  // namespace detail

/// A CPU tensor filled (`fill_`, `zero_`, `normal_`, `uniform_`) and then moved to the device
/// with `to` (`to` > `_to_copy` > `copy_` with equal dtypes), the filling found by going to the
/// previous sibling of the `to`'s parent and down its last children.
struct extra_cuda_copy_pattern : detail::pytorch_pattern_base {
  [[nodiscard]] static std::string_view name() noexcept { return "Extra CUDA Copy Pattern"; }
  [[nodiscard]] static std::string_view description() noexcept {
    return "A tensor was filled on the CPU and then copied to the GPU; create it on the GPU "
           "instead.";
  }
  [[nodiscard]] static std::optional<std::string> skip(const pattern_context& c) {
    return unmet_needs(needs::stack | needs::shapes, c);
  }
  name_test to = name_is("aten::to"), to_copy = name_is("aten::_to_copy"),
            copy = name_is("aten::copy_");
  name_test fill = name_is("aten::fill_"), zero = name_is("aten::zero_"),
            normal = name_is("aten::normal_"), uniform = name_is("aten::uniform_");
  template <class Schema>
  void prepare(const tree_view<Schema>& v) {
    for (auto* f : {&to, &to_copy, &copy, &fill, &zero, &normal, &uniform}) f->prepare(v);
  }
  template <class Schema>
  bool init_op(const tree_view<Schema>& v, event_index i) {
    return fill.match(v, i) || zero.match(v, i) || normal.match(v, i) || uniform.match(v, i);
  }
  template <class Schema>
  bool match(const tree_view<Schema>& v, event_index i) {
    if (!to.match(v, i)) return false;
    auto kids = v.children(i);
    if (kids.empty() || !to_copy.match(v, kids.back())) return false;
    kids = v.children(kids.back());
    if (kids.empty() || !copy.match(v, kids.back())) return false;
    const auto ins = detail::top_inputs(v, kids.back());
    if (ins.size() < 2) return false;
    const std::string_view d0 = detail::dtype_of(v, ins[0]);
    if (d0.empty() || d0 != detail::dtype_of(v, ins[1])) return false;
    event_index e = v.parent(i);
    if (e == no_event) return false;
    e = v.prev_sibling(e);
    if (e == no_event) return false;
    while (!v.children(e).empty()) {
      e = v.children(e).back();
      if (init_op(v, e)) return true;
    }
    return init_op(v, e);
  }
};

/// At least ten repeats, among siblings, of the same run of ops led by `aten::select` (indexing
/// a tensor element by element in a loop). Breadth-first, so the first select of a loop is met
/// first; the selects that start later repeats are marked visited and not reported again.
struct for_loop_indexing_pattern : detail::pytorch_pattern_base {
  using traversal = breadth_first;
  std::size_t min_repeats = 10;
  [[nodiscard]] static std::string_view name() noexcept { return "For Loop Indexing Pattern"; }
  [[nodiscard]] static std::string_view description() noexcept {
    return "A tensor is indexed one element at a time in a loop; use one vectorized operation "
           "instead.";
  }
  name_test select = name_is("aten::select");
  std::vector<bool> visited;
  template <class Schema>
  void prepare(const tree_view<Schema>& v) {
    select.prepare(v);
    visited.assign(v.size(), false);
  }
  template <class Schema>
  bool match(const tree_view<Schema>& v, event_index i) {
    if (!select.match(v, i) || visited[i]) return false;
    const auto after = v.siblings_after(i);
    if (after.size() <= 1) return false;
    std::size_t next = 0;
    while (next < after.size() && !select.match(v, after[next])) ++next;
    if (next == after.size()) return false;
    const std::size_t len = next + 1;  // the select and the ops up to the next select
    auto same_name = [&v](event_index a, event_index b) { return v.name_key(a) == v.name_key(b); };
    const auto rest = after.subspan(next);
    std::size_t repeats = 1;
    for (std::size_t k = 0; k + len <= rest.size(); k += len) {
      bool same = same_name(i, rest[k]);
      for (std::size_t m = 1; same && m < len; ++m) same = same_name(after[m - 1], rest[k + m]);
      if (!same) break;
      ++repeats;
      visited[rest[k]] = true;
    }
    return repeats >= min_repeats;
  }
};

/// `aten::mm` in FP32 with TF32 not allowed, on a device that supports TF32.
struct fp32_matmul_pattern : detail::pytorch_pattern_base {
  [[nodiscard]] static std::string_view name() noexcept { return "FP32 MatMul Pattern"; }
  [[nodiscard]] static std::string_view description() noexcept {
    return "FP32 matrix multiplications run on a device that supports TF32; allow TF32 "
           "(torch.backends.cuda.matmul.allow_tf32 = True) where its precision is enough.";
  }
  [[nodiscard]] static std::optional<std::string> skip(const pattern_context& c) {
    return unmet_needs(needs::shapes | needs::tf32_device, c);
  }
  name_test mm = name_is("aten::mm");
  std::vector<std::int64_t> tf32_devices;
  std::vector<event_index> stack;
  template <class Schema>
  void prepare(const tree_view<Schema>& v, const pattern_context& c) {
    mm.prepare(v);
    tf32_devices.clear();
    for (const auto& d : c.devices)
      if (d.supports_tf32()) tf32_devices.push_back(d.id);
  }
  [[nodiscard]] bool tf32_device(std::int64_t d) const noexcept {
    return std::find(tf32_devices.begin(), tf32_devices.end(), d) != tf32_devices.end();
  }
  template <class Schema>
  bool match(const tree_view<Schema>& v, event_index i) {
    if (!mm.match(v, i)) return false;  // the name first: it needs no read of the event
    const auto* op = v.event(i).template get_if<event_kind::op>();
    if (op == nullptr || (op->flags & op_flag::allow_tf32) != 0) return false;
    constexpr std::int8_t cuda = 1;  // PyTorch's DeviceType::CUDA
    for (const input_value* in : detail::top_inputs(v, i))
      if (in->kind == input_kind::tensor && in->device_type == cuda &&
          tf32_device(in->device_index))
        return true;
    // Or something it launched ran on such a device.
    stack.assign(v.children(i).begin(), v.children(i).end());
    while (!stack.empty()) {
      const event_index k = stack.back();
      stack.pop_back();
      if (const auto* d = v.event(k).template get_if<event_kind::device_activity>();
          d != nullptr && tf32_device(d->device))
        return true;
      for (event_index c : v.children(k)) stack.push_back(c);
    }
    return false;
  }
  /// One line for all matches, as PyTorch's report does for this pattern.
  static constexpr bool report_location = false;
};

/// An optimizer step in its single-tensor implementation (`_single_tensor_{adam,sgd,adamw}`).
struct optimizer_single_tensor_pattern : detail::pytorch_pattern_base {
  [[nodiscard]] static std::string_view name() noexcept {
    return "Optimizer Single Tensor Pattern";
  }
  [[nodiscard]] static std::string_view description() noexcept {
    return "The optimizer updates one parameter tensor at a time; pass foreach=True to use its "
           "multi-tensor implementation.";
  }
  detail::name_fact<bool (*)(std::string_view)> single{
      [](std::string_view n) {
        for (std::string_view o : {"adam", "sgd", "adamw"}) {
          if (n.size() < o.size() + 15) continue;
          const std::string_view tail = n.substr(n.size() - o.size() - 15);
          if (tail.starts_with("_single_tensor_") && tail.ends_with(o)) return true;
        }
        return false;
      },
      {}};
  template <class Schema>
  void prepare(const tree_view<Schema>& v) {
    single.prepare(v);
  }
  template <class Schema>
  bool match(const tree_view<Schema>& v, event_index i) {
    return single.match(v, i);
  }
};

/// A DataLoader iterated without workers: `dataloader.py … __iter__` whose first child is
/// `_get_iterator`, whose first child is not `check_worker_number_rationality`.
struct synchronized_data_loader_pattern : detail::pytorch_pattern_base {
  [[nodiscard]] static std::string_view name() noexcept {
    return "Synchronized DataLoader Pattern";
  }
  [[nodiscard]] static std::string_view description() noexcept {
    return "The DataLoader loads every batch on the training thread; set num_workers > 0 to load "
           "batches in the background.";
  }
  static constexpr std::string_view file = "torch/utils/data/dataloader.py";
  name_test iter = name_ends_with("__iter__"), get_iterator = name_ends_with("_get_iterator"),
            check = name_ends_with("check_worker_number_rationality"),
            loader = name_starts_with(std::string(file));
  template <class Schema>
  void prepare(const tree_view<Schema>& v) {
    for (auto* f : {&iter, &get_iterator, &check, &loader}) f->prepare(v);
  }
  template <class Schema>
  bool match(const tree_view<Schema>& v, event_index i) {
    if (!loader.match(v, i) || !iter.match(v, i)) return false;
    auto kids = v.children(i);
    if (kids.empty() || !loader.match(v, kids.front()) || !get_iterator.match(v, kids.front()))
      return false;
    kids = v.children(kids.front());
    if (kids.empty()) return false;
    return !(loader.match(v, kids.front()) && check.match(v, kids.front()));
  }
};

/// `zero_grad` that zeroes gradients (an `aten::zero_` below it, not inside `aten::zeros`)
/// instead of setting them to None.
struct grad_not_set_to_none_pattern : detail::pytorch_pattern_base {
  [[nodiscard]] static std::string_view name() noexcept {
    return "Gradient Set To Zero Instead of None Pattern";
  }
  [[nodiscard]] static std::string_view description() noexcept {
    return "Gradients are filled with zeros instead of being released; call "
           "zero_grad(set_to_none=True).";
  }
  name_test zero_grad = name_ends_with(": zero_grad"), zero = name_is("aten::zero_"),
            zeros = name_is("aten::zeros");
  std::vector<event_index> stack;
  template <class Schema>
  void prepare(const tree_view<Schema>& v) {
    for (auto* f : {&zero_grad, &zero, &zeros}) f->prepare(v);
  }
  template <class Schema>
  bool match(const tree_view<Schema>& v, event_index i) {
    if (!zero_grad.match(v, i)) return false;
    stack.assign(v.children(i).rbegin(), v.children(i).rend());
    while (!stack.empty()) {
      const event_index k = stack.back();
      stack.pop_back();
      if (zero.match(v, k) && !zeros.match(v, v.parent(k))) return true;
      const auto kids = v.children(k);
      for (auto it = kids.rbegin(); it != kids.rend(); ++it) stack.push_back(*it);
    }
    return false;
  }
};

/// `aten::conv2d` with a bias (a third input that is a tensor) inside an `nn.Module: Conv2d`
/// whose next sibling is an `nn.Module: BatchNorm2d`.
struct conv2d_bias_followed_by_batch_norm_pattern : detail::pytorch_pattern_base {
  [[nodiscard]] static std::string_view name() noexcept {
    return "Enabling Bias in Conv2d Followed By BatchNorm Pattern";
  }
  [[nodiscard]] static std::string_view description() noexcept {
    return "A Conv2d with a bias feeds a BatchNorm2d, which removes the bias again; create the "
           "Conv2d with bias=False.";
  }
  [[nodiscard]] static std::optional<std::string> skip(const pattern_context& c) {
    return unmet_needs(needs::shapes, c);
  }
  name_test conv = name_is("aten::conv2d"), module = name_starts_with("nn.Module: Conv2d"),
            batch_norm = name_starts_with("nn.Module: BatchNorm2d");
  template <class Schema>
  void prepare(const tree_view<Schema>& v) {
    for (auto* f : {&conv, &module, &batch_norm}) f->prepare(v);
  }
  template <class Schema>
  bool match(const tree_view<Schema>& v, event_index i) {
    if (!conv.match(v, i)) return false;
    const auto ins = detail::top_inputs(v, i);
    if (ins.size() < 3 || detail::dtype_of(v, ins[2]).empty()) return false;
    // Up to the module, or to the root when there is none (PyTorch's `go_up_until`).
    event_index e = i;
    while (v.parent(e) != no_event && !module.match(v, e)) e = v.parent(e);
    e = v.next_sibling(e);
    return e != no_event && batch_norm.match(v, e);
  }
};

/// A half-precision `mm`/`bmm`/`addmm` whose inputs' last two dimensions are not all
/// multiples of 8.
struct matmul_dim_in_fp16_pattern : detail::pytorch_pattern_base {
  [[nodiscard]] static std::string_view name() noexcept {
    return "Matrix Multiplication Dimension Not Aligned Pattern";
  }
  [[nodiscard]] static std::string_view description() noexcept {
    return "A half-precision matrix multiplication has dimensions that are not multiples of 8; pad "
           "them so that tensor cores can be used.";
  }
  [[nodiscard]] static std::optional<std::string> skip(const pattern_context& c) {
    return unmet_needs(needs::stack | needs::shapes, c);
  }
  name_test mm = name_is("aten::mm"), bmm = name_is("aten::bmm"), addmm = name_is("aten::addmm");
  template <class Schema>
  void prepare(const tree_view<Schema>& v) {
    for (auto* f : {&mm, &bmm, &addmm}) f->prepare(v);
  }
  static bool half(std::string_view d) noexcept {
    for (std::string_view h :
         {"c10::Half", "c10::BFloat16", "Half", "BFloat16", "half", "bfloat16", "float16"})
      if (d == h) return true;
    return false;
  }
  template <class Schema>
  bool match(const tree_view<Schema>& v, event_index i) {
    if (!mm.match(v, i) && !bmm.match(v, i) && !addmm.match(v, i)) return false;
    const auto ins = detail::top_inputs(v, i);
    if (ins.empty() || !half(detail::dtype_of(v, ins[0]))) return false;
    for (const input_value* in : ins) {
      const auto sizes = v.table().sizes(*in);
      for (std::size_t k = sizes.size() < 2 ? 0 : sizes.size() - 2; k < sizes.size(); ++k)
        if (sizes[k] % 8 != 0) return true;
    }
    return false;
  }
};

struct pytorch_pattern_options {
  bool for_loop_indexing = true;  ///< newer PyTorch leaves it out of its report
};

/// PyTorch's eight patterns, in the order of its report.
inline auto pytorch_patterns(const pytorch_pattern_options& o = {}) {
  std::tuple<extra_cuda_copy_pattern, for_loop_indexing_pattern, fp32_matmul_pattern,
             optimizer_single_tensor_pattern, synchronized_data_loader_pattern,
             grad_not_set_to_none_pattern, conv2d_bias_followed_by_batch_norm_pattern,
             matmul_dim_in_fp16_pattern>
      all;
  std::get<for_loop_indexing_pattern>(all).enabled = o.for_loop_indexing;
  return all;
}

TRACEMODEL_END_NAMESPACE
