// tracemodel/model — the event table: every event of a trace in one contiguous vector.
//
// Whatever fills a table (a record queue's materialization, a trace file reader, another
// profiler feeding its own events) produces the same thing, and every algorithm works on it.
// Events refer to side data by index ranges: `inputs` (decoded op inputs), `ints` (tensor
// sizes and strides, integer lists), `attrs` (extra attributes), `name_lists` (string lists),
// `children` (the tree's child lists). Strings are interned in `strings`.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tracemodel/config.hpp"
#include "tracemodel/detail/assert.hpp"
#include "tracemodel/detail/big_allocator.hpp"
#include "tracemodel/model/event.hpp"
#include "tracemodel/model/strings.hpp"

TRACEMODEL_BEGIN_NAMESPACE

/// Anomalies found in recorded or read data. Each is repaired as documented in the README
/// ("Bad input") and counted here; none is silent and none aborts.
enum class anomaly : std::uint8_t {
  end_before_start,        ///< an event ends before it starts: its end is set to its start
  unfinished_op,           ///< an op never ended: kept, marked, its end borrowed from its parent
  duplicate_flow_start,    ///< a second flow start with an id already started: the first wins
  flow_end_without_start,  ///< a flow end whose id never started: the end is dropped
  dangling_correlation,    ///< a device activity whose correlation matches no runtime call
  op_ended_twice,          ///< end_op on an op that already ended: the first end is kept
  foreign_handle,          ///< end_op with a handle from another queue: ignored
  stale_handle,            ///< end_op with a handle from before the last materialize: ignored
  duplicate_event,         ///< the same event twice in a file (same everything): kept
  bad_value,               ///< a field with an unusable value (NaN, out of range): defaulted
  unbound_flow,            ///< a flow record that binds to no event: dropped
  unsupported_record,  ///< a record of a phase tracemodel does not model (counters, ...): skipped
  unmatched_end,       ///< an `E` record without its `B`: dropped
  duplicate_flow_end,  ///< a second flow end with an id already ended: the first wins
  outside_recording,   ///< a device record of no recording window (launched while stopped): dropped
  lost_op,         ///< an op a live queue did not keep (its memory cap): counted, not in the table
  lost_end,        ///< an op's end a live queue did not keep (its cap): the op stays open
  orphan_end,      ///< a live queue's end of an op it never handed over (or handed over already)
  lost_side,       ///< an op's inputs, stack, module frames or extra args a live queue had no room
                   ///< for: the op is kept without them
  orphan_side,     ///< a live queue's side data of an op it never handed over: dropped at close
  skipped_packet,  ///< a Perfetto packet the reader does not model, or that needs incremental
                   ///< state its sequence lost: skipped
  free_without_allocation,  ///< a free of an address no allocation holds (memory measures: taken
                            ///< as allocated before the trace)
  allocation_reused,        ///< an allocation at an address still allocated (memory measures:
                            ///< the old block taken as freed then)
  negative_memory_total,    ///< an allocation with a negative total allocated or reserved: kept
  free_size_mismatch,       ///< a free of another size than its allocation's: the allocation's kept
  torn_record,  ///< a crash file's record its recorder's death cut in the middle: counted, not read
  lost_block,   ///< a crash file's block that cannot be read (cut off, inconsistent): counted
  invalid_utf8,  ///< a string that is not UTF-8 (a Perfetto file's; the Chrome-trace reader
                 ///< refuses such text): each byte outside a well-formed sequence becomes U+FFFD
  count_
};
inline constexpr std::array<std::string_view, static_cast<std::size_t>(anomaly::count_)>
    anomaly_names{"end_before_start",
                  "unfinished_op",
                  "duplicate_flow_start",
                  "flow_end_without_start",
                  "dangling_correlation",
                  "op_ended_twice",
                  "foreign_handle",
                  "stale_handle",
                  "duplicate_event",
                  "bad_value",
                  "unbound_flow",
                  "unsupported_record",
                  "unmatched_end",
                  "duplicate_flow_end",
                  "outside_recording",
                  "lost_op",
                  "lost_end",
                  "orphan_end",
                  "lost_side",
                  "orphan_side",
                  "skipped_packet",
                  "free_without_allocation",
                  "allocation_reused",
                  "negative_memory_total",
                  "free_size_mismatch",
                  "torn_record",
                  "lost_block",
                  "invalid_utf8"};

