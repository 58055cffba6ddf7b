// tracemodel/model — small vocabulary types shared by the model, the algorithms and formats.
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <string_view>

#include "tracemodel/config.hpp"

TRACEMODEL_BEGIN_NAMESPACE

/// Index of an event in an event table. Tree links are 32-bit indices, never pointers.
using event_index = std::uint32_t;
inline constexpr event_index no_event = std::numeric_limits<event_index>::max();

/// Thread key of an event (the runtime's small thread id when recorded, the file's `tid` when
/// read; string tids from files are mapped to keys with `string_key_bit` set, so the Chrome
/// trace reader rejects numeric pids and tids from 2^62 to 2^63 - 1, which would read as such).
using thread_key = std::uint64_t;
/// Process (or device) key of an event: the file's `pid`, or the recording process id.
using process_key = std::int64_t;
inline constexpr std::uint64_t string_key_bit = std::uint64_t{1} << 62;

/// Interned string: an index into the event table's `string_table`. 0 is the empty string.
enum class name_id : std::uint32_t {};
inline constexpr name_id empty_name{0};

/// "No end time seen" (an op that never ended): the minimum of the time type, as PyTorch.
inline constexpr std::int64_t no_end_ns = std::numeric_limits<std::int64_t>::min();
/// An op's recorded depth when the recording did not say (an op read from a file, or one deeper
/// than 65,534 ops).
inline constexpr std::uint16_t unknown_depth = 0xffff;

/// Mirrors PyTorch's RecordScope: what kind of code an op is.
enum class op_scope : std::uint8_t {
  function,
  backward_function,
  torchscript_function,
  kernel_function,
  custom_class,
  build_feature,
  lite_interpreter,
  user_scope,
  static_runtime_op,
  static_runtime_model,
};
inline constexpr std::array<std::string_view, 10> op_scope_names{
    "function",          "backward_function",   "torchscript_function", "kernel_function",
    "custom_class",      "build_feature",       "lite_interpreter",     "user_scope",
    "static_runtime_op", "static_runtime_model"};
constexpr std::string_view to_string(op_scope s) noexcept {
  return op_scope_names[static_cast<std::size_t>(s)];
}

/// Op flags (bit set).
namespace op_flag {
inline constexpr std::uint8_t async = 1;         ///< the op is asynchronous
inline constexpr std::uint8_t unfinished = 2;    ///< no end was recorded; end is borrowed
inline constexpr std::uint8_t allow_tf32 = 4;    ///< TF32 matmul was allowed when it ran
inline constexpr std::uint8_t end_borrowed = 8;  ///< end_ns was filled from the parent
}  // namespace op_flag

/// Kineto's activity categories (the `cat` of Chrome-trace events). `other` stands for a
/// category that tracemodel does not know; its text is kept in the event's `category`.
enum class activity_type : std::uint8_t {
  cpu_op,
  user_annotation,
  gpu_user_annotation,
  gpu_memcpy,
  gpu_memset,
  kernel,
  external_correlation,
  cuda_runtime,
  cuda_driver,
  cpu_instant_event,
  python_function,
  overhead,
  cuda_sync,
  cuda_event,
  mtia_runtime,
  mtia_ccp_events,
  hpu_op,
  xpu_runtime,
  xpu_driver,
  collective_comm,
  privateuse1_runtime,
  privateuse1_driver,
  glow_runtime,
  other,
};
inline constexpr std::array<std::string_view, 24> activity_type_names{"cpu_op",
                                                                      "user_annotation",
                                                                      "gpu_user_annotation",
                                                                      "gpu_memcpy",
                                                                      "gpu_memset",
                                                                      "kernel",
                                                                      "external_correlation",
                                                                      "cuda_runtime",
                                                                      "cuda_driver",
                                                                      "cpu_instant_event",
                                                                      "python_function",
                                                                      "overhead",
                                                                      "cuda_sync",
                                                                      "cuda_event",
                                                                      "mtia_runtime",
                                                                      "mtia_ccp_events",
                                                                      "hpu_op",
                                                                      "xpu_runtime",
                                                                      "xpu_driver",
                                                                      "collective_comm",
                                                                      "privateuse1_runtime",
                                                                      "privateuse1_driver",
                                                                      "glow_runtime",
                                                                      "other"};
