// tracemodel/formats — the Perfetto writer: the native-format encoder of the export view
// (formats/export_view.hpp), a `perfetto.protos.Trace` of TracePackets that Perfetto's UI and
// trace processor open at any size.
//
//   tracemodel::write_perfetto_trace_file(table, "trace.pftrace");     // or "trace.pftrace.gz"
//   tracemodel::write_perfetto_trace_file(view, "with_counters.pftrace");
//
// What it writes (docs/perfetto.md has the whole layout):
//  * one packet sequence for the events: its first packet clears the incremental state, sets a
//    sequence-scoped incremental clock (id 64, ns, snapshotted against BOOTTIME) as the default,
//    so that each packet's timestamp is the delta from the one before;
//  * a ChromeEventBundle: the trace's metadata (ChromeMetadata, JSON values), the base time,
//    tracemodel's mark, and the table's metadata records (thread and process names, sort
//    indexes, ...) as legacy JSON, as a Chrome trace carries them;
//  * track descriptors: a process track per pid, a thread track per thread under it; a pid or
//    tid that is a string (or does not fit Perfetto's field) a named track; events that overlap
//    without nesting on one thread (kernels of one stream, say) go to child tracks of its track,
//    so nothing is dropped or cut;
//  * events: begin/end TrackEvents (instants for instants and allocations) with interned names,
//    categories and annotation names, their args as typed debug annotations in the Chrome
//    writer's order (formats/event_args.hpp: payload fields, op inputs (`Input Dims` and
//    `Input Strides` as their JSON text, interned), attributes, the view's marks); flows as
//    `flow_ids`/`terminating_flow_ids` on the events they join: host-to-device flows (`ac2g`),
//    forward/backward links (`fwdbwd`), the view's flows;
//  * the view's counter series on counter tracks, in a second sequence.
// Written streaming: packets go to the sink a megabyte at a time. Times must not be negative
// (Perfetto's timestamps are unsigned): a table with such times is a `usage_error`.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <charconv>
#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <map>
#include <queue>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tracemodel/config.hpp"
#include "tracemodel/detail/radix_sort.hpp"
#include "tracemodel/formats/event_args.hpp"
#include "tracemodel/formats/export_view.hpp"
#include "tracemodel/formats/json_output.hpp"
#include "tracemodel/formats/perfetto_fields.hpp"
#include "tracemodel/formats/protobuf.hpp"
#include "tracemodel/model/table.hpp"

TRACEMODEL_BEGIN_NAMESPACE

namespace detail {

template <class Table>
class perfetto_writer {
 public:
  using view_type = basic_export_view<typename Table::schema_type>;
  using sink = std::function<void(std::string_view)>;

  perfetto_writer(const view_type& v, sink s) : v_(v), t_(v.table), sink_(std::move(s)) {}

  void write() {
    check_times();
    order_ = start_order(t_.events);
    start_sequence(events_sequence);
    write_bundle();
    write_tracks();
    collect_flows();
    const auto marks = v_.marks_by_event();
    for (const std::uint32_t i : order_) {
      const auto& e = t_.events[i];
      end_slices_before(e.start_ns, false);
      write_event(i, e, marks);
    }
    end_slices_before(std::numeric_limits<std::int64_t>::max(), true);
    write_counters();
    flush();
  }

 private:
  using event_t = typename Table::event_type;
  static constexpr std::uint32_t events_sequence = 1, counters_sequence = 2;
  static constexpr std::size_t flush_bytes = std::size_t{1} << 20;

  // ---- packets -------------------------------------------------------------------------------
  void flush() {
    if (out_.size() > 0) sink_(out_.view());
    out_.clear();
  }
  void begin_packet(std::uint32_t sequence) {
    out_.begin(pf::trace_packet);
    out_.uint(pf::packet::trusted_packet_sequence_id, sequence);
  }
  void end_packet() {
    out_.end();
    if (out_.size() >= flush_bytes) flush();
  }
  /// A packet of the sequence at time `ts` (its delta from the sequence's last time).
  void begin_timed_packet(std::uint32_t sequence, std::int64_t ts) {
    std::int64_t& last = sequence == events_sequence ? last_ts_ : last_counter_ts_;
    out_.begin(pf::trace_packet);
    out_.uint(pf::packet::timestamp, static_cast<std::uint64_t>(ts - last));
    last = ts;
    out_.uint(pf::packet::trusted_packet_sequence_id, sequence);
    out_.uint(pf::packet::sequence_flags, pf::packet::seq_needs_state);
  }

