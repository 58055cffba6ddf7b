// mini — a small eager tensor runtime on the CPU, instrumented with tracemodel.
//
// Tensors of floats (views with sizes, strides and an offset into a shared storage), a handful
// of ops (mm, matmul, t, add, relu, sum, select, fill_, binary cross-entropy with logits, an
// SGD step done tensor by tensor), and an autograd engine that runs backward on its own thread
// as PyTorch's does: forward ops that need a gradient get a sequence number, backward ops carry
// it with the forward thread's id, every backward function runs inside an
// `autograd::engine::evaluate_function: ...` wrapper.
//
// The instrumentation uses tracemodel's public API only: a value-traits policy tells the
// encoder what an op input is, the allocator reports allocations and frees, ops record their
// inputs and the module hierarchy, `frame` records the user program's own frames (the
// analogue of Python frames, so reports can point at user code).
#pragma once

#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include <tracemodel/collect.hpp>

namespace mini {

struct tensor_impl;
using tensor = std::shared_ptr<tensor_impl>;

// ---- profiling: what tracemodel needs to know about this runtime ---------------------------

/// An op input as the profiler sees it: a tensor or a number.
struct value {
  const tensor_impl* t = nullptr;
  double number = 0;
  bool is_number = false;
};

/// The encoder's view of `value` (tracemodel/collect/encoder.hpp).
struct value_traits {
  static tracemodel::input_kind kind(const value& v);
  static tracemodel::tensor_info tensor(const value& v);
  static tracemodel::scalar_value scalar(const value& v) {
    return tracemodel::scalar_value::floating(v.number);
  }
  template <class F>
  static void for_each_element(const value&, F&&) {}
  static std::string_view dtype_name(std::uint8_t) { return "float"; }
};

struct record_policies : tracemodel::default_record_policies {
  using value_traits = mini::value_traits;
};
inline constexpr tracemodel::record_features features{.inputs = true, .module_hierarchy = true};
using queue_type = tracemodel::record_queue<tracemodel::default_schema, features, record_policies>;

/// The profiling session (one at a time), the module stack of each thread.
inline queue_type* session = nullptr;
inline thread_local std::vector<std::string_view> module_stack;

/// An op from construction to destruction, with its inputs and the module hierarchy.
class op_scope {
 public:
  /// `name` must outlive the session unless `copy_name` is set (names made at run time).
  op_scope(std::string_view name, std::initializer_list<value> inputs, std::int64_t seq = -1,
           std::uint64_t fwd_tid = 0, tracemodel::op_scope scope = tracemodel::op_scope::function,
           bool copy_name = false) {
    if (session == nullptr) return;
    const std::vector<value> in(inputs);
    h_ = session->begin_op({.name = name,
                            .sequence_number = seq,
                            .fwd_thread_id = fwd_tid,
                            .scope = scope,
                            .copy_name = copy_name},
                           std::span<const value>(in));
    if (h_ && !module_stack.empty()) session->record_module_hierarchy(h_, module_stack);
  }
  op_scope(const op_scope&) = delete;
  op_scope& operator=(const op_scope&) = delete;
  ~op_scope() {
    if (h_) session->end_op(h_);
  }

 private:
  tracemodel::op_handle h_{};
};

/// A user annotation (PyTorch's `record_function`), e.g. "ProfilerStep#3".
class annotation {
 public:
  explicit annotation(std::string name) : name_(std::move(name)) {
    if (session != nullptr)
      h_ = session->begin_op(
          {.name = name_, .scope = tracemodel::op_scope::user_scope, .copy_name = true});
  }
  ~annotation() {
    if (h_) session->end_op(h_);
  }

 private:
  std::string name_;
  tracemodel::op_handle h_{};
};

/// A frame of the user's program, "main.cpp(57): train_step", recorded as a script call.
/// `MINI_FRAME()` opens one for the enclosing function.
class frame {
 public:
  frame(std::string_view file, unsigned line, std::string_view function) {
    if (session == nullptr) return;
    file = file.substr(file.find_last_of('/') + 1);
    name_ = std::string(file) + "(" + std::to_string(line) + "): " + std::string(function);
    start_ = queue_type::now();
  }
  frame(const frame&) = delete;
  frame& operator=(const frame&) = delete;
  ~frame() {
    if (session != nullptr && !name_.empty())
      session->record_script_call(name_, start_, queue_type::now());
  }