static_assert(activity_type_names.size() == static_cast<std::size_t>(activity_type::other) + 1,
              "activity_type_names must have one entry per activity_type");

constexpr std::string_view to_string(activity_type t) noexcept {
  return activity_type_names[static_cast<std::size_t>(t)];
}
/// The category for a `cat` string; older Kineto spellings are accepted.
constexpr activity_type activity_type_from(std::string_view cat) noexcept {
  for (std::size_t i = 0; i + 1 < activity_type_names.size(); ++i)
    if (activity_type_names[i] == cat) return static_cast<activity_type>(i);
  if (cat == "Kernel") return activity_type::kernel;
  if (cat == "Memcpy") return activity_type::gpu_memcpy;
  if (cat == "Memset") return activity_type::gpu_memset;
  if (cat == "Runtime" || cat == "cuda_runtime_api") return activity_type::cuda_runtime;
  if (cat == "Driver") return activity_type::cuda_driver;
  if (cat == "Operator" || cat == "cpu_operator") return activity_type::cpu_op;
  return activity_type::other;
}
/// Activities that run on a device (they end a host-to-device flow).
constexpr bool is_device_side(activity_type t) noexcept {
  return t == activity_type::kernel || t == activity_type::gpu_memcpy ||
         t == activity_type::gpu_memset || t == activity_type::cuda_sync ||
         t == activity_type::cuda_event || t == activity_type::gpu_user_annotation;
}
/// Host-side runtime or driver calls (they may start a host-to-device flow).
constexpr bool is_runtime_call(activity_type t) noexcept {
  return t == activity_type::cuda_runtime || t == activity_type::cuda_driver ||
         t == activity_type::xpu_runtime || t == activity_type::xpu_driver ||
         t == activity_type::mtia_runtime || t == activity_type::privateuse1_runtime ||
         t == activity_type::privateuse1_driver;
}

/// The type of an extra attribute's value.
enum class attr_type : std::uint8_t {
  integer,
  unsigned_integer,
  floating,
  boolean,
  string,       ///< `s` is an interned string
  verbatim,     ///< `s` is the value as its source wrote it (a nested value the model has no
                ///< type for), which a writer of that source's format writes back as it is
  int_list,     ///< `list` is a range of the table's `ints`
  string_list,  ///< `list` is a range of the table's `name_lists`
};

/// What set an event's parent. The tree builder leaves parents set by linkers alone.
enum class parent_link : std::uint8_t {
  none,
  tree,         ///< stack replay (nesting on a thread, or the forward-thread fallback)
  flow,         ///< a host-to-device flow (ac2g): the flow's start
  correlation,  ///< a correlation id: the runtime call of a device activity
  external_id,  ///< an external id: the op that launched a runtime call or device activity
};

/// Flow kinds, numbered as Kineto's `flow.type`.
enum class flow_kind : std::uint8_t { none = 0, fwd_bwd = 1, async_cpu_gpu = 2 };

/// A link between two events: forward op -> backward op (fwd_bwd), runtime call or op -> device
/// activity (async_cpu_gpu). `id` is the flow id a trace file carries.
struct flow_link {
  flow_kind kind = flow_kind::none;
  std::uint64_t id = 0;
  std::uint32_t from = 0xffffffffu;  ///< event index: the forward op, the launch
  std::uint32_t to = 0xffffffffu;    ///< event index: the backward op, the device activity
  friend constexpr bool operator==(const flow_link&, const flow_link&) = default;
};

TRACEMODEL_END_NAMESPACE