  /// The events sequence's packet at `ts` of the event in `ev_` (and what it interns): its size
  /// known before it is written, so that it is not moved up once written.
  void write_event_packet(std::int64_t ts) {
    const auto delta = static_cast<std::uint64_t>(ts - last_ts_);
    last_ts_ = ts;
    const auto field = [](std::size_t n) { return 1 + pb::varint_size(n) + n; };
    std::size_t len =
        1 + pb::varint_size(delta) + 1 + pb::varint_size(events_sequence) + 2 + field(ev_.size());
    if (interned_.size() > 0) len += field(interned_.size());
    out_.tag(pf::trace_packet, pb::wire::bytes);
    out_.varint(len);
    out_.uint(pf::packet::timestamp, delta);
    out_.uint(pf::packet::trusted_packet_sequence_id, events_sequence);
    out_.uint(pf::packet::sequence_flags, pf::packet::seq_needs_state);
    if (interned_.size() > 0) out_.bytes(pf::packet::interned_data, interned_.view());
    out_.bytes(pf::packet::track_event, ev_.view());
    if (out_.size() >= flush_bytes) flush();
  }

  /// The first packet of a sequence: its incremental state cleared, its clock and defaults set.
  void start_sequence(std::uint32_t sequence) {
    begin_packet(sequence);
    out_.uint(pf::packet::sequence_flags, pf::packet::seq_cleared);
    out_.boolean(pf::packet::first_packet_on_sequence, true);
    out_.begin(pf::packet::clock_snapshot);
    for (const std::uint32_t id : {pf::clock::boottime, pf::clock::first_sequence_clock}) {
      out_.begin(pf::clock::clocks);
      out_.uint(pf::clock::clock_id, id);
      out_.uint(pf::clock::timestamp, 0);
      if (id != pf::clock::boottime) out_.boolean(pf::clock::is_incremental, true);
      out_.end();
    }
    out_.end();
    out_.begin(pf::packet::trace_packet_defaults);
    out_.uint(pf::defaults::timestamp_clock_id, pf::clock::first_sequence_clock);
    out_.end();
    end_packet();
  }

  void check_times() const {
    for (const auto& e : t_.events)
      if (e.start_ns < 0)
        throw usage_error("write_perfetto_trace: an event starts before 0 ns (" +
                          std::to_string(e.start_ns) + "); Perfetto's times are unsigned");
    for (const counter_series& c : v_.counters)
      for (const counter_point& p : c.points)
        if (p.ts < 0) throw usage_error("write_perfetto_trace: a counter point before 0 ns");
  }

  // ---- the bundle: metadata and metadata records ----------------------------------------------
  void write_bundle() {
    begin_packet(events_sequence);
    out_.begin(pf::packet::chrome_events);
    metadata_string(pf::writer_mark, "1");
    if (t_.info.has_base_time) {
      out_.begin(pf::chrome::metadata);
      out_.bytes(pf::chrome::name, pf::base_time_key);
      out_.sint(pf::chrome::int_value, t_.info.base_time_ns);
      out_.end();
    }
    for (const auto& [key, value] : t_.info.metadata) {
      out_.begin(pf::chrome::metadata);
      out_.bytes(pf::chrome::name, t_.strings.view(key));
      out_.bytes(pf::chrome::json_value, t_.strings.view(value));
      out_.end();
    }
    if (!t_.info.records.empty()) {
      // As a Chrome trace's events array would list them (Perfetto reads legacy JSON too).
      std::string json;
      json_output j = json_output::to_string(json);
      bool first = true;
      for (const metadata_record& m : t_.info.records) {
        j.raw(first ? "" : ",");
        first = false;
        j.raw("{\"ph\":\"M\",\"name\":").string(t_.strings.view(m.name)).raw(",\"pid\":");
        json_key(j, static_cast<std::uint64_t>(m.pid));
        j.raw(",\"tid\":");
        json_key(j, m.tid);
        if (m.value != empty_name)
          j.raw(",\"args\":{\"name\":").string(t_.strings.view(m.value)).raw("}}");
        else if (m.args != empty_name)
          j.raw(",\"args\":").raw(t_.strings.view(m.args)).ch('}');
        else
          j.raw(",\"args\":{}}");
      }
      j.flush();
      out_.begin(pf::chrome::legacy_json_trace);
      out_.uint(pf::chrome::json_type, 0);  // USER_TRACE
      out_.bytes(pf::chrome::json_data, json);
      out_.end();
    }
    out_.end();
    end_packet();
  }
  void metadata_string(std::string_view name, std::string_view value) {
    out_.begin(pf::chrome::metadata);
    out_.bytes(pf::chrome::name, name);
    out_.bytes(pf::chrome::string_value, value);
    out_.end();
  }
  void json_key(json_output& j, std::uint64_t k) const {
    if (Table::is_string_key(k))
      j.string(t_.key_label(k));
    else
      j.integer(static_cast<std::int64_t>(k));
  }

