// tracemodel/collect — records of the kinds other than ops (allocations, out-of-memory records,
// device records): their events as materialize, the live queue and a crash file's recovery all
// build them, and, for the live queue, their place in a block's record slots (a kind record
// takes one slot or, for a device record, three: its bytes in the first 56 bytes of each, the
// kind in the first slot's `scope`, `kind_flag` in every slot's flags).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "tracemodel/collect/records.hpp"
#include "tracemodel/config.hpp"
#include "tracemodel/model/table.hpp"

TRACEMODEL_BEGIN_NAMESPACE
namespace detail {

/// A live block's record slot that holds another kind's record (or a part of one).
inline constexpr std::uint8_t kind_flag = 64;
enum class live_kind : std::uint8_t { continuation = 0, allocation, out_of_memory, device };
inline constexpr std::size_t kind_payload = 56;  ///< bytes of a slot a record's bytes take
template <class T>
inline constexpr std::uint32_t kind_slots =
    static_cast<std::uint32_t>((sizeof(T) + kind_payload - 1) / kind_payload);
static_assert(offsetof(op_record, scope) >= kind_payload && kind_slots<device_record> <= 3);

/// Writes `r` into `slots` (room for `kind_slots<T>` made).
template <class T>
void put_kind(op_record* slots, live_kind k, const T& r) noexcept {
  static_assert(std::is_trivially_copyable_v<T>);
  const auto* from = reinterpret_cast<const unsigned char*>(&r);
  for (std::uint32_t s = 0; s < kind_slots<T>; ++s) {
    std::memcpy(static_cast<void*>(slots + s), from + s * kind_payload,
                std::min(kind_payload, sizeof(T) - s * kind_payload));
    slots[s].scope = static_cast<op_scope>(s == 0 ? k : live_kind::continuation);
    slots[s].flags = kind_flag;
  }
}
/// The record in `slots`.
template <class T>
T get_kind(const op_record* slots) noexcept {
  T r;
  auto* to = reinterpret_cast<unsigned char*>(&r);
  for (std::uint32_t s = 0; s < kind_slots<T>; ++s)
    std::memcpy(to + s * kind_payload, static_cast<const void*>(slots + s),
                std::min(kind_payload, sizeof(T) - s * kind_payload));
  return r;
}
[[nodiscard]] inline live_kind kind_of(const op_record& r) noexcept {
  return static_cast<live_kind>(r.scope);
}
/// The slots a kind record takes (0 for a continuation).
[[nodiscard]] inline std::uint32_t slots_of(live_kind k) noexcept {
  switch (k) {
    case live_kind::allocation:
      return kind_slots<allocation_record>;
    case live_kind::out_of_memory:
      return kind_slots<oom_record>;
    case live_kind::device:
      return kind_slots<device_record>;
    default:
      return 0;
  }
}

/// An allocation's fields into `e`.
template <class Event>
void allocation_fields(Event& e, const allocation_record& r) {
  auto& f =
      e.fields.template emplace<Event::schema_type::template index_of<event_kind::allocation>>();
  f.ptr = r.ptr;
  f.alloc_size = r.alloc_size;
  f.total_allocated = r.total_allocated;
  f.total_reserved = r.total_reserved;
  f.device_type = r.device_type;
  f.device_index = r.device_index;
}
/// An out-of-memory record's fields into `e`.
template <class Event>
void oom_fields(Event& e, const oom_record& r) {
  auto& f =
      e.fields.template emplace<Event::schema_type::template index_of<event_kind::out_of_memory>>();
  f.alloc_size = r.alloc_size;
  f.total_allocated = r.total_allocated;
  f.total_reserved = r.total_reserved;
  f.device_type = r.device_type;
  f.device_index = r.device_index;
}

/// The attribute keys of device events, interned once per table.
struct device_keys {
  name_id k[7]{};
  bool ready = false;
};
/// A device record's fields and attributes into `e` (its start, tid and pid set by the caller;
/// `name` interned, `end_ns` converted and repaired).
template <class Table, class Event>
void device_fields(Table& t, Event& e, const device_record& r, name_id name, std::int64_t end_ns,
                   device_keys& keys) {
  auto& f =
      e.fields
          .template emplace<Table::schema_type::template index_of<event_kind::device_activity>>();
  f.name = name;
  f.activity = r.activity;
  f.flow_type = r.flow_type;
  f.flow_start = r.flow_start;
  f.device = r.device;
  f.end_ns = end_ns;
  f.correlation_id = r.correlation_id;
  f.external_id = r.external_id;
  f.flow_id = r.flow_id;
  f.stream = r.stream;
  f.bytes = r.bytes;
  if (!keys.ready) {
    const char* names[] = {"context",       "cbid",     "grid", "block", "registers per thread",
                           "shared memory", "copy kind"};
    for (std::size_t k = 0; k < 7; ++k) keys.k[k] = t.strings.intern(names[k]);
    keys.ready = true;
  }
  if (r.context != 0) t.add_int_attr(e, keys.k[0], r.context);
  if (r.cbid != 0) t.add_int_attr(e, keys.k[1], r.cbid);
  if (r.activity == activity_type::kernel) {
    t.add_int_list_attr(e, keys.k[2], r.grid);
    t.add_int_list_attr(e, keys.k[3], r.block);
    t.add_int_attr(e, keys.k[4], r.registers);
    t.add_int_attr(e, keys.k[5], r.shared_memory);
  }
  if (r.activity == activity_type::gpu_memcpy) t.add_int_attr(e, keys.k[6], r.copy_kind);
}

}  // namespace detail
TRACEMODEL_END_NAMESPACE
