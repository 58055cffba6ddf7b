// tracemodel/adapters/libtorch.hpp — the optional libtorch adapter: PyTorch's C++ runtime recorded
// into a tracemodel record queue through its RecordFunction observers, where PyTorch's own
// profiler gets its ops (needs libtorch: link tracemodel::libtorch, from
// find_package(tracemodel COMPONENTS libtorch)). Nothing else includes it.
//
//   using queue_t = tracemodel::record_queue<tracemodel::default_schema,
//                                            tracemodel::record_features{.inputs = true},
//                                            tracemodel::libtorch::policies>;
//   queue_t queue;
//   tracemodel::libtorch::observer<queue_t> obs(queue);
//   obs.start();  ... model(x) ... ;  obs.stop();
//   tracemodel::event_table t = tracemodel::materialize(queue);
//
// Each op is recorded with its name (a registered operator's referenced, any other copied), scope,
// sequence number, forward thread id (in tracemodel's thread ids, so that backward ops on the
// autograd thread link to their forward ops), debug handle, asynchrony and, when the queue records
// inputs, its inputs through `ivalue_traits` (tensors with sizes, strides, dtype, device, storage
// and implementation addresses; scalars; tensor lists and scalar lists element by element), and,
// when the queue records module frames, the TorchScript module hierarchy. Allocations and frees
// (when the queue's schema has allocations, `observer_options::memory`) come the way PyTorch's
// profiler receives them: c10's allocators report to the memory reporter of the thread's debug
// info (`PROFILER_STATE`), which the observer installs on the thread that starts it and which
// PyTorch hands on to the threads that run for it (the autograd engine's, `at::launch`'s): every
// allocation and free with its address, size, device, total allocated and reserved, and failed
// allocations as out-of-memory events. The tree puts each under the op that was running. PyTorch's
// profiler uses that same slot: on a thread where it is running, the observer records no memory
// (and PyTorch's profiler must not start on a thread while the observer runs there). The queue's
// op hooks see
// each op's correlation id, as with any begin_op (the CUPTI adapter's hooks hand it to the device
// activities). While no observer is started, RecordFunction has no callback of ours: the runtime
// pays nothing. RecordFunction's own sampling (`observer_options::sampling`) and scope filter
// apply.
//
// Debian's libtorch is built with NDEBUG, and RecordFunction::inputs() checks, in a build
// without NDEBUG, a flag that such a library never sets: a unit that records inputs must be
// compiled with NDEBUG (a static_assert says so).
#pragma once

#include <ATen/core/ivalue.h>
#include <ATen/record_function.h>
#include <c10/core/Allocator.h>
#include <c10/core/ScalarType.h>
#include <c10/util/ThreadLocalDebugInfo.h>
#include <torch/csrc/jit/runtime/interpreter.h>
// (after ivalue.h, which it needs complete)
#include <ATen/core/function_schema.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tracemodel/collect/record_queue.hpp"
#include "tracemodel/config.hpp"

