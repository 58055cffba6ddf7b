// A faithful port of the pointer-based post-processing model of PyTorch's profiler (2022,
// collection.cpp): `Result` objects held by shared_ptr, parents as weak_ptr, children as vectors
// of shared_ptr, the payload a variant of ExtraFields with std::string names and vectors for
// inputs and stacks, and build_tree with a flat hash map of stacks and a min-heap of end times
// that calls endTimeNS() through the variant. PyTorch's checks stay in: TORCH_INTERNAL_ASSERT is
// on in release builds, and endTimeNS() checks a finished event's end (SOFT_ASSERT evaluates its
// condition): here they throw. The baseline of bench/postprocess.cpp; not part of the library.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <queue>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
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

/// The stacks' map: open addressing, linear probing, deletion by backward shift. PyTorch uses
/// ska::flat_hash_map here (not in Debian), whose erase and insert allocate nothing, as this
/// one; std::unordered_map allocates a node per insert (a pop erases and inserts): 7% slower on
/// the 10M-event baseline. (tracemodel's own detail::flat_map has no erase, and the baseline
/// keeps to its own code.)
template <class V>
class flat_map {
 public:
  struct slot {
    std::uint64_t key = 0;
    V value{};
    bool used = false;
  };
  flat_map() : slots_(16) {}
  slot* find(std::uint64_t k) {
    for (std::size_t i = home(k);; i = (i + 1) & mask()) {
      if (!slots_[i].used) return nullptr;
      if (slots_[i].key == k) return &slots_[i];
    }
  }
  V& at(std::uint64_t k) {
    slot* s = find(k);
    if (s == nullptr) throw std::out_of_range("flat_map::at");
    return s->value;
  }
  V& operator[](std::uint64_t k) {
    if (2 * (size_ + 1) > slots_.size()) grow();
    std::size_t i = home(k);
    for (; slots_[i].used; i = (i + 1) & mask())
      if (slots_[i].key == k) return slots_[i].value;
    slots_[i].used = true;
    slots_[i].key = k;
    ++size_;
    return slots_[i].value;
  }
  void erase(std::uint64_t k) {
    std::size_t i = home(k);
    for (;; i = (i + 1) & mask()) {
      if (!slots_[i].used) return;
      if (slots_[i].key == k) break;
    }
    // Later entries of the run move back into the hole when that keeps them at or after their
    // home slot.
    for (std::size_t j = (i + 1) & mask(); slots_[j].used; j = (j + 1) & mask()) {
      if (((j - home(slots_[j].key)) & mask()) >= ((j - i) & mask())) {
        slots_[i] = std::move(slots_[j]);
        i = j;
      }
    }
    slots_[i] = slot{};
    --size_;
  }

 private:
  [[nodiscard]] std::size_t mask() const { return slots_.size() - 1; }
  [[nodiscard]] std::size_t home(std::uint64_t k) const {
    return static_cast<std::size_t>((k * 0x9e3779b97f4a7c15ULL) >> 32) & mask();
  }
  void grow() {
    std::vector<slot> old = std::exchange(slots_, std::vector<slot>(2 * slots_.size()));
    size_ = 0;
    for (slot& s : old)
      if (s.used) (*this)[s.key] = std::move(s.value);
  }
  std::vector<slot> slots_;
  std::size_t size_ = 0;
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
    const std::int64_t end = std::visit(
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
    // A finished event's end must not come before its start (PyTorch's SOFT_ASSERT, which
    // warns; the start stands in then).
    return !finished || end >= start_time_ns ? end : start_time_ns;
  }
};
using result_ptr = std::shared_ptr<result>;

inline void mark_finished(const result_ptr& r) {
  if (r->finished) throw std::logic_error("finished twice");
  r->finished = true;
  // As PyTorch's assert, it cannot fail (end_time_ns() puts the start in for a finished event
  // that ends before it), but it costs the call, as there.
  if (r->end_time_ns() < r->start_time_ns) throw std::logic_error("ends before it starts");
}

/// PyTorch's build_tree (2022), over events sorted by start time.
inline void build_tree(std::vector<result_ptr>& sorted_events) {
  flat_map<result_ptr> stacks;
  struct greater_end {
    bool operator()(const result_ptr& a, const result_ptr& b) const {
      return a->end_time_ns() > b->end_time_ns();
    }
  };
  std::priority_queue<result_ptr, std::vector<result_ptr>, greater_end> end_events;

  auto push_event = [&](result_ptr& event) {
    if (std::holds_alternative<kineto_fields>(event->extra_fields) && event->finished) return;
    if (!event->parent.expired()) throw std::logic_error("parent set before its push");
    for (const auto& child : event->children)
      if (!child->finished) throw std::logic_error("unfinished child before its parent's push");
    if (event->finished) throw std::logic_error("finished before its push");
    auto* parent_it = stacks.find(event->start_tid);
    if (parent_it == nullptr) {
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
    if (parent_it != nullptr) {
      event->parent = parent_it->value;
      parent_it->value->children.push_back(event);
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
      if (frame == nullptr) throw std::logic_error("ending event not on its stack");
      mark_finished(frame);
      if (frame->parent.expired()) throw std::logic_error("stack frame without a parent");
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