 private:
  std::string name_;
  tracemodel::approx_time start_{};
};
#define MINI_FRAME() ::mini::frame mini_frame_(__FILE__, __LINE__, __func__)

/// A module's scope: ops inside record it in their module hierarchy.
class module_scope {
 public:
  explicit module_scope(std::string_view name) { module_stack.push_back(name); }
  ~module_scope() { module_stack.pop_back(); }
};

// ---- memory ---------------------------------------------------------------------------------

/// The allocator: every allocation and free goes to the profiler with the running totals.
struct allocator {
  static inline std::atomic<std::int64_t> allocated{0};
  static float* allocate(std::size_t n) {
    auto* p = new float[n == 0 ? 1 : n]();
    const auto bytes = static_cast<std::int64_t>(n * sizeof(float));
    const std::int64_t total = allocated.fetch_add(bytes) + bytes;
    if (session != nullptr)
      session->record_allocation(reinterpret_cast<std::uint64_t>(p), bytes, total, total);
    return p;
  }
  static void free(float* p, std::size_t n) {
    const auto bytes = static_cast<std::int64_t>(n * sizeof(float));
    const std::int64_t total = allocated.fetch_sub(bytes) - bytes;
    if (session != nullptr)
      session->record_allocation(reinterpret_cast<std::uint64_t>(p), -bytes, total, total);
    delete[] p;
  }
};

struct storage {
  float* data;
  std::size_t size;
  explicit storage(std::size_t n) : data(allocator::allocate(n)), size(n) {}
  storage(const storage&) = delete;
  storage& operator=(const storage&) = delete;
  ~storage() { allocator::free(data, size); }
};

// ---- tensors and autograd nodes ---------------------------------------------------------------

struct node;

struct tensor_impl {
  std::shared_ptr<storage> st;
  std::vector<std::int64_t> sizes;
  std::vector<std::int64_t> strides;
  std::int64_t offset = 0;
  bool requires_grad = false;
  std::shared_ptr<node> grad_fn;  ///< the node that made it (none for leaves)
  tensor grad;                    ///< accumulated gradient of a leaf