  // ---- tracks ----------------------------------------------------------------------------------
  struct lane {
    std::uint64_t uuid = 0;
    std::vector<std::int64_t> ends;  // the open slices' ends, innermost last
  };
  struct thread_track {
    std::vector<std::uint32_t> lanes;  // into lanes_; the first is the thread's own track
  };

  static bool fits_pid(std::uint64_t pid) noexcept {
    return !Table::is_string_key(pid) && static_cast<std::int64_t>(pid) >= 0 &&
           static_cast<std::int64_t>(pid) <= std::numeric_limits<std::int32_t>::max();
  }
  std::string label(std::uint64_t k) const {
    return Table::is_string_key(k) ? std::string(t_.key_label(k))
                                   : std::to_string(static_cast<std::int64_t>(k));
  }
  /// The name a name record gives (`thread_name`, `process_name`), or "".
  std::string_view record_name(const metadata_record& m) const {
    if (m.value != empty_name) return t_.strings.view(m.value);
    // `{"name": "text"}` as read; a name with escapes is left to the legacy JSON.
    const std::string_view a = t_.strings.view(m.args);
    const std::size_t k = a.find("\"name\"");
    if (k == std::string_view::npos) return {};
    const std::size_t q = a.find('"', a.find(':', k));
    if (q == std::string_view::npos) return {};
    const std::size_t r = a.find('"', q + 1);
    if (r == std::string_view::npos) return {};
    const std::string_view s = a.substr(q + 1, r - q - 1);
    return s.find('\\') == std::string_view::npos ? s : std::string_view{};
  }

  void write_tracks() {
    std::map<std::uint64_t, std::string_view> process_names;
    std::map<std::pair<std::uint64_t, std::uint64_t>, std::string_view> thread_names;
    for (const metadata_record& m : t_.info.records) {
      const std::string_view rec = t_.strings.view(m.name);
      const auto pid = static_cast<std::uint64_t>(m.pid);
      if (rec == "process_name") process_names[pid] = record_name(m);
      if (rec == "thread_name") thread_names[{pid, m.tid}] = record_name(m);
    }
    for (const std::uint32_t i : order_) {
      const auto& e = t_.events[i];
      const auto pid = static_cast<std::uint64_t>(e.pid);
      const std::pair<std::uint64_t, std::uint64_t> key{pid, e.tid};
      if (threads_.contains(key)) continue;
      auto [p, fresh] = processes_.try_emplace(pid, 0);
      if (fresh) {
        p->second = next_uuid_++;
        begin_packet(events_sequence);
        out_.begin(pf::packet::track_descriptor);
        out_.uint(pf::track::uuid, p->second);
        if (fits_pid(pid)) {
          out_.begin(pf::track::process);
          out_.uint(pf::process::pid, pid);
          if (auto n = process_names.find(pid); n != process_names.end() && !n->second.empty())
            out_.bytes(pf::process::process_name, n->second);
          out_.end();
        } else {
          out_.bytes(pf::track::name, label(pid));
          if (!Table::is_string_key(pid)) out_.bytes(pf::track::description, pf::numeric_id);
        }
        out_.end();
        end_packet();
      }
      const std::uint64_t uuid = next_uuid_++;
      begin_packet(events_sequence);
      out_.begin(pf::packet::track_descriptor);
      out_.uint(pf::track::uuid, uuid);
      out_.uint(pf::track::parent_uuid, p->second);
      if (fits_pid(pid) && !Table::is_string_key(e.tid) &&
          e.tid <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
        out_.begin(pf::track::thread);
        out_.uint(pf::thread::pid, pid);
        out_.uint(pf::thread::tid, e.tid);
        if (auto n = thread_names.find(key); n != thread_names.end() && !n->second.empty())
          out_.bytes(pf::thread::thread_name, n->second);
        out_.end();
      } else {
        out_.bytes(pf::track::name, label(e.tid));
        if (!Table::is_string_key(e.tid)) out_.bytes(pf::track::description, pf::numeric_id);
      }
      out_.end();
      end_packet();
      thread_track tt;
      tt.lanes.push_back(static_cast<std::uint32_t>(lanes_.size()));
      lanes_.push_back({uuid, {}});
      threads_.emplace(key, std::move(tt));
    }
  }