TRACEMODEL_BEGIN_NAMESPACE
namespace libtorch {

/// Value traits of `c10::IValue` (collect/encoder.hpp), as PyTorch's profiler reads its inputs:
/// a defined, non-nested tensor is a tensor, any other an undefined tensor; ints, doubles and
/// bools are scalars; lists are tensor lists or scalar lists by their first element (an empty
/// list is a scalar list), element by element. (Inlined into the encoder's loop: a call per
/// tensor returning its description through memory costs about 40 instructions.)
struct ivalue_traits {
  TRACEMODEL_ALWAYS_INLINE static input_kind kind(const c10::IValue& v) {
    if (v.isTensor()) {
      const at::Tensor& t = v.toTensor();
      return t.defined() && !t.is_nested() ? input_kind::tensor : input_kind::undefined_tensor;
    }
    if (v.isInt() || v.isDouble() || v.isBool()) return input_kind::scalar;
    if (v.isList()) {  // by its elements: a tag check each, where isTensorList() is a call
      const c10::ArrayRef<c10::IValue> elements = v.toListRef();
      if (elements.empty()) return input_kind::scalar_list;
      const c10::IValue& first = elements.front();
      if (first.isTensor()) return input_kind::tensor_list;
      if (first.isInt() || first.isDouble() || first.isBool()) return input_kind::scalar_list;
    }
    return input_kind::other;
  }
  TRACEMODEL_ALWAYS_INLINE static tensor_info tensor(const c10::IValue& v) {
    const at::Tensor& t = v.toTensor();
    tensor_info i;
    const c10::TensorImpl* impl = t.unsafeGetTensorImpl();
    i.impl = reinterpret_cast<std::uint64_t>(impl);
    // (no virtual call: a tensor without storage, or whose storage may not be read, has none)
    const c10::Storage& storage = impl->unsafe_storage();
    i.storage = storage ? reinterpret_cast<std::uint64_t>(storage.data()) : 0;
    const c10::Device device = impl->device();  // (each call checks it again)
    i.device_type = static_cast<std::int8_t>(device.type());
    i.device_index = static_cast<std::int8_t>(device.index());
    i.dtype = static_cast<std::uint8_t>(t.scalar_type());
    const c10::Layout layout = impl->layout();
    i.layout = static_cast<std::uint8_t>(layout);  // at::kStrided is 0, as strided_layout
    const c10::IntArrayRef sizes = t.sizes();
    i.sizes = {sizes.data(), sizes.size()};
    if (layout == at::kStrided) {
      const c10::IntArrayRef strides = t.strides();
      i.strides = {strides.data(), strides.size()};
    }
    return i;
  }
  TRACEMODEL_ALWAYS_INLINE static scalar_value scalar(const c10::IValue& v) {
    if (v.isInt()) return scalar_value::integer(v.toInt());
    if (v.isDouble()) return scalar_value::floating(v.toDouble());
    if (v.isBool()) return scalar_value::boolean(v.toBool());
    return {};
  }
  template <class F>
  static void for_each_element(const c10::IValue& v, F&& f) {
    if (v.isList())
      for (const c10::IValue& e : v.toListRef()) f(e);
  }
  /// The dtype's name as PyTorch's profiler writes it ("float", "long int", "c10::Half").
  static std::string_view dtype_name(std::uint8_t code) {
    if (code >= static_cast<std::uint8_t>(c10::ScalarType::NumOptions)) return "unknown";
    const c10::string_view n = c10::scalarTypeToTypeMeta(static_cast<c10::ScalarType>(code)).name();
    return {n.data(), n.size()};
  }
};
static_assert(value_traits<ivalue_traits, c10::IValue>);

/// Record policies for a queue that records libtorch's ops with their inputs.
struct policies : default_record_policies {
  using value_traits = ivalue_traits;
};

struct observer_options {
  bool inputs = true;  ///< ask RecordFunction for inputs (when the queue records them)
  /// The TorchScript module hierarchy of each op run by the interpreter, as PyTorch's
  /// `with_modules` (when the queue records module frames; not for backward ops).
  bool modules = true;
  /// Copy every op's name. Otherwise the names of registered operators (ops the dispatcher
  /// runs) are referenced: they live as long as the operator's registration, so materialize
  /// before unregistering an operator that ran while recording. Other names (backward nodes,
  /// user scopes) are always copied: they die with their RecordFunction.
  bool copy_all_names = false;
  double sampling = 1.0;  ///< RecordFunction's sampling probability for our callback
  /// Record allocations, frees and failed allocations (when the queue's schema has them), as
  /// PyTorch's `profile_memory=True`.
  bool memory = false;
  /// The scopes recorded (empty: all). User scopes are `at::RecordScope::USER_SCOPE`.
  std::vector<at::RecordScope> scopes{};
};

namespace detail {
/// PyTorch's thread ids (RecordFunction::currentThreadId) to tracemodel's, for forward thread
/// ids: each thread that records maps its own on its first op.
inline std::array<std::atomic<std::uint64_t>, 4096>& thread_map() {
  static std::array<std::atomic<std::uint64_t>, 4096> map{};
  return map;
}
inline std::uint64_t our_thread(std::uint64_t torch_tid) noexcept {
  if (torch_tid == 0 || torch_tid >= thread_map().size()) return 0;
  return thread_map()[torch_tid].load(std::memory_order_relaxed);
}

// RecordFunction holds its name either as the schema of a registered operator or as a string of
// its own, and says which only through a copy of the operator's name. The member is read through
// an explicit instantiation, which may name private members: a libtorch whose member has another
// type fails to compile here instead of reading the wrong thing.
struct name_member_tag {
  using type = c10::variant<std::string, at::RecordFunction::schema_ref_t> at::RecordFunction::*;
  friend type member(name_member_tag);
};
template <class Tag, typename Tag::type M>
struct expose_member {
  friend typename Tag::type member(Tag) { return M; }
};
template struct expose_member<name_member_tag, &at::RecordFunction::fn_>;

/// The name of the op's registered operator (it lives as long as the registration), or empty
/// when the op names itself.
inline std::string_view operator_name(const at::RecordFunction& fn) noexcept {
  const auto* schema =
      c10::get_if<at::RecordFunction::schema_ref_t>(&(fn.*member(name_member_tag{})));
  return schema != nullptr ? std::string_view(schema->get().name()) : std::string_view();
}
}  // namespace detail

/// The memory reporter the observer installs as the thread's `PROFILER_STATE` debug info.
template <class Queue>
class memory_reporter final : public c10::MemoryReportingInfoBase {
 public:
  explicit memory_reporter(Queue& q) : queue_(q) {}
  void reportMemoryUsage(void* ptr, std::int64_t alloc_size, std::int64_t total_allocated,
                         std::int64_t total_reserved, c10::Device device) override {
    if constexpr (Queue::schema_type::template contains<event_kind::allocation>)
      if (enabled_.load(std::memory_order_relaxed))
        queue_.record_allocation(reinterpret_cast<std::uint64_t>(ptr), alloc_size, total_allocated,
                                 total_reserved, static_cast<std::int8_t>(device.type()),
                                 static_cast<std::int8_t>(device.index()));
  }
  void reportOutOfMemory(std::int64_t alloc_size, std::int64_t total_allocated,
                         std::int64_t total_reserved, c10::Device device) override {
    if constexpr (Queue::schema_type::template contains<event_kind::out_of_memory>)
      if (enabled_.load(std::memory_order_relaxed))
        queue_.record_out_of_memory(alloc_size, total_allocated, total_reserved,
                                    static_cast<std::int8_t>(device.type()),
                                    static_cast<std::int8_t>(device.index()));
  }
  [[nodiscard]] bool memoryProfilingEnabled() const override {
    return enabled_.load(std::memory_order_relaxed);
  }
  /// Threads that picked the reporter up may still report after stop: they record nothing.
  void disable() noexcept { enabled_.store(false, std::memory_order_relaxed); }

