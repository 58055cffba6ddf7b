// tracemodel/testing — building event tables by hand, for tests (ours and yours).
//
//   tracemodel::testing::table_builder b;
//   b.op("aten::add", 0, 10).op("aten::mul", 2, 5, /*tid=*/2);
//   b.device("kernel", activity_type::kernel, 12, 20).correlation(7);
//   tracemodel::event_table t = b.take();
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string_view>
#include <utility>

#include "tracemodel/config.hpp"
#include "tracemodel/model/table.hpp"

TRACEMODEL_BEGIN_NAMESPACE
namespace testing {

class table_builder {
 public:
  using event_type = event_table::event_type;
  using op_fields = extra_fields<event_kind::op>;
  using device_fields = extra_fields<event_kind::device_activity>;

  /// An op from `start` to `end` (ns); end `no_end_ns` for an op that never ended.
  table_builder& op(std::string_view name, std::int64_t start, std::int64_t end, thread_key tid = 1,
                    process_key pid = 1) {
    event_type& e = add(start, tid, pid);
    auto& f = e.template new_fields<event_kind::op>();
    f.name = t_.strings.intern(name);
    f.end_ns = end;
    f.end_tid = tid;
    f.correlation_id = ++next_correlation_;
    if (end == no_end_ns) f.flags |= op_flag::unfinished;
    return *this;
  }
  /// A user annotation (op with user scope).
  table_builder& annotation(std::string_view name, std::int64_t start, std::int64_t end,
                            thread_key tid = 1, process_key pid = 1) {
    op(name, start, end, tid, pid);
    last_op().scope = op_scope::user_scope;
    return *this;
  }
  /// Sets sequence number and forward thread id of the last op (a backward op has fwd > 0).
  table_builder& seq(std::int64_t sequence_number, std::uint64_t fwd_thread_id = 0) {
    last_op().sequence_number = sequence_number;
    last_op().fwd_thread_id = fwd_thread_id;
    return *this;
  }
  table_builder& scope(op_scope s) {
    last_op().scope = s;
    return *this;
  }
  /// Gives the last op tensor inputs, (implementation, storage) address pairs, each of sizes
  /// `dims` (no strides, no dtype).
  table_builder& tensors(std::initializer_list<std::pair<std::uint64_t, std::uint64_t>> inputs,
                         std::initializer_list<std::int64_t> dims = {2}) {
    auto& op = last_op();
    op.inputs.first = static_cast<std::uint32_t>(t_.inputs.size());
    for (const auto& [impl, storage] : inputs) {
      input_value v;
      v.kind = input_kind::tensor;
      v.impl = impl;
      v.storage = storage;
      v.rank = static_cast<std::uint32_t>(dims.size());
      v.dims = static_cast<std::uint32_t>(t_.ints.size());
      for (const std::int64_t d : dims) t_.ints.push_back(d);
      t_.inputs.push_back(v);
    }
    op.inputs.size = static_cast<std::uint32_t>(inputs.size());
    return *this;
  }
  /// Sets the last op's recorded depth (ops of its thread open when it began).
  table_builder& depth(std::uint16_t d) {
    last_op().depth = d;
    return *this;
  }
  /// A device activity or runtime call.
  table_builder& device(std::string_view name, activity_type a, std::int64_t start,
                        std::int64_t end, thread_key tid = 7, process_key pid = 0) {
    event_type& e = add(start, tid, pid);
    auto& f = e.fields.template emplace<default_schema::index_of<event_kind::device_activity>>();
    f.name = t_.strings.intern(name);
    f.activity = a;
    f.end_ns = end;
    f.stream = static_cast<std::int64_t>(tid);
    f.device = static_cast<std::int32_t>(pid);
    return *this;
  }
  table_builder& correlation(std::uint64_t c) {
    last_device().correlation_id = c;
    return *this;
  }
  table_builder& external_id(std::uint64_t id) {
    last_device().external_id = id;
    return *this;
  }
  /// An ac2g flow start (on a runtime call) or end (on a device activity).
  table_builder& flow(std::uint64_t id, bool start) {
    last_device().flow_id = id;
    last_device().flow_type = flow_kind::async_cpu_gpu;
    last_device().flow_start = start;
    return *this;
  }
  /// An allocation (instant) at `time`.
  table_builder& allocation(std::uint64_t ptr, std::int64_t size, std::int64_t time,
                            thread_key tid = 1, process_key pid = 1) {
    event_type& e = add(time, tid, pid);
    auto& f = e.fields.template emplace<default_schema::index_of<event_kind::allocation>>();
    f.ptr = ptr;
    f.alloc_size = size;
    return *this;
  }
  /// A script frame ("file.py(12): fn") or module scope ("nn.Module: Linear_0").
  table_builder& script(std::string_view name, std::int64_t start, std::int64_t end,
                        thread_key tid = 1, process_key pid = 1) {
    event_type& e = add(start, tid, pid);
    auto& f = e.fields.template emplace<default_schema::index_of<event_kind::script_call>>();
    f.name = t_.strings.intern(name);
    f.end_ns = end;
    return *this;
  }
  /// Appends a tensor input (dtype as Kineto writes it, "float", "c10::Half") to the last op.
  table_builder& tensor(std::string_view dtype, std::initializer_list<std::int64_t> sizes) {
    input_value& v = add_input();
    v.kind = input_kind::tensor;
    v.dtype = t_.strings.intern(dtype);
    v.rank = static_cast<std::uint32_t>(sizes.size());
    v.dims = static_cast<std::uint32_t>(t_.ints.size());
    t_.ints.insert(t_.ints.end(), sizes.begin(), sizes.end());
    return *this;
  }
  /// Appends an input that is not a tensor (None, an int list, ...) to the last op.
  table_builder& other_input() {
    add_input().kind = input_kind::other;
    return *this;
  }
  /// Sets op flags (`op_flag::...`) on the last op.
  table_builder& flags(std::uint8_t f) {
    last_op().flags |= f;
    return *this;
  }
  /// Sets the correlation id of the last op.
  table_builder& op_correlation(std::uint64_t c) {
    last_op().correlation_id = c;
    return *this;
  }

  [[nodiscard]] event_table& table() noexcept { return t_; }
  [[nodiscard]] event_table take() { return std::move(t_); }
  [[nodiscard]] op_fields& last_op() { return t_.events.back().template get<event_kind::op>(); }
  [[nodiscard]] device_fields& last_device() {
    return t_.events.back().template get<event_kind::device_activity>();
  }

 private:
  input_value& add_input() {
    auto& op = last_op();
    if (op.inputs.size == 0) op.inputs.first = static_cast<std::uint32_t>(t_.inputs.size());
    ++op.inputs.size;
    return t_.inputs.emplace_back();
  }
  event_type& add(std::int64_t start, thread_key tid, process_key pid) {
    event_type& e = t_.events.emplace_back();
    e.start_ns = start;
    e.tid = tid;
    e.pid = pid;
    return e;
  }
  event_table t_;
  std::uint64_t next_correlation_ = 0;
};

}  // namespace testing
TRACEMODEL_END_NAMESPACE