  thread_track& track_of(const event_t& e) {
    const std::pair<std::uint64_t, std::uint64_t> key{static_cast<std::uint64_t>(e.pid), e.tid};
    if (last_track_ == nullptr || last_key_ != key) {
      last_track_ = &threads_.find(key)->second;
      last_key_ = key;
    }
    return *last_track_;
  }

  /// A lane of `tt` where a slice ending at `end` nests (the open slices of every lane end
  /// after the slice's start): a new child track when none has room.
  std::uint32_t lane_for(thread_track& tt, std::int64_t end) {
    for (const std::uint32_t l : tt.lanes)
      if (lanes_[l].ends.empty() || end <= lanes_[l].ends.back()) return l;
    const std::uint64_t uuid = next_uuid_++;
    begin_packet(events_sequence);
    out_.begin(pf::packet::track_descriptor);
    out_.uint(pf::track::uuid, uuid);
    out_.uint(pf::track::parent_uuid, lanes_[tt.lanes.front()].uuid);
    out_.end();
    end_packet();
    const auto l = static_cast<std::uint32_t>(lanes_.size());
    lanes_.push_back({uuid, {}});
    tt.lanes.push_back(l);
    return l;
  }

  // ---- slices ----------------------------------------------------------------------------------
  struct open_slice {
    std::int64_t end;
    std::uint32_t depth, lane;
    bool operator>(const open_slice& o) const noexcept {  // earliest end first, inner first
      return end != o.end ? end > o.end : depth < o.depth;
    }
  };

  /// Ends the open slices that end at or before `ts` (all of them with `all`), in time order.
  void end_slices_before(std::int64_t ts, bool all) {
    while (!open_.empty() && (all || open_.top().end <= ts)) {
      const open_slice s = open_.top();
      open_.pop();
      lanes_[s.lane].ends.pop_back();
      begin_timed_packet(events_sequence, s.end);
      out_.begin(pf::packet::track_event);
      out_.uint(pf::event::type, pf::event::slice_end);
      out_.uint(pf::event::track_uuid, lanes_[s.lane].uuid);
      out_.end();
      end_packet();
    }
  }

