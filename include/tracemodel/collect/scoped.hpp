// tracemodel/collect — RAII op scopes and the recording macros.
//
//   TRACEMODEL_SCOPED_OP(queue, .name = "aten::add", .sequence_number = seq);
//
// records an op from here to the end of the enclosing scope. With TRACEMODEL_ENABLE_COLLECTION
// off, the macro compiles to nothing: its arguments are still type-checked (inside a lambda that
// is never called) but never evaluated.
#pragma once

#include <utility>

#include "tracemodel/collect/record_queue.hpp"
#include "tracemodel/config.hpp"

TRACEMODEL_BEGIN_NAMESPACE

/// Begins an op on construction and ends it on destruction.
template <class Queue>
class scoped_op {
 public:
  scoped_op(Queue& q, const op_info& info) : q_(&q), h_(q.begin_op(info)) {}
  template <class V>
  scoped_op(Queue& q, const op_info& info, std::span<const V> inputs)
      : q_(&q), h_(q.begin_op(info, inputs)) {}
  scoped_op(const scoped_op&) = delete;
  scoped_op& operator=(const scoped_op&) = delete;
  ~scoped_op() {
    if (h_) q_->end_op(h_);
  }
  [[nodiscard]] op_handle handle() const noexcept { return h_; }

 private:
  Queue* q_;
  op_handle h_;
};

TRACEMODEL_END_NAMESPACE

#define TRACEMODEL_DETAIL_CAT2(a, b) a##b
#define TRACEMODEL_DETAIL_CAT(a, b) TRACEMODEL_DETAIL_CAT2(a, b)

#if TRACEMODEL_ENABLE_COLLECTION
#define TRACEMODEL_SCOPED_OP(queue, ...)                                                   \
  ::tracemodel::scoped_op<std::remove_reference_t<decltype(queue)>> TRACEMODEL_DETAIL_CAT( \
      tracemodel_scoped_op_, __LINE__) {                                                   \
    (queue), ::tracemodel::op_info { __VA_ARGS__ }                                         \
  }
#else
#define TRACEMODEL_SCOPED_OP(queue, ...)                                               \
  [[maybe_unused]] auto TRACEMODEL_DETAIL_CAT(tracemodel_scoped_op_, __LINE__) = [&] { \
    (void)(queue);                                                                     \
    return ::tracemodel::op_info{__VA_ARGS__};                                         \
  }
#endif