struct anomaly_counts {
  std::array<std::uint64_t, static_cast<std::size_t>(anomaly::count_)> n{};
  void add(anomaly a, std::uint64_t k = 1) noexcept { n[static_cast<std::size_t>(a)] += k; }
  [[nodiscard]] std::uint64_t operator[](anomaly a) const noexcept {
    return n[static_cast<std::size_t>(a)];
  }
  [[nodiscard]] std::uint64_t total() const noexcept {
    std::uint64_t t = 0;
    for (auto v : n) t += v;
    return t;
  }
  anomaly_counts& operator+=(const anomaly_counts& o) noexcept {
    for (std::size_t i = 0; i < n.size(); ++i) n[i] += o.n[i];
    return *this;
  }
};

/// A metadata record of a trace file (Chrome's `ph:"M"`: process_name, thread_name, ...).
struct metadata_record {
  name_id name{};  ///< "process_name", "thread_name", "process_sort_index", ...
  process_key pid = 0;
  thread_key tid = 0;
  name_id args{};   ///< its arguments as its source wrote them (verbatim); empty: the name alone
  name_id value{};  ///< the name a name record gives (set_thread_name, set_process_name)
};

/// Trace-level facts that formats keep (base time, top-level metadata of a Chrome trace).
struct trace_info {
  std::int64_t base_time_ns = 0;  ///< `baseTimeNanoseconds`; 0 when absent
  bool has_base_time = false;
  /// The trace file's own top-level items that the model has no field for (a reader of the
  /// Chrome format: the keys other than `traceEvents`, `baseTimeNanoseconds`, `schemaVersion`
  /// and `displayTimeUnit`), in file order, as (key, the value as the file wrote it) pairs.
  std::vector<std::pair<name_id, name_id>> metadata;
  /// Metadata records, in file order.
  std::vector<metadata_record> records;
  /// When a reader was asked to keep it and the file did not list the events in start order:
  /// `file_order[i]` is the place of event i among the events as the file listed them. Empty
  /// otherwise (then the table's order is the file's, or it was not kept).
  std::vector<std::uint32_t> file_order;
};

/// The vector type of an event table's arrays (huge pages for large ones).
template <class T>
using table_vector = std::vector<T, detail::big_allocator<T>>;

template <class Schema = default_schema>
class basic_event_table {
 public:
  using schema_type = Schema;
  using event_type = basic_event<Schema>;

  table_vector<event_type> events;
  string_table strings;
  table_vector<input_value> inputs;
  table_vector<std::int64_t> ints;
  table_vector<attribute> attrs;
  table_vector<name_id> name_lists;
  table_vector<event_index> children;
  /// Where each event's children are: `children[child_offsets[i], child_offsets[i + 1])`; one
  /// entry per event and one more, or none before a tree is built.
  table_vector<std::uint32_t> child_offsets;
  table_vector<flow_link> links;  ///< forward/backward and host/device links (linkers, readers)
  anomaly_counts anomalies;
  trace_info info;

  [[nodiscard]] std::size_t size() const noexcept { return events.size(); }
  [[nodiscard]] bool empty() const noexcept { return events.empty(); }
  /// Bytes the table's arrays and strings hold (their capacity), for memory reports.
  [[nodiscard]] std::size_t memory_bytes() const noexcept {
    return events.capacity() * sizeof(event_type) + strings.memory_bytes() +
           inputs.capacity() * sizeof(input_value) + ints.capacity() * sizeof(std::int64_t) +
           attrs.capacity() * sizeof(attribute) + name_lists.capacity() * sizeof(name_id) +
           children.capacity() * sizeof(event_index) +
           child_offsets.capacity() * sizeof(std::uint32_t) + links.capacity() * sizeof(flow_link);
  }
  event_type& operator[](event_index i) { return events[i]; }
  const event_type& operator[](event_index i) const { return events[i]; }

  /// The event's name: its `name` field, else the kind's `default_name`, else `kind_name`.
  [[nodiscard]] std::string_view name(const event_type& e) const noexcept {
    return e.visit([this](const auto& f) -> std::string_view {
      using F = std::remove_cvref_t<decltype(f)>;
      if constexpr (requires { f.name; }) {
        if constexpr (std::is_same_v<decltype(f.name), name_id>)
          return strings.view(f.name);
        else
          return std::string_view(f.name);
      } else if constexpr (requires { F::default_name; }) {
        return F::default_name;
      } else {
        return F::kind_name;
      }
    });
  }
  [[nodiscard]] std::string_view name(event_index i) const noexcept { return name(events[i]); }