  void write_event(std::uint32_t i, const event_t& e, const std::vector<std::size_t>& marks) {
    const bool allocation =
        e.template is<event_kind::allocation>() || e.template is<event_kind::out_of_memory>();
    const char scope = e.instant_scope != 0 ? e.instant_scope : allocation ? 't' : 0;
    thread_track& tt = track_of(e);
    std::int64_t end = e.end_ns();
    if (end == no_end_ns || end < e.start_ns) end = e.start_ns;
    const std::uint32_t l = scope != 0 ? tt.lanes.front() : lane_for(tt, end);

    ev_.clear();
    interned_.clear();
    ev_.uint(pf::event::type, scope != 0 ? pf::event::instant : pf::event::slice_begin);
    ev_.uint(pf::event::track_uuid, lanes_[l].uuid);
    ev_.uint(pf::event::category_iids,
             intern(categories_, pf::interned::event_categories, t_.category(e)));
    ev_.uint(pf::event::name_iid, intern(names_, pf::interned::event_names, t_.name(e)));
    if (scope != 0 && scope != 't') {
      ev_.begin(pf::event::legacy_event);
      ev_.uint(pf::legacy::instant_event_scope,
               scope == 'g' ? pf::legacy::scope_global : pf::legacy::scope_process);
      ev_.end();
    }
    write_args(e);
    // The view's marks on this event (the table order is not the write order: marks by event).
    auto first = std::lower_bound(marks.begin(), marks.end(), i, [this](std::size_t m, auto ev) {
      return v_.marks[m].event < ev;
    });
    for (; first != marks.end() && v_.marks[*first].event == i; ++first) {
      const event_mark& m = v_.marks[*first];
      begin_annotation(m.key);
      if (const auto* x = std::get_if<std::int64_t>(&m.value))
        ev_.sint(pf::annotation::int_value, *x);
      else if (const auto* d = std::get_if<double>(&m.value))
        ev_.floating(pf::annotation::double_value, *d);
      else
        ev_.bytes(pf::annotation::string_value, std::get<std::string>(m.value));
      ev_.end();
    }
    write_event_flows(i);

    write_event_packet(e.start_ns);
    if (scope == 0) {
      lanes_[l].ends.push_back(end);
      open_.push({end, static_cast<std::uint32_t>(lanes_[l].ends.size()), l});
    }
  }

  // ---- args ------------------------------------------------------------------------------------
  void begin_annotation(std::string_view key) {
    ev_.begin(pf::event::debug_annotations);
    ev_.uint(pf::annotation::name_iid,
             intern(annotation_names_, pf::interned::debug_annotation_names, key));
  }
  /// A string value: interned when it is one of the table's strings (names, types, stacks).
  void string_value(std::string_view s, bool table_string) {
    if (table_string && !s.empty())
      ev_.uint(pf::annotation::string_value_iid,
               intern(string_values_, pf::interned::debug_annotation_string_values, s));
    else
      ev_.bytes(pf::annotation::string_value, s);
  }

  void write_args(const event_t& e) {
    e.visit([&](const auto& f) {
      detail::for_each_payload_arg(f, [this](std::string_view key, const auto& v) {
        using T = std::remove_cvref_t<decltype(v)>;
        if constexpr (std::is_same_v<T, bool>) {
          begin_annotation(key);
          ev_.boolean(pf::annotation::bool_value, v);
          ev_.end();
        } else if constexpr (std::is_integral_v<T>) {
          begin_annotation(key);
          if constexpr (std::is_signed_v<T>)
            ev_.sint(pf::annotation::int_value, v);
          else
            ev_.uint(pf::annotation::uint_value, v);
          ev_.end();
        } else if constexpr (std::is_floating_point_v<T>) {
          begin_annotation(key);
          ev_.floating(pf::annotation::double_value, v);
          ev_.end();
        } else if constexpr (std::is_same_v<T, name_id>) {
          begin_annotation(key);
          string_value(t_.strings.view(v), true);
          ev_.end();
        } else if constexpr (std::is_convertible_v<T, std::string_view>) {
          begin_annotation(key);
          string_value(std::string_view(v), false);
          ev_.end();
        } else if constexpr (std::is_enum_v<T>) {
          begin_annotation(key);
          ev_.sint(pf::annotation::int_value, static_cast<std::int64_t>(v));
          ev_.end();
        }
      });
    });
    if (const auto* op = e.template get_if<event_kind::op>()) {
      write_inputs(e);
      if (op->unfinished()) {
        begin_annotation("finished");
        ev_.boolean(pf::annotation::bool_value, false);
        ev_.end();
      }
    }
    for (const attribute& a : t_.attrs_of(e)) write_attr(a);
  }