  [[nodiscard]] std::int64_t numel() const {
    return std::accumulate(sizes.begin(), sizes.end(), std::int64_t{1}, std::multiplies<>());
  }
  /// Element (i, j) of a 2-D tensor (j ignored for 1-D, both for 0-D).
  float& at(std::int64_t i, std::int64_t j = 0) const {
    std::int64_t k = offset;
    if (!sizes.empty()) k += i * strides[0];
    if (sizes.size() > 1) k += j * strides[1];
    return st->data[k];
  }
  [[nodiscard]] std::int64_t rows() const { return sizes.empty() ? 1 : sizes[0]; }
  [[nodiscard]] std::int64_t cols() const { return sizes.size() < 2 ? 1 : sizes[1]; }
};

inline tracemodel::input_kind value_traits::kind(const value& v) {
  if (v.is_number) return tracemodel::input_kind::scalar;
  return v.t != nullptr ? tracemodel::input_kind::tensor : tracemodel::input_kind::undefined_tensor;
}
inline tracemodel::tensor_info value_traits::tensor(const value& v) {
  return {reinterpret_cast<std::uint64_t>(v.t),
          reinterpret_cast<std::uint64_t>(v.t->st->data),
          0,
          -1,
          0,
          tracemodel::strided_layout,
          v.t->sizes,
          v.t->strides};
}
inline value in(const tensor& t) { return {t.get(), 0, false}; }
inline value in(double x) { return {nullptr, x, true}; }

/// A backward function: its gradient formula and where the input gradients go.
struct node {
  std::string name;            ///< "MmBackward0"
  std::int64_t sequence_nr;    ///< of the forward op that made it
  std::uint64_t fwd_tid;       ///< the thread that ran the forward op
  std::vector<tensor> inputs;  ///< the forward op's inputs (edges: their grad_fn or leaf)
  std::function<std::vector<tensor>(const tensor& grad_out)> apply;
};

/// Grad mode and sequence numbers are per thread, as in PyTorch.
inline thread_local bool grad_enabled = true;
inline thread_local std::int64_t next_sequence_nr = 0;

inline tensor empty(std::vector<std::int64_t> sizes) {
  auto t = std::make_shared<tensor_impl>();
  t->sizes = std::move(sizes);
  t->strides.assign(t->sizes.size(), 1);
  for (std::size_t k = t->sizes.size(); k-- > 1;) t->strides[k - 1] = t->strides[k] * t->sizes[k];
  t->st = std::make_shared<storage>(static_cast<std::size_t>(t->numel()));
  return t;
}

/// Whether an op on `ins` records a backward node; if so, its sequence number.
inline std::int64_t sequence_for(std::initializer_list<tensor> ins) {
  if (!grad_enabled) return -1;
  for (const tensor& t : ins)
    if (t && t->requires_grad) return next_sequence_nr++;
  return -1;
}
inline void attach(const tensor& out, std::int64_t seq, std::string name,
                   std::vector<tensor> inputs,
                   std::function<std::vector<tensor>(const tensor&)> apply) {
  if (seq < 0) return;
  out->requires_grad = true;
  out->grad_fn = std::make_shared<node>(node{std::move(name), seq, tracemodel::current_thread_id(),
                                             std::move(inputs), std::move(apply)});
}

// ---- ops ------------------------------------------------------------------------------------

inline tensor t(const tensor& a);
inline tensor mm(const tensor& a, const tensor& b);
inline tensor add(const tensor& a, const tensor& b);

inline tensor fill_(const tensor& a, double v) {
  op_scope op("aten::fill_", {in(a), in(v)});
  for (std::int64_t i = 0; i < a->rows(); ++i)
    for (std::int64_t j = 0; j < a->cols(); ++j) a->at(i, j) = static_cast<float>(v);
  return a;
}

inline tensor zeros(std::vector<std::int64_t> sizes) {
  op_scope op("aten::zeros", {});
  return empty(std::move(sizes));
}

/// Row `i` of a 2-D tensor, a view.
inline tensor select(const tensor& a, std::int64_t i) {
  op_scope op("aten::select", {in(a), in(0.0), in(static_cast<double>(i))});
  auto v = std::make_shared<tensor_impl>(*a);
  v->grad_fn = nullptr;
  v->requires_grad = false;
  v->offset = a->offset + i * a->strides[0];
  v->sizes.erase(v->sizes.begin());
  v->strides.erase(v->strides.begin());
  return v;
}

/// The transpose of a 2-D tensor, a view.
inline tensor t(const tensor& a) {
  const std::int64_t seq = sequence_for({a});
  op_scope op("aten::t", {in(a)}, seq);
  auto v = std::make_shared<tensor_impl>(*a);
  v->grad_fn = nullptr;
  v->requires_grad = false;
  std::swap(v->sizes[0], v->sizes[1]);
  std::swap(v->strides[0], v->strides[1]);
  attach(v, seq, "TBackward0", {a}, [](const tensor& g) { return std::vector<tensor>{t(g)}; });
  return v;
}

inline tensor mm(const tensor& a, const tensor& b) {
  const std::int64_t seq = sequence_for({a, b});
  op_scope op("aten::mm", {in(a), in(b)}, seq);
  tensor out = empty({a->rows(), b->cols()});
  for (std::int64_t i = 0; i < a->rows(); ++i)
    for (std::int64_t j = 0; j < b->cols(); ++j) {
      float s = 0;
      for (std::int64_t k = 0; k < a->cols(); ++k) s += a->at(i, k) * b->at(k, j);
      out->at(i, j) = s;
    }
  attach(out, seq, "MmBackward0", {a, b}, [a, b](const tensor& g) {
    return std::vector<tensor>{mm(g, t(b)), mm(t(a), g)};
  });
  return out;
}

/// matmul of two 2-D tensors: aten::matmul > aten::mm, as PyTorch dispatches it.
inline tensor matmul(const tensor& a, const tensor& b) {
  op_scope op("aten::matmul", {in(a), in(b)});
  return mm(a, b);
}

/// a + b, b broadcast along rows when it is 1-D.
inline tensor add(const tensor& a, const tensor& b) {
  const std::int64_t seq = sequence_for({a, b});
  op_scope op("aten::add", {in(a), in(b), in(1.0)}, seq);
  tensor out = empty(a->sizes);
  const bool row = b->sizes.size() == 1 && a->sizes.size() == 2;
  for (std::int64_t i = 0; i < a->rows(); ++i)
    for (std::int64_t j = 0; j < a->cols(); ++j)
      out->at(i, j) = a->at(i, j) + (row ? b->at(j) : b->at(i, j));
  attach(out, seq, "AddBackward0", {a, b}, [row, bs = b->sizes](const tensor& g) {
    if (!row) return std::vector<tensor>{g, g};
    // The bias gradient: the sum over rows.
    op_scope sum_op("aten::sum", {in(g), in(0.0)});
    tensor gb = empty(bs);
    for (std::int64_t i = 0; i < g->rows(); ++i)
      for (std::int64_t j = 0; j < g->cols(); ++j) gb->at(j) += g->at(i, j);
    return std::vector<tensor>{g, gb};
  });
  return out;
}

inline tensor relu(const tensor& a) {
  const std::int64_t seq = sequence_for({a});
  op_scope op("aten::relu", {in(a)}, seq);
  tensor out = empty(a->sizes);
  for (std::int64_t i = 0; i < a->rows(); ++i)
    for (std::int64_t j = 0; j < a->cols(); ++j) out->at(i, j) = std::max(0.0f, a->at(i, j));
  // The gradient formula keeps the input, not the output: a node that held its own output
  // would keep itself alive (output -> grad_fn -> output).
  attach(out, seq, "ReluBackward0", {a}, [a](const tensor& g) {
    op_scope mask("aten::threshold_backward", {in(g), in(a), in(0.0)});
    tensor r = empty(g->sizes);
    for (std::int64_t i = 0; i < g->rows(); ++i)
      for (std::int64_t j = 0; j < g->cols(); ++j)
        r->at(i, j) = a->at(i, j) > 0 ? g->at(i, j) : 0.0f;
    return std::vector<tensor>{r};
  });
  return out;
}

/// The mean over all elements of the loss of logits `x` against targets `y` (0-D result).
inline tensor binary_cross_entropy_with_logits(const tensor& x, const tensor& y) {
  const std::int64_t seq = sequence_for({x});
  op_scope op("aten::binary_cross_entropy_with_logits", {in(x), in(y), value{}, value{}, in(1.0)},
              seq);
  tensor out = empty({});
  const auto n = static_cast<float>(x->numel());
  float s = 0;
  for (std::int64_t i = 0; i < x->rows(); ++i)
    for (std::int64_t j = 0; j < x->cols(); ++j) {
      const float v = x->at(i, j);
      s += std::max(v, 0.0f) - v * y->at(i, j) + std::log1p(std::exp(-std::fabs(v)));
    }
  out->at(0) = s / n;
  attach(out, seq, "BinaryCrossEntropyWithLogitsBackward0", {x}, [x, y, n](const tensor& g) {
    op_scope back("aten::binary_cross_entropy_with_logits_backward", {in(g), in(x), in(y)});
    tensor r = empty(x->sizes);
    for (std::int64_t i = 0; i < x->rows(); ++i)
      for (std::int64_t j = 0; j < x->cols(); ++j)
        r->at(i, j) = g->at(0) * (1.0f / (1.0f + std::exp(-x->at(i, j))) - y->at(i, j)) / n;
    return std::vector<tensor>{r};
  });
  return out;
}

/// In place: p += alpha * g (a parameter update; never recorded for autograd).
inline void add_(const tensor& p, const tensor& g, double alpha) {
  op_scope op("aten::add_", {in(p), in(g), in(alpha)});
  for (std::int64_t i = 0; i < p->rows(); ++i)
    for (std::int64_t j = 0; j < p->cols(); ++j)
      p->at(i, j) += static_cast<float>(alpha) * g->at(i, j);
}

// ---- the autograd engine: backward runs on its own thread -----------------------------------

class engine {
 public:
  engine() : worker_([this] { run(); }) {}
  engine(const engine&) = delete;
  engine& operator=(const engine&) = delete;
  ~engine() {
    {
      std::lock_guard<std::mutex> l(m_);
      stop_ = true;
    }
    cv_.notify_all();
    worker_.join();
  }
  /// Runs backward from the 0-D `root` on the engine's thread and waits for it.
  void backward(const tensor& root) {
    std::unique_lock<std::mutex> l(m_);
    job_ = root;
    cv_.notify_all();
    cv_.wait(l, [this] { return job_ == nullptr; });
  }