  /// The Kineto category of the event (`cpu_op`, `kernel`, ...).
  [[nodiscard]] activity_type activity(const event_type& e) const noexcept {
    return e.visit([](const auto& f) -> activity_type {
      using F = std::remove_cvref_t<decltype(f)>;
      if constexpr (std::is_same_v<F, extra_fields<event_kind::op>> ||
                    std::is_same_v<F, extra_fields<event_kind::backend>>)
        return f.scope == op_scope::user_scope ? activity_type::user_annotation
                                               : activity_type::cpu_op;
      else if constexpr (std::is_same_v<F, extra_fields<event_kind::allocation>> ||
                         std::is_same_v<F, extra_fields<event_kind::out_of_memory>>)
        return activity_type::cpu_instant_event;
      else if constexpr (std::is_same_v<F, extra_fields<event_kind::script_call>> ||
                         std::is_same_v<F, extra_fields<event_kind::native_call>>)
        return activity_type::python_function;
      else if constexpr (requires { f.activity; })
        return f.activity;
      else
        return activity_type::other;
    });
  }
  /// The category text: the kept `cat` for device activities, else the activity's name, and
  /// for kinds that are neither, the kind's name.
  [[nodiscard]] std::string_view category(const event_type& e) const noexcept {
    return e.visit([this, &e](const auto& f) -> std::string_view {
      using F = std::remove_cvref_t<decltype(f)>;
      if constexpr (requires { f.category; }) {
        if (f.category != empty_name) return strings.view(f.category);
      }
      const activity_type a = activity(e);
      if (a == activity_type::other) return F::kind_name;
      return to_string(a);
    });
  }

  [[nodiscard]] std::span<const attribute> attrs_of(const event_type& e) const noexcept {
    return {attrs.data() + e.attrs.first, e.attrs.size};
  }
  /// The attribute with key `key`, or nullptr.
  [[nodiscard]] const attribute* find_attr(const event_type& e,
                                           std::string_view key) const noexcept {
    name_id k{};
    if (!strings.find(key, k)) return nullptr;
    for (const attribute& a : attrs_of(e))
      if (a.key == k) return &a;
    return nullptr;
  }
  [[nodiscard]] std::span<const std::int64_t> int_list(const attribute& a) const noexcept {
    return {ints.data() + a.list.first, a.list.size};
  }
  [[nodiscard]] std::span<const name_id> string_list(const attribute& a) const noexcept {
    return {name_lists.data() + a.list.first, a.list.size};
  }

  /// All entries of an op's inputs (lists followed by their elements).
  [[nodiscard]] std::span<const input_value> inputs_of(const event_type& e) const noexcept {
    if (const auto* op = e.template get_if<event_kind::op>())
      return {inputs.data() + op->inputs.first, op->inputs.size};
    return {};
  }
  [[nodiscard]] std::span<const std::int64_t> sizes(const input_value& v) const noexcept {
    return {ints.data() + v.dims, v.kind == input_kind::tensor ? v.rank : 0};
  }
  [[nodiscard]] std::span<const std::int64_t> strides(const input_value& v) const noexcept {
    if (v.kind != input_kind::tensor || !v.has_strides) return {};
    return {ints.data() + v.dims + v.rank, v.rank};
  }

  /// The children of event `i` (empty before a tree is built).
  [[nodiscard]] std::span<const event_index> children_of(event_index i) const noexcept {
    if (child_offsets.size() <= i + std::size_t{1}) return {};
    return {children.data() + child_offsets[i], child_offsets[i + 1] - child_offsets[i]};
  }
  /// The children of `e`, an event of this table.
  [[nodiscard]] std::span<const event_index> children_of(const event_type& e) const noexcept {
    return children_of(static_cast<event_index>(&e - events.data()));
  }

  // ---- building ---------------------------------------------------------------------------

  /// A thread or process key that stands for a string id of a trace file.
  [[nodiscard]] std::uint64_t string_key(std::string_view label) {
    return string_key_bit | static_cast<std::uint32_t>(strings.intern(label));
  }
  [[nodiscard]] static constexpr bool is_string_key(std::uint64_t k) noexcept {
    return (k & string_key_bit) != 0 && (k >> 63) == 0;
  }
  [[nodiscard]] std::string_view key_label(std::uint64_t k) const noexcept {
    return strings.view(static_cast<name_id>(static_cast<std::uint32_t>(k & ~string_key_bit)));
  }