  void write_inputs(const event_t& e) {
    const auto ins = t_.inputs_of(e);
    if (ins.empty()) return;
    const detail::input_args has = detail::input_args_of(ins);
    auto nested_ints = [&](std::string_view key, auto values_of) {
      begin_annotation(key);
      walk_nested_inputs(
          ins, [this](const input_value&) { ev_.begin(pf::annotation::array_values); },
          [this] { ev_.end(); },
          [&](const input_value& v) {
            ev_.begin(pf::annotation::array_values);
            if (v.kind == input_kind::tensor)
              for (const std::int64_t x : values_of(v)) {
                ev_.begin(pf::annotation::array_values);
                ev_.sint(pf::annotation::int_value, x);
                ev_.end();
              }
            ev_.end();
          },
          [] {});
      ev_.end();
    };
    // Their JSON text, interned: the same shapes come op after op (nested arrays for values of
    // more digits than a reader's text path takes).
    auto dims = [&](std::string_view key, auto values_of) {
      if (!dims_text(ins, values_of)) return nested_ints(key, values_of);
      begin_annotation(key);
      ev_.uint(pf::annotation::string_value_iid,
               intern_text(string_values_, pf::interned::debug_annotation_string_values, text_));
      ev_.end();
    };
    dims("Input Dims", [this](const input_value& v) { return t_.sizes(v); });
    begin_annotation("Input type");
    for (std::size_t i = 0; i < ins.size(); i += ins[i].subtree) {
      ev_.begin(pf::annotation::array_values);
      string_value(detail::input_type_text(t_, ins[i]), true);
      ev_.end();
    }
    ev_.end();
    if (has.strides) dims("Input Strides", [this](const input_value& v) { return t_.strides(v); });
    if (has.scalars) {
      begin_annotation("Concrete Inputs");
      for (std::size_t i = 0; i < ins.size(); i += ins[i].subtree) {
        ev_.begin(pf::annotation::array_values);
        string_value(detail::concrete_text(ins, i), false);
        ev_.end();
      }
      ev_.end();
    }
  }

  /// `Input Dims`/`Input Strides` as JSON text (`[[2,3],[]]`: an entry per input, lists of
  /// tensors nested) into `text_`; false when a value has more than 18 digits.
  template <class Inputs, class Values>
  bool dims_text(const Inputs& ins, Values values_of) {
    constexpr std::int64_t limit = 1'000'000'000'000'000'000;
    bool fits = true;
    text_.assign(1, '[');
    walk_nested_inputs(
        ins, [this](const input_value&) { text_ += '['; }, [this] { text_ += ']'; },
        [&](const input_value& v) {
          text_ += '[';
          if (v.kind == input_kind::tensor) {
            bool first = true;
            for (const std::int64_t x : values_of(v)) {
              if (!first) text_ += ',';
              first = false;
              fits = fits && x > -limit && x < limit;
              char digits[24];
              text_.append(digits, std::to_chars(digits, digits + sizeof digits, x).ptr);
            }
          }
          text_ += ']';
        },
        [this] { text_ += ','; });
    text_ += ']';
    return fits;
  }

  void write_attr(const attribute& a) {
    const std::string_view key = t_.strings.view(a.key);
    begin_annotation(key);
    switch (a.type) {
      case attr_type::integer:
        ev_.sint(pf::annotation::int_value, a.i);
        break;
      case attr_type::unsigned_integer:
        ev_.uint(pf::annotation::uint_value, a.u);
        break;
      case attr_type::floating:
        ev_.floating(pf::annotation::double_value, a.f);
        break;
      case attr_type::boolean:
        ev_.boolean(pf::annotation::bool_value, a.b);
        break;
      case attr_type::string:
        string_value(t_.strings.view(a.s), true);
        break;
      case attr_type::verbatim:  // as a JSON reader kept it
        ev_.bytes(pf::annotation::legacy_json_value, t_.strings.view(a.s));
        break;
      case attr_type::int_list:
        for (const std::int64_t x : t_.int_list(a)) {
          ev_.begin(pf::annotation::array_values);
          ev_.sint(pf::annotation::int_value, x);
          ev_.end();
        }
        break;
      case attr_type::string_list: {
        const auto l = t_.string_list(a);
        if (const char* sep = detail::joined_list_separator(key); sep != nullptr) {
          std::string joined;
          for (std::size_t k = 0; k < l.size(); ++k) {
            if (k) joined += sep;
            joined += t_.strings.view(l[k]);
          }
          string_value(joined, false);
        } else {
          for (const name_id s : l) {
            ev_.begin(pf::annotation::array_values);
            string_value(t_.strings.view(s), true);
            ev_.end();
          }
        }
        break;
      }
    }
    ev_.end();
  }