 private:
  void run() {
    grad_enabled = false;
    std::unique_lock<std::mutex> l(m_);
    while (true) {
      cv_.wait(l, [this] { return stop_ || job_ != nullptr; });
      if (stop_) return;
      execute(job_);
      job_ = nullptr;
      cv_.notify_all();
    }
  }
  /// Nodes in order of decreasing sequence number once their dependencies are done, as
  /// PyTorch's engine orders its ready queue.
  static void execute(const tensor& root) {
    std::map<node*, int> pending;
    std::vector<node*> stack{root->grad_fn.get()};
    std::map<node*, bool> seen;
    while (!stack.empty()) {
      node* n = stack.back();
      stack.pop_back();
      if (seen[n]) continue;
      seen[n] = true;
      for (const tensor& x : n->inputs)
        if (x->grad_fn) {
          ++pending[x->grad_fn.get()];
          stack.push_back(x->grad_fn.get());
        }
    }
    std::map<node*, tensor> grads;
    tensor one = empty({});
    one->at(0) = 1;
    grads[root->grad_fn.get()] = one;
    auto later = [](node* a, node* b) { return a->sequence_nr < b->sequence_nr; };
    std::vector<node*> ready{root->grad_fn.get()};
    while (!ready.empty()) {
      std::pop_heap(ready.begin(), ready.end(), later);
      node* n = ready.back();
      ready.pop_back();
      std::vector<tensor> outs;
      {
        op_scope wrapper("autograd::engine::evaluate_function: " + n->name, {}, -1, 0,
                         tracemodel::op_scope::backward_function, true);
        op_scope fn(n->name, {in(grads[n])}, n->sequence_nr, n->fwd_tid,
                    tracemodel::op_scope::backward_function, true);
        outs = n->apply(grads[n]);
      }
      for (std::size_t k = 0; k < n->inputs.size() && k < outs.size(); ++k) {
        const tensor& x = n->inputs[k];
        if (x->grad_fn) {
          tensor& acc = grads[x->grad_fn.get()];
          acc = acc ? add(acc, outs[k]) : outs[k];
          if (--pending[x->grad_fn.get()] == 0) {
            ready.push_back(x->grad_fn.get());
            std::push_heap(ready.begin(), ready.end(), later);
          }
        } else if (x->requires_grad) {
          op_scope wrapper("autograd::engine::evaluate_function: torch::autograd::AccumulateGrad",
                           {}, -1, 0, tracemodel::op_scope::backward_function);
          op_scope acc("torch::autograd::AccumulateGrad", {in(outs[k])}, -1, 0,
                       tracemodel::op_scope::backward_function);
          if (x->grad) {  // as PyTorch's AccumulateGrad: an in-place add, or a detach when new
            add_(x->grad, outs[k], 1.0);
          } else {
            op_scope detach("aten::detach", {in(outs[k])});
            x->grad = outs[k];
          }
        }
      }
      grads.erase(n);
    }
  }

  std::mutex m_;
  std::condition_variable cv_;
  tensor job_;
  bool stop_ = false;
  std::thread worker_;
};

}  // namespace mini
