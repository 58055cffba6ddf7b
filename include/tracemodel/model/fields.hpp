// tracemodel/model — event kinds and their payloads, `extra_fields<Kind>`.
//
// A kind is an enumerator; `extra_fields<Kind>` is the payload of that kind. The default
// schema mirrors PyTorch's event types one to one so that PyTorch traces map onto it without
// loss. Users add kinds without editing the library:
//
//   // a new kind of the default enum (any unused value of the underlying type) ...
//   inline constexpr auto gc_pause = tracemodel::event_kind{40};
//   template <> struct tracemodel::extra_fields<gc_pause> {
//     static constexpr std::string_view kind_name = "gc_pause";
//     std::string_view name; std::int64_t end_ns; std::uint64_t bytes_freed;
//   };
//   // ... or kinds of their own enum: template <> struct tracemodel::extra_fields<my::kind::x>
//
// Payloads are plain structs (trivially copyable where they are recorded); they are made
// reflectable with Boost.Hana in `model/reflect.hpp`, which is kept out of this header so
// that the recording path does not pay for Hana. Conventions the library understands:
//   * `static constexpr std::string_view kind_name`  (required)
//   * a member `name` (name_id or std::string_view) is the event's name; otherwise the name
//     is `default_name` if the payload has one, else `kind_name`
//   * a member `end_ns` is the event's end; otherwise the event is instant
//   * a member `correlation_id` is the event's correlation id
#pragma once

#include <cstdint>
#include <string_view>

#include "tracemodel/config.hpp"
#include "tracemodel/model/types.hpp"

TRACEMODEL_BEGIN_NAMESPACE

/// The kinds of the default schema.
enum class event_kind : std::uint8_t {
  op,               ///< a function of the runtime (PyTorch: TorchOp)
  backend,          ///< a span reported by a backend with its own times (PyTorch: Backend)
  allocation,       ///< a memory allocation or free (PyTorch: Allocation)
  out_of_memory,    ///< a failed allocation (PyTorch: OutOfMemory)
  script_call,      ///< a call in the runtime's scripting language (PyTorch: PyCall)
  native_call,      ///< a native function called from the script (PyTorch: PyCCall)
  device_activity,  ///< anything a device profiler reports (PyTorch: Kineto)
};

/// The payload of events of kind `Kind`. Specialize it for new kinds.
template <auto Kind>
struct extra_fields;

/// A range of entries in one of the event table's side vectors.
struct index_range {
  std::uint32_t first = 0;
  std::uint32_t size = 0;
  friend constexpr bool operator==(index_range, index_range) = default;
};

template <>
struct extra_fields<event_kind::op> {
  static constexpr std::string_view kind_name = "op";
  name_id name{};
  op_scope scope = op_scope::function;
  std::uint8_t flags = 0;  ///< op_flag bits
  /// How many ops of its thread were open when it began, as the recording saw its begin and
  /// end calls (`unknown_depth`: not recorded). The tree builder follows it where the clock
  /// cannot tell the order (equal or out-of-order readings).
  std::uint16_t depth = unknown_depth;
  std::int64_t sequence_number = -1;
  std::uint64_t fwd_thread_id = 0;  ///< > 0 on backward ops: the thread of the forward op
  std::uint64_t correlation_id = 0;
  std::int64_t end_ns = no_end_ns;
  std::uint64_t end_tid = 0;
  std::int64_t debug_handle = -1;
  index_range inputs{};  ///< entries of the table's `inputs`

  [[nodiscard]] constexpr bool unfinished() const noexcept {
    return (flags & op_flag::unfinished) != 0;
  }
};

template <>
struct extra_fields<event_kind::backend> {
  static constexpr std::string_view kind_name = "backend";
  name_id name{};
  name_id backend{};
  op_scope scope = op_scope::function;
  std::int64_t end_ns = 0;
  std::int64_t debug_handle = -1;
};

template <>
struct extra_fields<event_kind::allocation> {
  static constexpr std::string_view kind_name = "allocation";
  static constexpr std::string_view default_name = "[memory]";
  std::uint64_t ptr = 0;
  std::int64_t alloc_size = 0;  ///< negative: a free
  std::int64_t total_allocated = 0;
  std::int64_t total_reserved = 0;
  std::int8_t device_type = 0;
  std::int8_t device_index = -1;
  std::uint64_t tensor_id = 0;  ///< filled by `tensor_identities`; 0: none
};

template <>
struct extra_fields<event_kind::out_of_memory> {
  static constexpr std::string_view kind_name = "out_of_memory";
  static constexpr std::string_view default_name = "[OutOfMemory]";
  std::int64_t alloc_size = 0;
  std::int64_t total_allocated = 0;
  std::int64_t total_reserved = 0;
  std::int8_t device_type = 0;
  std::int8_t device_index = -1;
};

template <>
struct extra_fields<event_kind::script_call> {
  static constexpr std::string_view kind_name = "script_call";
  name_id name{};  ///< "file.py(12): fn" or "nn.Module: Linear_0"
  std::int64_t end_ns = 0;
  std::int64_t script_id = -1;         ///< PyTorch: "Python id"
  std::int64_t script_parent_id = -1;  ///< PyTorch: "Python parent id"
  std::int64_t module_id = -1;         ///< PyTorch: "Python module id"
};

template <>
struct extra_fields<event_kind::native_call> {
  static constexpr std::string_view kind_name = "native_call";
  name_id name{};  ///< "<built-in method ...>"
  std::int64_t end_ns = 0;
  std::int64_t script_id = -1;
  std::int64_t script_parent_id = -1;
};

template <>
struct extra_fields<event_kind::device_activity> {
  static constexpr std::string_view kind_name = "device_activity";
  name_id name{};
  name_id category{};  ///< the `cat` text (kept for categories tracemodel does not know)
  activity_type activity = activity_type::other;
  flow_kind flow_type = flow_kind::none;
  bool flow_start = false;
  std::int32_t device = -1;
  std::int64_t end_ns = 0;
  std::uint64_t correlation_id = 0;  ///< the device runtime's correlation (CUPTI correlationId)
  std::uint64_t external_id = 0;     ///< correlation id of the op that launched it (0: none)
  std::uint64_t flow_id = 0;
  std::int64_t stream = -1;
  std::uint64_t bytes = 0;
};

TRACEMODEL_END_NAMESPACE