  // ---- flows -----------------------------------------------------------------------------------
  struct event_flow {
    event_index event;
    std::uint64_t id;
    bool terminating;
  };
  void collect_flows() {
    for (const flow_link& l : t_.links)
      if (l.kind == flow_kind::fwd_bwd && l.from < t_.size() && l.to < t_.size()) {
        flows_.push_back({l.from, l.id | pf::fwd_bwd_bit, false});
        flows_.push_back({l.to, l.id | pf::fwd_bwd_bit, true});
      }
    for (std::size_t i = 0; i < t_.size(); ++i)
      if (const auto* d = t_.events[i].template get_if<event_kind::device_activity>())
        if (d->flow_type == flow_kind::async_cpu_gpu && d->flow_id != 0)
          flows_.push_back({static_cast<event_index>(i),
                            d->flow_id & ~(pf::fwd_bwd_bit | pf::drawn_bit), !d->flow_start});
    std::uint64_t drawn = 0;
    for (const export_flow& f : v_.flows) {
      if (f.from >= t_.size() || f.to >= t_.size()) continue;
      ++drawn;
      flows_.push_back({f.from, drawn | pf::drawn_bit, false});
      flows_.push_back({f.to, drawn | pf::drawn_bit, true});
    }
    std::stable_sort(flows_.begin(), flows_.end(),
                     [](const event_flow& a, const event_flow& b) { return a.event < b.event; });
  }
  void write_event_flows(event_index i) {
    auto it = std::lower_bound(flows_.begin(), flows_.end(), i,
                               [](const event_flow& f, event_index e) { return f.event < e; });
    for (auto k = it; k != flows_.end() && k->event == i; ++k)
      if (!k->terminating) ev_.fixed64(pf::event::flow_ids, k->id);
    for (auto k = it; k != flows_.end() && k->event == i; ++k)
      if (k->terminating) ev_.fixed64(pf::event::terminating_flow_ids, k->id);
  }

  // ---- counters --------------------------------------------------------------------------------
  void write_counters() {
    if (v_.counters.empty()) return;
    start_sequence(counters_sequence);
    std::vector<std::uint64_t> uuids;
    for (const counter_series& c : v_.counters) {
      const auto pid = static_cast<std::uint64_t>(c.process);
      auto [p, fresh] = processes_.try_emplace(pid, 0);
      if (fresh) {
        p->second = next_uuid_++;
        begin_packet(counters_sequence);
        out_.begin(pf::packet::track_descriptor);
        out_.uint(pf::track::uuid, p->second);
        out_.begin(pf::track::process);
        out_.uint(pf::process::pid, pid);
        out_.end();
        out_.end();
        end_packet();
      }
      uuids.push_back(next_uuid_++);
      begin_packet(counters_sequence);
      out_.begin(pf::packet::track_descriptor);
      out_.uint(pf::track::uuid, uuids.back());
      out_.uint(pf::track::parent_uuid, p->second);
      out_.bytes(pf::track::name, c.track);
      out_.bytes(pf::track::description, c.value_name);
      out_.begin(pf::track::counter);
      out_.end();
      out_.end();
      end_packet();
    }
    // Every series' points in one time order (a sequence's times only move forward).
    std::vector<std::pair<std::uint32_t, std::uint32_t>> points;  // (series, point)
    for (std::size_t s = 0; s < v_.counters.size(); ++s)
      for (std::size_t k = 0; k < v_.counters[s].points.size(); ++k)
        points.emplace_back(static_cast<std::uint32_t>(s), static_cast<std::uint32_t>(k));
    std::stable_sort(points.begin(), points.end(), [this](const auto& a, const auto& b) {
      return v_.counters[a.first].points[a.second].ts < v_.counters[b.first].points[b.second].ts;
    });
    for (const auto& [s, k] : points) {
      const counter_series& c = v_.counters[s];
      const counter_point& p = c.points[k];
      begin_timed_packet(counters_sequence, p.ts);
      out_.begin(pf::packet::track_event);
      out_.uint(pf::event::type, pf::event::counter);
      out_.uint(pf::event::track_uuid, uuids[s]);
      if (c.counts)
        out_.sint(pf::event::counter_value, static_cast<std::int64_t>(p.value));
      else
        out_.floating(pf::event::double_counter_value, p.value);
      out_.end();
      end_packet();
    }
  }