  /// Appends an attribute to `e`, whose attributes must be the last ones appended.
  attribute& add_attr(event_type& e, name_id key, attr_type type) {
    if (e.attrs.size == 0) e.attrs.first = static_cast<std::uint32_t>(attrs.size());
    TRACEMODEL_ASSERT(e.attrs.first + e.attrs.size == attrs.size(),
                      "add_attr: the event's attributes must be the last ones");
    attribute& a = attrs.emplace_back();
    a.key = key;
    a.type = type;
    ++e.attrs.size;
    return a;
  }
  attribute& add_attr(event_type& e, std::string_view key, attr_type type) {
    return add_attr(e, strings.intern(key), type);
  }
  template <class Key>
  void add_int_attr(event_type& e, const Key& key, std::int64_t v) {
    add_attr(e, key, attr_type::integer).i = v;
  }
  void add_string_attr(event_type& e, std::string_view key, std::string_view v) {
    const name_id s = strings.intern(v);
    add_attr(e, key, attr_type::string).s = s;
  }
  template <class Range>
  void add_string_list_attr(event_type& e, std::string_view key, const Range& items) {
    const auto first = static_cast<std::uint32_t>(name_lists.size());
    for (const auto& it : items) name_lists.push_back(strings.intern(std::string_view(it)));
    add_attr(e, key, attr_type::string_list).list = {
        first, static_cast<std::uint32_t>(name_lists.size() - first)};
  }
  template <class Key, class Range>
  void add_int_list_attr(event_type& e, const Key& key, const Range& items) {
    const auto first = static_cast<std::uint32_t>(ints.size());
    for (auto v : items) ints.push_back(static_cast<std::int64_t>(v));
    add_attr(e, key, attr_type::int_list).list = {first,
                                                  static_cast<std::uint32_t>(ints.size() - first)};
  }

  /// Names a thread (written as a `thread_name` metadata record).
  void set_thread_name(process_key pid, thread_key tid, std::string_view name) {
    set_name_record("thread_name", pid, tid, name);
  }
  /// Names a process (written as a `process_name` metadata record).
  void set_process_name(process_key pid, std::string_view name) {
    set_name_record("process_name", pid, 0, name);
  }

  void set_name_record(std::string_view record, process_key pid, thread_key tid,
                       std::string_view name);

  /// Clears the tree links (all of them, or only those the tree builder set).
  void reset_tree(bool keep_linked = false) noexcept {
    for (auto& e : events) {
      if (!keep_linked || e.link == parent_link::tree || e.link == parent_link::none) {
        e.parent = no_event;
        e.link = parent_link::none;
      }
    }
    children.clear();
    child_offsets.clear();
  }
};

using event_table = basic_event_table<default_schema>;

/// Walks an op's input entries as nested lists: `open_list(v)` and `close_list()` around the
/// elements of each non-empty list, `leaf(v)` for everything else (empty lists included), and
/// `separator()` between siblings. Iterative.
template <class Inputs, class Open, class Close, class Leaf, class Separator>
void walk_nested_inputs(const Inputs& ins, Open&& open_list, Close&& close_list, Leaf&& leaf,
                        Separator&& separator) {
  std::vector<std::uint32_t> left;  // direct elements still to come in each open list
  bool first = true;
  for (std::size_t i = 0; i < ins.size(); ++i) {
    const input_value& v = ins[i];
    if (!first) separator();
    first = false;
    const bool list = v.kind == input_kind::tensor_list || v.kind == input_kind::scalar_list;
    if (list && v.rank > 0) {
      open_list(v);
      left.push_back(v.rank);
      first = true;
      continue;
    }
    leaf(v);
    // The element is done; a list whose last element this was is done too.
    while (!left.empty() && --left.back() == 0) {
      left.pop_back();
      close_list();
    }
  }
}

template <class Schema>
void basic_event_table<Schema>::set_name_record(std::string_view record, process_key pid,
                                                thread_key tid, std::string_view name) {
  const name_id rec = strings.intern(record);
  const name_id value = strings.intern(name);
  for (metadata_record& m : info.records)
    if (m.name == rec && m.pid == pid && m.tid == tid) {
      m.args = empty_name;
      m.value = value;
      return;
    }
  info.records.push_back({rec, pid, tid, empty_name, value});
}

TRACEMODEL_END_NAMESPACE