 private:
  Queue& queue_;
  std::atomic<bool> enabled_{true};
};

/// A RecordFunction observer recording into `Queue` (a `record_queue`). One observer of a given
/// queue type is started at a time. Synchronous ops are ended through a per-thread stack of
/// open ops (no allocation per op); asynchronous ones, and ops nested more than 128 deep, carry
/// their handle in an observer context.
template <class Queue>
class observer {
 public:
  explicit observer(Queue& queue, observer_options options = {})
      : queue_(queue), options_(std::move(options)) {}
  observer(const observer&) = delete;
  observer& operator=(const observer&) = delete;
  ~observer() { stop(); }

  /// Adds the callback to RecordFunction (process-wide) and starts the queue.
  void start() {
    if (handle_ != 0) return;
    static_assert(!Queue::features.inputs || inputs_readable,
                  "tracemodel::libtorch: compile with NDEBUG to record inputs (RecordFunction::"
                  "inputs() asserts a flag that a release libtorch never sets)");
    current() = this;
    auto cb = at::RecordFunctionCallback(&on_enter, &on_exit)
                  .needsInputs(Queue::features.inputs && options_.inputs)
                  .needsIds(true)
                  .samplingProb(options_.sampling);
    if (!options_.scopes.empty()) cb.scopes({options_.scopes.begin(), options_.scopes.end()});
    queue_.start();
    handle_ = at::addGlobalCallback(std::move(cb));
    if constexpr (Queue::schema_type::template contains<event_kind::allocation>)
      if (options_.memory &&
          c10::ThreadLocalDebugInfo::get(c10::DebugInfoKind::PROFILER_STATE) == nullptr) {
        reporter_ = std::make_shared<memory_reporter<Queue>>(queue_);
        c10::ThreadLocalDebugInfo::_push(c10::DebugInfoKind::PROFILER_STATE, reporter_);
      }
  }
  /// Removes the callback (the runtime pays nothing for it after) and stops the queue.
  void stop() {
    if (handle_ == 0) return;
    at::removeCallback(handle_);
    handle_ = 0;
    if (reporter_) {
      reporter_->disable();
      if (c10::ThreadLocalDebugInfo::get(c10::DebugInfoKind::PROFILER_STATE) == reporter_.get())
        c10::ThreadLocalDebugInfo::_pop(c10::DebugInfoKind::PROFILER_STATE);
      reporter_.reset();
    }
    queue_.stop();
    if (current() == this) current() = nullptr;
  }
  [[nodiscard]] bool active() const noexcept { return handle_ != 0; }

