// tracemodel/formats — the field numbers of Perfetto's trace protos that the Perfetto writer
// and reader use (protos/perfetto/trace/ in Perfetto's repository: trace_packet.proto,
// track_event/*.proto, interned_data/interned_data.proto, clock_snapshot.proto,
// trace_packet_defaults.proto, chrome/chrome_trace_event.proto), and the conventions of the
// traces tracemodel writes (docs/perfetto.md).
#pragma once

#include <cstdint>
#include <string_view>

#include "tracemodel/config.hpp"

TRACEMODEL_BEGIN_NAMESPACE
namespace detail::pf {

using num = std::uint32_t;

inline constexpr num trace_packet = 1;  // Trace

namespace packet {  // TracePacket
inline constexpr num timestamp = 8, timestamp_clock_id = 58, track_event = 11,
                     track_descriptor = 60, chrome_events = 5, clock_snapshot = 6,
                     trusted_packet_sequence_id = 10, interned_data = 12, sequence_flags = 13,
                     incremental_state_cleared = 41, trace_packet_defaults = 59,
                     first_packet_on_sequence = 87, previous_packet_dropped = 42,
                     process_descriptor = 43, thread_descriptor = 44;
inline constexpr std::uint32_t seq_cleared = 1, seq_needs_state = 2;
}  // namespace packet

namespace event {  // TrackEvent
inline constexpr num category_iids = 3, categories = 22, name_iid = 10, name = 23, type = 9,
                     track_uuid = 11, counter_value = 30, double_counter_value = 44,
                     extra_counter_track_uuids = 31, extra_counter_values = 12,
                     extra_double_counter_track_uuids = 45, extra_double_counter_values = 46,
                     flow_ids_old = 36, flow_ids = 47, terminating_flow_ids_old = 42,
                     terminating_flow_ids = 48, debug_annotations = 4, legacy_event = 6,
                     timestamp_delta_us = 1, timestamp_absolute_us = 16, thread_time_delta_us = 2,
                     thread_time_absolute_us = 17, thread_instruction_count_delta = 8,
                     thread_instruction_count_absolute = 20, correlation_id = 52;
enum type : std::uint32_t {
  unspecified = 0,
  slice_begin = 1,
  slice_end = 2,
  instant = 3,
  counter = 4
};
}  // namespace event

namespace legacy {  // TrackEvent.LegacyEvent
inline constexpr num name_iid = 1, phase = 2, duration_us = 3, thread_duration_us = 4,
                     unscoped_id = 6, local_id = 10, global_id = 11, id_scope = 7, bind_id = 8,
                     bind_to_enclosing = 12, flow_direction = 13, instant_event_scope = 14,
                     pid_override = 18, tid_override = 19;
enum scope : std::uint32_t {
  scope_unspecified = 0,
  scope_global = 1,
  scope_process = 2,
  scope_thread = 3
};
enum flow : std::uint32_t { flow_unspecified = 0, flow_in = 1, flow_out = 2, flow_inout = 3 };
}  // namespace legacy

namespace annotation {  // DebugAnnotation
inline constexpr num name_iid = 1, name = 10, bool_value = 2, uint_value = 3, int_value = 4,
                     double_value = 5, string_value = 6, pointer_value = 7, nested_value = 8,
                     legacy_json_value = 9, string_value_iid = 17, dict_entries = 11,
                     array_values = 12;
}
namespace nested {  // DebugAnnotation.NestedValue
inline constexpr num nested_type = 1, dict_keys = 2, dict_values = 3, array_values = 4,
                     int_value = 5, double_value = 6, bool_value = 7, string_value = 8;
enum type : std::uint32_t { unspecified = 0, dict = 1, array = 2 };
}  // namespace nested

namespace track {  // TrackDescriptor
inline constexpr num uuid = 1, parent_uuid = 5, name = 2, static_name = 10, atrace_name = 13,
                     description = 14, process = 3, thread = 4, counter = 8,
                     sibling_order_rank = 12;
}
namespace process {  // ProcessDescriptor
inline constexpr num pid = 1, cmdline = 2, process_name = 6, legacy_sort_index = 3,
                     process_labels = 8;
}
namespace thread {  // ThreadDescriptor
inline constexpr num pid = 1, tid = 2, thread_name = 5, legacy_sort_index = 3,
                     reference_timestamp_us = 6, reference_thread_time_us = 7,
                     reference_thread_instruction_count = 8;
}
namespace counter {  // CounterDescriptor
inline constexpr num type = 1, categories = 2, unit = 3, unit_name = 6, unit_multiplier = 4,
                     is_incremental = 5;
}
namespace interned {  // InternedData; each entry: iid = 1, name (or str) = 2
inline constexpr num event_categories = 1, event_names = 2, debug_annotation_names = 3,
                     debug_annotation_string_values = 29, iid = 1, name = 2;
}
namespace clock {  // ClockSnapshot and its Clock
inline constexpr num clocks = 1, primary_trace_clock = 2, clock_id = 1, timestamp = 2,
                     is_incremental = 3, unit_multiplier_ns = 4;
inline constexpr std::uint32_t boottime = 6, first_sequence_clock = 64;
}  // namespace clock
namespace defaults {  // TracePacketDefaults, TrackEventDefaults
inline constexpr num timestamp_clock_id = 58, track_event_defaults = 11, track_uuid = 11,
                     extra_counter_track_uuids = 31, extra_double_counter_track_uuids = 45;
}
namespace chrome {  // ChromeEventBundle, ChromeMetadata, ChromeLegacyJsonTrace
inline constexpr num metadata = 2, legacy_json_trace = 5, name = 1, string_value = 2,
                     bool_value = 3, int_value = 4, json_value = 5, json_type = 1, json_data = 2;
}

// ---- tracemodel's conventions in the traces it writes (docs/perfetto.md) -------------------
/// The metadata entry that marks a trace tracemodel wrote (its value: the convention's version).
inline constexpr std::string_view writer_mark = "tracemodel_perfetto";
/// The metadata entry that carries the table's base time (a Chrome trace's baseTimeNanoseconds).
inline constexpr std::string_view base_time_key = "baseTimeNanoseconds";
/// The description of a named track whose name is a number (a pid that does not fit Perfetto's
/// field, a thread id of a process that is a string): the id is that number, not a string.
inline constexpr std::string_view numeric_id = "numeric id";
/// Flow ids of a marked trace: host-to-device flows as they are, forward/backward links with bit
/// 62 set, flows drawn by an export view with bit 63.
inline constexpr std::uint64_t fwd_bwd_bit = std::uint64_t{1} << 62,
                               drawn_bit = std::uint64_t{1} << 63;

}  // namespace detail::pf
TRACEMODEL_END_NAMESPACE