  // ---- interning -------------------------------------------------------------------------------
  /// A sequence's interning table: ids by text, and the last strings met by address.
  struct interning {
    std::unordered_map<std::string_view, std::uint64_t> ids;
    std::array<std::tuple<const char*, std::size_t, std::uint64_t>, 256> recent{};
  };
  /// The iid of a string made here rather than held by the table: found by its text; a new
  /// one is copied and kept for the writer's life.
  std::uint64_t intern_text(interning& table, pf::num field, std::string_view s) {
    if (const auto it = table.ids.find(s); it != table.ids.end()) return it->second;
    return intern(table, field, made_.emplace_back(s));
  }
  /// The iid of `s` in one of the sequence's interning tables; a string met for the first time
  /// is added to the packet's interned data.
  std::uint64_t intern(interning& table, pf::num field, std::string_view s) {
    // The strings come from the table and from literals: a string met at the same place again
    // is found by its address, without hashing its text.
    auto& [data, size, id] =
        table.recent[((reinterpret_cast<std::uintptr_t>(s.data()) >> 3) ^ s.size()) &
                     (table.recent.size() - 1)];
    if (data == s.data() && size == s.size() && data != nullptr) return id;
    auto [it, fresh] = table.ids.try_emplace(s, table.ids.size() + 1);
    if (fresh) {
      interned_.begin(field);
      interned_.uint(pf::interned::iid, it->second);
      interned_.bytes(pf::interned::name, s);
      interned_.end();
    }
    data = s.data();
    size = s.size();
    id = it->second;
    return id;
  }

  const view_type& v_;
  const Table& t_;
  sink sink_;
  pb::encoder out_, ev_, interned_;
  scratch_vector<std::uint32_t> order_;
  std::int64_t last_ts_ = 0, last_counter_ts_ = 0;
  std::uint64_t next_uuid_ = 1;
  std::map<std::uint64_t, std::uint64_t> processes_;  // pid -> its track
  std::map<std::pair<std::uint64_t, std::uint64_t>, thread_track> threads_;
  thread_track* last_track_ = nullptr;
  std::pair<std::uint64_t, std::uint64_t> last_key_{};
  std::vector<lane> lanes_;
  std::priority_queue<open_slice, std::vector<open_slice>, std::greater<>> open_;
  std::vector<event_flow> flows_;
  interning categories_, names_, annotation_names_, string_values_;
  std::string text_;              ///< the dims text being made
  std::deque<std::string> made_;  ///< the texts made here and interned (stable addresses)
};

}  // namespace detail

/// Writes `v` as a Perfetto trace to `out` (see the header comment), a megabyte at a time.
template <class Schema>
void write_perfetto_trace(const basic_export_view<Schema>& v,
                          const std::function<void(std::string_view)>& out) {
  detail::perfetto_writer<basic_event_table<Schema>>(v, out).write();
}

/// The Perfetto trace of `t` as bytes.
template <class Schema>
std::string perfetto_trace_string(const basic_event_table<Schema>& t) {
  std::string s;
  write_perfetto_trace(basic_export_view<Schema>{t}, [&s](std::string_view b) { s += b; });
  return s;
}
template <class Schema>
std::string perfetto_trace_string(const basic_export_view<Schema>& v) {
  std::string s;
  write_perfetto_trace(v, [&s](std::string_view b) { s += b; });
  return s;
}

/// Writes the Perfetto trace of `v` to `path` (gzip when it ends in ".gz"), through a temporary
/// file renamed into place.
template <class Schema>
void write_perfetto_trace_file(const basic_export_view<Schema>& v, const std::string& path) {
  trace_file_sink file(path);
  write_perfetto_trace(v, file.as_sink());
  file.commit();
}
template <class Schema>
void write_perfetto_trace_file(const basic_event_table<Schema>& t, const std::string& path) {
  write_perfetto_trace_file(basic_export_view<Schema>{t}, path);
}

TRACEMODEL_END_NAMESPACE
