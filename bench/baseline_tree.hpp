// A faithful port of the pointer-based post-processing model of PyTorch's profiler (2022,
// collection.cpp): `Result` objects held by shared_ptr, parents as weak_ptr, children as vectors
// of shared_ptr, the payload a variant of ExtraFields with std::string names and vectors for
// inputs and stacks, and build_tree with a map of stacks and a min-heap of end times that calls
// endTimeNS() through the variant. The baseline of bench/postprocess.cpp; not part of the
// library.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <queue>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

namespace baseline {

enum class record_scope : std::uint8_t { function, backward_function, user_scope };

struct tensor_metadata_t {
  void* impl = nullptr;
  void* data = nullptr;
  std::int8_t device_type = 0, device_index = 0;
  std::int8_t dtype = 0, layout = 0;
  std::uint32_t dim = 0;
};
struct inputs {
  std::vector<std::vector<std::int64_t>> shapes, strides;
  std::vector<std::string> dtypes;
  std::vector<std::optional<tensor_metadata_t>> tensor_metadata;
  std::vector<std::int64_t> ivalues;  // stand-in for c10::IValue
};

struct torch_op_basic_fields {
  std::int64_t sequence_number = -1;
  std::uint64_t forward_tid = 0;
  record_scope scope = record_scope::function;
  bool is_async = false;
  std::int64_t debug_handle = -1;
  std::string name;
};
struct torch_op_fields : torch_op_basic_fields {
  std::uint64_t correlation_id = 0;
  std::int64_t end_time_ns = std::numeric_limits<std::int64_t>::min();
  inputs inputs_;
  std::vector<std::string> jit_stack;
  std::vector<std::string> jit_modules;
  std::unordered_map<std::string, std::int64_t> extra_args;
  void* gpu_fallback[2] = {nullptr, nullptr};
  bool allow_tf32_cublas = false;
};
struct allocation_fields {
  std::int64_t start_time = 0;
  void* ptr = nullptr;
  std::int64_t alloc_size = 0, total_allocated = 0, total_reserved = 0;
  std::int8_t device_type = 0, device_index = 0;
};

struct result;
struct kineto_fields {
  std::string name;
  std::int64_t duration_us = 0;  // as PyTorch 2022 (microseconds)
  std::uint64_t correlation_id = 0;
  int activity_type = 0;
  struct {
    std::uint32_t id = 0, type = 0;
    bool start = false;
  } flow;
  std::weak_ptr<result> linked_activity;
};

struct result : std::enable_shared_from_this<result> {
  std::int64_t start_time_ns = 0;
  std::uint64_t start_tid = 0;
  std::int32_t device = 0, resource = 0;
  std::variant<torch_op_fields, allocation_fields, kineto_fields> extra_fields;
  std::weak_ptr<result> parent;
  std::vector<std::shared_ptr<result>> children;
  bool finished = false;

  std::int64_t end_time_ns() const {
    return std::visit(
        [this](const auto& e) -> std::int64_t {
          using T = std::decay_t<decltype(e)>;
          if constexpr (std::is_same_v<T, torch_op_fields>) {
            if (finished && e.end_time_ns == std::numeric_limits<std::int64_t>::min())
              if (auto p = parent.lock()) return p->end_time_ns();
            return e.end_time_ns;
          } else if constexpr (std::is_same_v<T, kineto_fields>) {
            return start_time_ns + e.duration_us * 1000;
          } else {
            return start_time_ns;
          }
        },
        extra_fields);
  }
};
using result_ptr = std::shared_ptr<result>;

inline void mark_finished(const result_ptr& r) {
  if (r->finished) throw std::logic_error("finished twice");
  r->finished = true;
}

/// PyTorch's build_tree (2022), over events sorted by start time.
inline void build_tree(std::vector<result_ptr>& sorted_events) {
  std::unordered_map<std::uint64_t, result_ptr> stacks;
  struct greater_end {
    bool operator()(const result_ptr& a, const result_ptr& b) const {
      return a->end_time_ns() > b->end_time_ns();
    }
  };
  std::priority_queue<result_ptr, std::vector<result_ptr>, greater_end> end_events;

  auto push_event = [&](result_ptr& event) {
    if (std::holds_alternative<kineto_fields>(event->extra_fields) && event->finished) return;
    auto parent_it = stacks.find(event->start_tid);
    if (parent_it == stacks.end()) {
      const std::uint64_t fwd_tid = std::visit(
          [](const auto& i) -> std::uint64_t {
            if constexpr (std::is_same_v<std::decay_t<decltype(i)>, torch_op_fields>)
              return i.forward_tid;
            else
              return 0;
          },
          event->extra_fields);
      if (fwd_tid) parent_it = stacks.find(fwd_tid);
    }
    if (parent_it != stacks.end()) {
      event->parent = parent_it->second;
      parent_it->second->children.push_back(event);
    }
    if (event->end_time_ns() > event->start_time_ns) {
      stacks[event->start_tid] = event;
      end_events.push(event);
    } else if (event->end_time_ns() == std::numeric_limits<std::int64_t>::min()) {
      stacks[event->start_tid] = event;
    } else {
      mark_finished(event);
    }
  };
  auto pop_event = [&stacks](result_ptr event) {
    if (event->finished) return;
    auto start_tid = event->start_tid;
    auto frame = stacks.at(start_tid);
    while (frame.get() != event.get()) {
      mark_finished(frame);
      frame = frame->parent.lock();
    }
    mark_finished(event);
    stacks.erase(start_tid);
    auto new_frame = event->parent.lock();
    if (new_frame != nullptr) stacks[start_tid] = new_frame;
  };
  for (auto& event : sorted_events) {
    while (!end_events.empty() && end_events.top()->end_time_ns() < event->start_time_ns) {
      pop_event(end_events.top());
      end_events.pop();
    }
    push_event(event);
  }
  while (!end_events.empty()) {
    pop_event(end_events.top());
    end_events.pop();
  }
}

}  // namespace baseline