 private:
#ifdef NDEBUG
  static constexpr bool inputs_readable = true;
#else
  static constexpr bool inputs_readable = false;
#endif

  struct open_op {
    const at::RecordFunction* fn;
    op_handle handle;
  };
  struct context : at::ObserverContext {
    explicit context(op_handle h) : handle(h) {}
    op_handle handle;
  };
  /// The thread's open synchronous ops, innermost last. An op nested deeper than it holds
  /// carries its handle in an observer context instead, as an asynchronous one does.
  struct open_stack {
    static constexpr std::size_t capacity = 128;
    std::size_t size;
    open_op ops[capacity];
  };

  static observer*& current() {
    static observer* o = nullptr;
    return o;
  }
  static open_stack& stack() {
    static thread_local open_stack s{};  // (trivial: no guard or destructor per thread)
    return s;
  }

  static std::unique_ptr<at::ObserverContext> on_enter(const at::RecordFunction& fn) {
    observer* self = current();
    if (self == nullptr) return nullptr;
    static thread_local bool mapped = false;
    if (!mapped) [[unlikely]] {  // this thread's PyTorch id -> ours
      const std::uint64_t t = at::RecordFunction::currentThreadId();
      if (t != 0 && t < detail::thread_map().size())
        detail::thread_map()[t].store(current_thread_id(), std::memory_order_relaxed);
      mapped = true;
    }
    const bool async = fn.isAsync();
    const std::string_view registered = detail::operator_name(fn);
    const bool own_name = registered.empty();  // a string that dies with the RecordFunction
    const op_info info{.name = own_name ? std::string_view(fn.name()) : registered,
                       .sequence_number = fn.seqNr(),
                       .fwd_thread_id = detail::our_thread(fn.forwardThreadId()),
                       .scope = static_cast<op_scope>(fn.scope()),
                       .is_async = async,
                       .copy_name = own_name || self->options_.copy_all_names,
                       .debug_handle = fn.debugHandle()};
    op_handle h;
    if constexpr (Queue::features.inputs && inputs_readable) {
      if (self->options_.inputs) {
        const c10::ArrayRef<const c10::IValue> in = fn.inputs();
        h = self->queue_.begin_op(info, std::span<const c10::IValue>(in.data(), in.size()));
      } else {
        h = self->queue_.begin_op(info);
      }
    } else {
      h = self->queue_.begin_op(info);
    }
    if (!h) return nullptr;
    if constexpr (Queue::features.module_hierarchy)
      if (self->options_.modules && fn.scope() != at::RecordScope::BACKWARD_FUNCTION) {
        const std::vector<std::string> modules = torch::jit::currentModuleHierarchy();
        if (!modules.empty()) {
          const std::vector<std::string_view> frames(modules.begin(), modules.end());
          self->queue_.record_module_hierarchy(h, frames);
        }
      }
    open_stack& s = stack();
    if (async || s.size == open_stack::capacity) [[unlikely]]
      return std::make_unique<context>(h);
    s.ops[s.size++] = {&fn, h};
    return nullptr;
  }

  static void on_exit(const at::RecordFunction& fn, at::ObserverContext* ctx) {
    if (ctx != nullptr) {
      finish(static_cast<context*>(ctx)->handle);
      return;
    }
    open_stack& s = stack();
    for (std::size_t k = s.size; k-- > 0;)  // the top, unless an op's end was skipped
      if (s.ops[k].fn == &fn) [[likely]] {
        finish(s.ops[k].handle);
        for (std::size_t j = k + 1; j < s.size; ++j) s.ops[j - 1] = s.ops[j];
        --s.size;  // (also once stopped: the stack keeps only ops still open)
        return;
      }
  }

  /// Ends an op in the queue of the observer started now, if it began there: none once stopped
  /// (the op stays open in its queue), and not one that began under an observer stopped since.
  static void finish(op_handle h) noexcept {
    observer* self = current();
    if (self != nullptr && h.queue == self->queue_.id()) [[likely]]
      self->queue_.end_op(h);
  }

  Queue& queue_;
  observer_options options_;
  at::CallbackHandle handle_ = 0;
  std::shared_ptr<memory_reporter<Queue>> reporter_;
};

}  // namespace libtorch
TRACEMODEL_END_NAMESPACE
