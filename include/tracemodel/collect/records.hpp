// tracemodel/collect — the raw records written on the recording path, and what callers pass.
//
// Raw records hold approximate-clock ticks and string pointers; nothing is converted or
// formatted until materialization.
#pragma once

#include <cstdint>
#include <string_view>

#include "tracemodel/collect/clock.hpp"
#include "tracemodel/config.hpp"
#include "tracemodel/model/fields.hpp"
#include "tracemodel/model/types.hpp"

TRACEMODEL_BEGIN_NAMESPACE

/// What `begin_op` records. `name` must stay valid until the queue is materialized (a string
/// literal, an interned name) unless `copy_name` is set, which copies it into the thread's
/// arena (use it for names built at run time, such as "ProfilerStep#3").
struct op_info {
  std::string_view name;
  std::int64_t sequence_number = -1;
  std::uint64_t fwd_thread_id = 0;
  op_scope scope = op_scope::function;
  bool is_async = false;
  bool allow_tf32 = false;
  bool copy_name = false;
  std::int64_t debug_handle = -1;
};

/// The raw op record: exactly one 64-byte cache line.
struct alignas(64) op_record {
  const char* name;
  approx_time start;
  approx_time end;  ///< 0: not ended
  std::int64_t sequence_number;
  std::uint64_t fwd_thread_id;
  std::int64_t debug_handle;
  std::uint32_t name_len;
  std::uint32_t end_tid;  ///< the thread that began it until it ends
  op_scope scope;
  std::uint8_t flags;
  std::uint16_t depth;  ///< ops open on its thread when it began (see `extra_fields<op>`)
};
static_assert(sizeof(op_record) == 64, "an op record must fit one cache line");

namespace detail {
/// An op's record at its begin, but its start (read last, so that this is not part of its time).
TRACEMODEL_ALWAYS_INLINE void begin_op_record(op_record* r, std::string_view name,
                                              const op_info& info) noexcept {
  r->name = name.data();
  r->name_len = static_cast<std::uint32_t>(name.size());
  r->end = 0;
  r->sequence_number = info.sequence_number;
  r->fwd_thread_id = info.fwd_thread_id;
  r->debug_handle = info.debug_handle;
  r->end_tid = 0;
  r->depth = unknown_depth;
  r->scope = info.scope;
  r->flags = static_cast<std::uint8_t>((info.is_async ? op_flag::async : 0) |
                                       (info.allow_tf32 ? op_flag::allow_tf32 : 0));
}

/// The op counted open on this thread until `end_op_record`: its depth, and the thread (in
/// `end_tid` until it ends). The thread has its id already (its queue's subqueue asked for it).
TRACEMODEL_ALWAYS_INLINE void count_open_op(op_record* r) noexcept {
  detail::recording_thread& self = detail::this_thread_state;
  r->end_tid = static_cast<std::uint32_t>(self.id);
  const std::uint32_t open = self.open_ops;
  r->depth = open < unknown_depth ? static_cast<std::uint16_t>(open) : unknown_depth;
  self.open_ops = open + 1;
}
/// An op's record at its end: its time and its end thread; the op no longer open on the thread
/// that began it, when that is this one (an op ended elsewhere leaves its thread's later ops one
/// deeper: the tree builder compares depths only where the clock cannot tell). An op is ended
/// once, so the count it entered is still there.
TRACEMODEL_ALWAYS_INLINE void end_op_record(op_record* r, approx_time t) noexcept {
  const auto me = static_cast<std::uint32_t>(current_thread_id());
  detail::this_thread_state.open_ops -= static_cast<std::uint32_t>(r->end_tid == me);
  r->end = t;
  r->end_tid = me;
}
}  // namespace detail

struct allocation_record {
  approx_time time;
  std::uint64_t ptr;
  std::int64_t alloc_size;
  std::int64_t total_allocated;
  std::int64_t total_reserved;
  std::int8_t device_type;
  std::int8_t device_index;
};

struct oom_record {
  approx_time time;
  std::int64_t alloc_size;
  std::int64_t total_allocated;
  std::int64_t total_reserved;
  std::int8_t device_type;
  std::int8_t device_index;
};

/// A backend span with times the backend measured itself (ns since the Unix epoch).
struct backend_record {
  std::int64_t start_ns;
  std::int64_t end_ns;
  std::int64_t debug_handle;
  const char* name;
  const char* backend;
  std::uint32_t name_len;
  std::uint32_t backend_len;
  op_scope scope;
};

/// A script-language call or a native call made from the script.
struct call_record {
  approx_time start;
  approx_time end;
  const char* name;
  std::uint32_t name_len;
  std::int64_t script_id;
  std::int64_t script_parent_id;
  std::int64_t module_id;
};

/// One device activity or runtime/driver call as a device profiler reports it (already
/// decoded from the profiler's own records; see adapters/cupti). Times are ticks of the
/// queue's approximate clock (the adapter points the device profiler's clock at it).
struct device_record {
  approx_time start;
  approx_time end;
  const char* name;
  std::uint32_t name_len;
  activity_type activity;
  flow_kind flow_type;
  bool flow_start;
  std::int32_t device;
  std::uint64_t correlation_id;
  std::uint64_t external_id;
  std::uint64_t flow_id;
  std::int64_t stream;
  std::uint64_t bytes;
  process_key pid;  ///< process for host calls, device for device activities
  thread_key tid;   ///< host calls: the OS thread id or, as CUPTI gives it, the low 32 bits
                    ///< of pthread_self() (both mapped to runtime ids); the stream otherwise
  std::uint32_t context;
  std::uint32_t cbid;
  std::uint32_t grid[3];
  std::uint32_t block[3];
  std::uint32_t shared_memory;
  std::uint16_t registers;
  std::uint8_t copy_kind;
  bool host_thread;  ///< tid names a thread of this process
};

/// An extra argument of an op (`record_extra_args`).
struct extra_arg {
  std::string_view key;
  attr_type type = attr_type::integer;
  std::int64_t i = 0;
  double f = 0;
  std::string_view s{};
  static extra_arg integer(std::string_view k, std::int64_t v) {
    return {k, attr_type::integer, v, 0, {}};
  }
  static extra_arg floating(std::string_view k, double v) {
    return {k, attr_type::floating, 0, v, {}};
  }
  static extra_arg boolean(std::string_view k, bool v) {
    return {k, attr_type::boolean, v ? 1 : 0, 0, {}};
  }
  static extra_arg string(std::string_view k, std::string_view v) {
    return {k, attr_type::string, 0, 0, v};
  }
};

/// Raw form of an extra argument (strings copied into the thread's arena).
struct arg_record {
  const char* key;
  const char* str;
  std::uint32_t key_len;
  std::uint32_t str_len;
  std::int64_t i;
  double f;
  attr_type type;
};

/// Raw record of a kind without a dedicated recorder: start/end ticks and the payload.
template <auto Kind>
struct generic_record {
  approx_time start;
  approx_time end;  ///< 0: instant (or the payload has no end)
  extra_fields<Kind> fields;
};

/// Per-op entry of a side stream: the op's correlation id and how many items follow.
struct side_entry {
  std::uint64_t correlation_id;
  std::uint32_t count;
};
struct string_ref {
  const char* data;
  std::uint32_t size;
};

TRACEMODEL_END_NAMESPACE
