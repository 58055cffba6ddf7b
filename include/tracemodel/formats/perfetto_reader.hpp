// tracemodel/formats — the Perfetto reader: TrackEvent traces (`perfetto.protos.Trace`, as
// Perfetto's SDK, Kineto and tracemodel's own writer write them) into the same event table the
// Chrome-trace reader builds, so that every analysis and command works on `.pftrace` files.
//
//   tracemodel::event_table t = tracemodel::read_perfetto_trace_file("trace.pftrace");
//   std::vector<tracemodel::counter_series> counters;
//   t = tracemodel::read_perfetto_trace_file("trace.pftrace", {}, &counters);
//
// Packets are decoded into the records the JSON reader's parsers produce
// (chrome_trace/records.hpp) and built by the same table builder. A first pass reads the track
// descriptors, clock snapshots and the Chrome bundle's metadata (perfetto/tracks.hpp); the
// second decodes the packets of each sequence with its incremental state: slices, instants,
// flows, counters, debug annotations (perfetto/annotations.hpp), legacy JSON events. What maps
// onto what, rule by rule, and what is skipped and counted: docs/perfetto.md. Bad input is an
// `input_error` whose offset is the byte of the problem (a field cut short or running past its
// message, a corrupt varint, a file that is not a trace).
#pragma once

#include <algorithm>
#include <array>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <deque>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tracemodel/config.hpp"
#include "tracemodel/formats/chrome_trace/parse.hpp"
#include "tracemodel/formats/chrome_trace/table_builder.hpp"
#include "tracemodel/formats/export_view.hpp"
#include "tracemodel/formats/json_output.hpp"
#include "tracemodel/formats/perfetto/annotations.hpp"
#include "tracemodel/formats/perfetto/state.hpp"
#include "tracemodel/formats/perfetto/tracks.hpp"
#include "tracemodel/formats/perfetto_fields.hpp"
#include "tracemodel/formats/protobuf.hpp"
#include "tracemodel/formats/trace_text.hpp"
#include "tracemodel/model/table.hpp"
#include "tracemodel/threads.hpp"

#if TRACEMODEL_READER_DEFINITIONS
#include "tracemodel/formats/chrome_trace/parser.hpp"
#endif

TRACEMODEL_BEGIN_NAMESPACE

/// Whether `bytes` (a file's first bytes, decompressed: 4 KiB are enough) look like a Perfetto
/// trace rather than JSON. A Trace starts with a packet (field 1, length-delimited: byte 0x0a,
/// which is also a line feed a JSON file may start with): a first packet within `bytes` must
/// decode as protobuf fields and be followed by another packet or the end; a longer one has a
/// length of two bytes or more, whose first byte is no character JSON starts with.
inline bool looks_like_perfetto(std::string_view bytes) noexcept {
  if (bytes.size() < 2 || static_cast<unsigned char>(bytes[0]) != 0x0a) return false;
  std::uint64_t len = 0;
  std::size_t k = 1;
  for (int shift = 0;; shift += 7, ++k) {
    if (k >= bytes.size() || shift > 63) return k >= bytes.size();  // cut within the length
    const auto b = static_cast<unsigned char>(bytes[k]);
    len |= static_cast<std::uint64_t>(b & 0x7f) << shift;
    if ((b & 0x80) == 0) break;
  }
  ++k;
  if (len > bytes.size() - k) return (static_cast<unsigned char>(bytes[1]) & 0x80) != 0;
  try {
    detail::pb::decoder d(bytes.substr(k, static_cast<std::size_t>(len)), k);
    detail::pb::field f;
    while (d.next(f)) {
    }
  } catch (const input_error&) {
    return false;
  }
  const std::size_t next = k + static_cast<std::size_t>(len);
  return next == bytes.size() || static_cast<unsigned char>(bytes[next]) == 0x0a;
}

namespace detail::perfetto {

/// Reads a Perfetto trace's bytes into a record sink (the table builder).
class decoder : track_index {
 public:
  decoder(std::string_view bytes, handoff& sink, anomaly_counts& anomalies,
          std::vector<counter_series>* counters, const read_options& opt)
      : track_index(bytes, anomalies), sink_(sink), counters_(counters), opt_(opt) {}

  void run() {
    if (bytes_.empty()) throw input_error("perfetto: empty trace", 0);
    scan();
    resolve_tracks();
    sink_.post([base = base_, at = base_at_, has = has_base_](chrome_trace::record_sink& s) {
      if (has) s.base_time(base, at);
      s.events_begin();
    });
    if (!marked_) name_records();  // (a trace tracemodel wrote carries its records as JSON)
    pb::decoder d(bytes_, 0);
    pb::field f;
    while (d.next(f)) {
      if (f.number != pf::trace_packet || f.type != pb::wire::bytes) continue;
      packet(f);
      if (b_->b.events.size() >= batch_records) {
        flush();
        if (!expected_ && f.at > 0) {  // room for the rest, as the JSON reader reserves it
          expected_ = true;
          const double scale =
              static_cast<double>(bytes_.size()) / static_cast<double>(d.offset()) - 1;
          sink_.post([scale](chrome_trace::record_sink& s) { s.expect(scale); });
        }
      }
    }
    flush();
  }

  /// Whether the trace carries tracemodel's mark (its flows say their kind in their ids).
  [[nodiscard]] bool marked() const noexcept { return marked_; }

 private:
  static constexpr std::size_t batch_records = 4096;

  /// The names the descriptors give, as the metadata records a Chrome trace has for them.
  void name_records() {
    std::vector<std::uint64_t> uuids;
    for (const auto& [uuid, t] : tracks_)
      if (!t.process_name.empty() || !t.thread_name.empty()) uuids.push_back(uuid);
    std::sort(uuids.begin(), uuids.end());
    for (const std::uint64_t uuid : uuids) {
      const track_info& t = tracks_.find(uuid)->second;
      const bool thread = t.has_thread && !t.thread_name.empty();
      fields& m = b_->b.events.emplace_back();
      m.ph = "M";
      m.name = thread ? "thread_name" : "process_name";
      m.pid = number(t.pid);
      m.tid = number(thread ? t.tid : 0);
      std::string json;
      json_output j = json_output::to_string(json);
      j.raw("{\"name\":").string(thread ? t.thread_name : t.process_name).ch('}');
      j.flush();
      m.raw_args = keep(std::move(json));
    }
  }

  // ---- pass two: packets ------------------------------------------------------------------
  struct packet_fields {
    std::uint32_t seq = 0, flags = 0, clock = 0;
    bool has_ts = false, has_clock = false, cleared = false;
    std::uint64_t ts = 0;
    std::string_view event, interned, defaults, snapshot, thread, bundle;
  };

  void packet(const pb::field& pf_) {
    pb::decoder d = sub(pf_.bytes);
    pb::field f;
    packet_fields p;
    bool other = false;
    while (d.next(f)) {
      switch (f.number) {
        case pf::packet::trusted_packet_sequence_id:
          p.seq = static_cast<std::uint32_t>(f.value);
          break;
        case pf::packet::sequence_flags:
          p.flags = static_cast<std::uint32_t>(f.value);
          break;
        case pf::packet::incremental_state_cleared:
          p.cleared = f.value != 0;
          break;
        case pf::packet::timestamp:
          p.has_ts = true;
          p.ts = f.value;
          break;
        case pf::packet::timestamp_clock_id:
          p.has_clock = true;
          p.clock = static_cast<std::uint32_t>(f.value);
          break;
        case pf::packet::track_event:
          p.event = f.bytes;
          break;
        case pf::packet::interned_data:
          p.interned = f.bytes;
          break;
        case pf::packet::trace_packet_defaults:
          p.defaults = f.bytes;
          break;
        case pf::packet::clock_snapshot:
          p.snapshot = f.bytes;
          break;
        case pf::packet::thread_descriptor:
          p.thread = f.bytes;
          break;
        case pf::packet::chrome_events:
          p.bundle = f.bytes;
          break;
        case pf::packet::track_descriptor:  // read in the first pass
        case pf::packet::process_descriptor:
        case pf::packet::first_packet_on_sequence:
        case pf::packet::previous_packet_dropped:
        case 79:  // trusted_pid
        case 89:  // trace_uuid
          break;
        default:
          if (f.type == pb::wire::bytes) other = true;  // a payload the reader does not model
          break;
      }
    }
    if (last_seq_ == nullptr || last_seq_id_ != p.seq) {
      last_seq_ = &seqs_[p.seq];  // (the map's nodes stay where they are)
      last_seq_id_ = p.seq;
    }
    sequence_state& s = *last_seq_;
    if ((p.flags & pf::packet::seq_cleared) != 0 || p.cleared) {
      const std::uint32_t clock = s.clock;
      const std::uint64_t track = s.default_track;
      auto extra = std::move(s.extra_counter_tracks);
      auto extra_d = std::move(s.extra_double_counter_tracks);
      s = sequence_state{};
      s.valid = true;
      s.clock = clock;  // defaults stay until a packet sets them again
      s.default_track = track;
      s.extra_counter_tracks = std::move(extra);
      s.extra_double_counter_tracks = std::move(extra_d);
    }
    if ((p.flags & pf::packet::seq_needs_state) != 0 && !s.valid) {
      anomalies_.add(anomaly::skipped_packet);  // its state was lost: Perfetto drops it too
      return;
    }
    if (!p.defaults.empty()) packet_defaults(s, p.defaults);
    if (!p.snapshot.empty()) reset_incremental_clocks(s, p.snapshot, p.seq);
    if (!p.interned.empty()) interned_data(s, p.interned);
    if (!p.thread.empty()) legacy_thread(s, p.thread);
    if (!p.bundle.empty()) bundle_events(p.bundle);
    std::int64_t ts = 0;
    bool has_ts = false;
    if (p.has_ts) {  // (advances the sequence's incremental clock, whatever the packet)
      const std::uint32_t clock = p.has_clock ? p.clock : s.clock;
      const std::uint64_t key = clock == 0 ? pf::clock::boottime : clock_key(clock, p.seq);
      std::uint64_t v = p.ts;
      if (auto inc = s.incremental_clocks.find(key); inc != s.incremental_clocks.end()) {
        inc->second += p.ts;
        v = inc->second;
      }
      if (!p.event.empty()) ts = to_trace_time(key, v, at(pf_.bytes));
      has_ts = true;
    }
    if (!p.event.empty()) {
      track_event(s, p.event, ts, has_ts, at(pf_.bytes));
    } else if (other && p.interned.empty() && p.defaults.empty() && p.snapshot.empty() &&
               p.thread.empty() && p.bundle.empty()) {
      anomalies_.add(anomaly::skipped_packet);
    }
  }

  // ---- the Chrome bundle: metadata and legacy JSON -----------------------------------------
  void bundle_events(std::string_view bytes) {
    pb::decoder d = sub(bytes);
    pb::field f;
    while (d.next(f)) {
      if (f.type != pb::wire::bytes) continue;
      if (f.number == pf::chrome::metadata) {
        pb::decoder m = sub(f.bytes);
        pb::field g;
        std::string_view name;
        std::string value;
        bool has_value = false;
        while (m.next(g)) {
          switch (g.number) {
            case pf::chrome::name:
              name = g.bytes;
              break;
            case pf::chrome::string_value: {
              json_output j = json_output::to_string(value);
              j.string(counted_utf8(g.bytes, anomalies_));
              j.flush();
              has_value = true;
              break;
            }
            case pf::chrome::bool_value:
              value = g.value ? "true" : "false";
              has_value = true;
              break;
            case pf::chrome::int_value:
              value = std::to_string(g.as_int());
              has_value = true;
              break;
            case pf::chrome::json_value: {  // (one that is not JSON: a string, counted)
              bool repaired = false;
              value = json_value_or_string(g.bytes, repaired);
              if (repaired) anomalies_.add(anomaly::bad_value);
              has_value = true;
              break;
            }
            default:
              break;
          }
        }
        if (name == pf::writer_mark || name == pf::base_time_key || !has_value) continue;
        sink_.post([key = to_utf8(counted_utf8(name, anomalies_)),
                    value](chrome_trace::record_sink& s) { s.metadata(key, value); });
      } else if (f.number == pf::chrome::legacy_json_trace) {
        pb::decoder m = sub(f.bytes);
        pb::field g;
        std::uint64_t type = 0;
        std::string_view data;
        while (m.next(g)) {
          if (g.number == pf::chrome::json_type) type = g.value;
          if (g.number == pf::chrome::json_data && g.type == pb::wire::bytes) data = g.bytes;
        }
        if (type == 0 && !data.empty()) legacy_json(data, f.at);
      }
    }
  }

  /// Legacy JSON events (a comma-separated list of Chrome trace events), through the JSON
  /// reader's parser into the same builder.
  void legacy_json(std::string_view data, std::size_t at_) {
    flush();
    std::string text = "{\"traceEvents\":[";
    const std::size_t prefix = text.size();
    text += data;
    while (!text.empty() && (text.back() == ',' || is_json_space(text.back()))) text.pop_back();
    text += "]}";
    const std::size_t len = text.size();
    text.resize(len + text_padding, ' ');
    read_options o = opt_;
    o.threads = 1;
    sink_.post([text = std::move(text), len, prefix, at_, o](chrome_trace::record_sink& s) mutable {
      forward fw(s);
      try {
        chrome_trace::parse_text(std::span<char>(text.data(), text.size()), len, o, nullptr, fw);
      } catch (const input_error& e) {
        const std::size_t off = e.offset() == input_error::npos || e.offset() < prefix
                                    ? at_
                                    : at_ + (e.offset() - prefix);
        throw input_error(std::string("perfetto: legacy JSON events: ") + e.what(), off);
      }
    });
  }
  /// Hands a parse's records to the builder (its metadata and times are the trace's own).
  class forward final : public chrome_trace::record_sink {
   public:
    explicit forward(chrome_trace::record_sink& to) : to_(to) {}
    void base_time(std::int64_t, std::size_t) override {}
    void metadata(std::string_view, std::string_view) override {}
    void events_begin() override {}
    void build(const chrome_trace::batch_view& b) override { to_.build(b); }
    void expect(double) override {}

   private:
    chrome_trace::record_sink& to_;
  };

  // ---- track events -------------------------------------------------------------------------
  struct flow_ref {
    std::uint64_t id;
    bool terminating;
  };

  void track_event(sequence_state& s, std::string_view bytes, std::int64_t ts, bool has_ts,
                   std::size_t at_) {
    pb::decoder d = sub(bytes);
    pb::field f;
    std::uint64_t type = 0, uuid = 0, name_iid = 0;
    bool has_uuid = false;
    std::string_view name;
    cats_.clear();
    flows_here_.clear();
    std::string_view legacy;
    const std::uint32_t args0 = static_cast<std::uint32_t>(b_->b.args.size());
    fields rec;
    rec.at = at_;
    bool has_counter = false;
    double counter = 0;
    bool counter_int = true;
    std::vector<std::uint64_t> extra_tracks, extra_dtracks;
    std::vector<std::int64_t> extra_values;
    std::vector<double> extra_dvalues;
    bool has_extra_tracks = false, has_extra_dtracks = false;
    std::int64_t thread_time = 0, instructions = 0;
    bool has_thread_time = false, has_instructions = false;
    std::uint64_t correlation = 0;
    bool has_correlation = false, annotated_correlation = false;
    while (d.next(f)) {
      switch (f.number) {
        case pf::event::type:
          type = f.value;
          break;
        case pf::event::track_uuid:
          uuid = f.value;
          has_uuid = true;
          break;
        case pf::event::name_iid:
          name_iid = f.value;
          break;
        case pf::event::name:
          if (f.type == pb::wire::bytes) name = utf8_text(f.bytes, b_->kept, anomalies_);
          break;
        case pf::event::category_iids:
          pb::for_each_varint(f, f.at,
                              [&](std::uint64_t v) { cats_.push_back(interned(s.categories, v)); });
          break;
        case pf::event::categories:
          if (f.type == pb::wire::bytes) cats_.push_back(utf8_text(f.bytes, b_->kept, anomalies_));
          break;
        case pf::event::debug_annotations:
          if (f.type == pb::wire::bytes &&
              annotation_reader(bytes_, *b_, anomalies_, cache_).annotation(s, f.bytes, rec))
            annotated_correlation = true;
          break;
        case pf::event::flow_ids:
        case pf::event::flow_ids_old:
          for_each_id(f, [&](std::uint64_t v) { flows_here_.push_back({v, false}); });
          break;
        case pf::event::terminating_flow_ids:
        case pf::event::terminating_flow_ids_old:
          for_each_id(f, [&](std::uint64_t v) { flows_here_.push_back({v, true}); });
          break;
        case pf::event::legacy_event:
          legacy = f.bytes;
          break;
        case pf::event::counter_value:
          has_counter = true;
          counter = static_cast<double>(f.as_int());
          break;
        case pf::event::double_counter_value:
          has_counter = true;
          counter_int = false;
          counter = f.as_double();
          break;
        case pf::event::extra_counter_track_uuids:
          has_extra_tracks = true;
          pb::for_each_varint(f, f.at, [&](std::uint64_t v) { extra_tracks.push_back(v); });
          break;
        case pf::event::extra_counter_values:
          pb::for_each_varint(f, f.at, [&](std::uint64_t v) {
            extra_values.push_back(static_cast<std::int64_t>(v));
          });
          break;
        case pf::event::extra_double_counter_track_uuids:
          has_extra_dtracks = true;
          pb::for_each_varint(f, f.at, [&](std::uint64_t v) { extra_dtracks.push_back(v); });
          break;
        case pf::event::extra_double_counter_values:
          pb::for_each_fixed64(f, f.at, [&](std::uint64_t v) {
            double x = 0;
            std::memcpy(&x, &v, 8);
            extra_dvalues.push_back(x);
          });
          break;
        case pf::event::timestamp_absolute_us:
          ts = f.as_int() * 1000;
          has_ts = true;
          s.ref_us = f.as_int();
          break;
        case pf::event::timestamp_delta_us:
          s.ref_us += f.as_int();
          ts = s.ref_us * 1000;
          has_ts = true;
          break;
        case pf::event::thread_time_absolute_us:
          s.ref_thread_time_us = f.as_int();
          thread_time = s.ref_thread_time_us * 1000;
          has_thread_time = true;
          break;
        case pf::event::thread_time_delta_us:
          s.ref_thread_time_us += f.as_int();
          thread_time = s.ref_thread_time_us * 1000;
          has_thread_time = true;
          break;
        case pf::event::thread_instruction_count_absolute:
          s.ref_instructions = f.as_int();
          instructions = s.ref_instructions;
          has_instructions = true;
          break;
        case pf::event::thread_instruction_count_delta:
          s.ref_instructions += f.as_int();
          instructions = s.ref_instructions;
          has_instructions = true;
          break;
        case pf::event::correlation_id:
          has_correlation = true;
          correlation = f.value;
          break;
        default:
          break;
      }
    }
    // The legacy event: phase, duration, ids, scope, overrides.
    char phase = 0;
    std::int64_t duration_us = -1;
    std::uint64_t bind_id = 0;
    std::uint64_t flow_direction = 0;
    std::uint64_t scope = 0;
    bool has_pid_override = false, has_tid_override = false;
    std::int64_t pid_override = 0, tid_override = 0;
    if (!legacy.empty()) {
      pb::decoder l = sub(legacy);
      pb::field g;
      while (l.next(g)) {
        switch (g.number) {
          case pf::legacy::name_iid:
            name_iid = g.value;
            break;
          case pf::legacy::phase:
            phase = static_cast<char>(g.value);
            break;
          case pf::legacy::duration_us:
            duration_us = g.as_int();
            break;
          case pf::legacy::bind_id:
            bind_id = g.value;
            break;
          case pf::legacy::flow_direction:
            flow_direction = g.value;
            break;
          case pf::legacy::instant_event_scope:
            scope = g.value;
            break;
          case pf::legacy::pid_override:
            has_pid_override = true;
            pid_override = static_cast<std::int32_t>(g.value);
            break;
          case pf::legacy::tid_override:
            has_tid_override = true;
            tid_override = static_cast<std::int32_t>(g.value);
            break;
          default:
            break;
        }
      }
    }
    if (name.empty() && name_iid != 0) name = interned(s.names, name_iid);
    if (!has_ts) {
      b_->b.args.resize(args0);
      anomalies_.add(anomaly::skipped_packet);  // an event with no time at all
      return;
    }

    // Its track and thread.
    if (!has_uuid) uuid = s.default_track;
    const track_info* track = track_of(uuid);
    if (track != nullptr) {
      rec.pid = track->rpid;
      rec.tid = track->rtid;
    } else if (s.has_thread) {
      rec.pid = number(s.pid);
      rec.tid = number(s.tid);
    } else {
      rec.pid = number(0);
      rec.tid = number(0);
    }
    if (has_pid_override) rec.pid = number(pid_override);
    if (has_tid_override) rec.tid = number(tid_override);

    // Counter samples: on the event's own counter track, and its extra values.
    const std::uint64_t track_key =
        uuid != 0 ? uuid : (std::uint64_t{1} << 63) | static_cast<std::uint64_t>(s.tid);
    if (type == pf::event::counter) {
      b_->b.args.resize(args0);
      if (has_counter) counter_sample(s, uuid, track, ts, counter, counter_int);
      return;
    }
    {
      const auto& tracks = has_extra_tracks ? extra_tracks : s.extra_counter_tracks;
      for (std::size_t k = 0; k < extra_values.size() && k < tracks.size(); ++k)
        counter_sample(s, tracks[k], track_of(tracks[k]), ts, static_cast<double>(extra_values[k]),
                       true);
      const auto& dtracks = has_extra_dtracks ? extra_dtracks : s.extra_double_counter_tracks;
      for (std::size_t k = 0; k < extra_dvalues.size() && k < dtracks.size(); ++k)
        counter_sample(s, dtracks[k], track_of(dtracks[k]), ts, extra_dvalues[k], false);
      if (has_thread_time) thread_counter("thread_time", rec, ts, static_cast<double>(thread_time));
      if (has_instructions)
        thread_counter("thread_instruction_count", rec, ts, static_cast<double>(instructions));
    }

    rec.name = name;
    rec.cat = category_text();
    rec.has_ts = true;
    rec.ts = ts - base_;
    if (has_correlation && !annotated_correlation) {
      raw_arg& a = b_->b.args.emplace_back();
      a.key = "correlation";
      a.kind = correlation <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())
                   ? raw_arg::type::integer
                   : raw_arg::type::unsigned_integer;
      a.i = static_cast<std::int64_t>(correlation);
      a.u = correlation;
      a.offset = at_;
    }
    rec.args_first = args0;
    rec.args_count = static_cast<std::uint32_t>(b_->b.args.size() - args0);

    std::vector<open_slice>& stack = track != nullptr ? track->open : stacks_[track_key];
    switch (type) {
      case pf::event::slice_begin:
        begin_slice(rec, stack);
        break;
      case pf::event::slice_end:
        b_->b.args.resize(args0);  // an end's args are its slice's in Perfetto; none kept here
        if (!end_slice(rec, stack)) return;
        break;
      case pf::event::instant:
        rec.ph = "i";
        rec.scope = scope_text(scope);
        break;
      default:  // unspecified: the legacy phase says
        if (phase == 'E') {
          b_->b.args.resize(args0);
          if (!end_slice(rec, stack)) return;
        } else if (!legacy_phase(rec, phase, duration_us, scope, stack)) {
          b_->b.args.resize(args0);
          anomalies_.add(anomaly::unsupported_record);
          return;
        }
        break;
    }
    b_->b.events.push_back(rec);
    // Its flows, at its start on its thread.
    if (bind_id != 0 &&
        (flow_direction == pf::legacy::flow_out || flow_direction == pf::legacy::flow_inout))
      flows_here_.push_back({bind_id, false});
    if (bind_id != 0 && flow_direction == pf::legacy::flow_in)
      flows_here_.push_back({bind_id, true});
    if (rec.ph[0] != 'E')
      for (const flow_ref& fr : flows_here_) flow(rec, fr);
  }

  /// A slice's begin: numbered, and on its track's stack.
  void begin_slice(fields& rec, std::vector<open_slice>& stack) {
    rec.ph = "B";
    rec.slice = next_slice_++;
    stack.push_back({rec.slice, batch_number_, static_cast<std::uint32_t>(b_->b.events.size())});
  }
  /// A slice's end: the last open slice of its track. When that slice's record is still in the
  /// batch, it becomes a complete record and there is no end record (false); otherwise an end
  /// record of its number (true).
  bool end_slice(fields& rec, std::vector<open_slice>& stack) {
    rec.ph = "E";
    rec.args_count = 0;
    if (stack.empty()) {
      rec.slice = chrome_trace::no_slice;
      return true;
    }
    const open_slice o = stack.back();
    stack.pop_back();
    if (o.batch == batch_number_) {
      fields& begin = b_->b.events[o.index];
      begin.ph = "X";
      begin.has_dur = true;
      begin.dur = rec.ts - begin.ts;
      begin.slice = 0;
      return false;
    }
    rec.slice = o.slice;
    return true;
  }

  bool legacy_phase(fields& rec, char phase, std::int64_t duration_us, std::uint64_t scope,
                    std::vector<open_slice>& stack) {
    switch (phase) {
      case 'X':
        rec.ph = "X";
        rec.has_dur = true;
        rec.dur = duration_us < 0 ? 0 : duration_us * 1000;
        return true;
      case 'B':
        begin_slice(rec, stack);
        return true;
      case 'i':
      case 'I':
      case 'n':
        rec.ph = "i";
        rec.scope = scope_text(scope);
        return true;
      default:
        return false;  // async, counters and other legacy phases: not modelled
    }
  }

  static std::string_view scope_text(std::uint64_t scope) {  // an instant's
    return scope == pf::legacy::scope_global ? "g" : scope == pf::legacy::scope_process ? "p" : "t";
  }
  std::string_view category_text() {
    if (cats_.empty()) return {};
    if (cats_.size() == 1) return cats_.front();
    std::string joined;
    for (std::size_t k = 0; k < cats_.size(); ++k) {
      if (k) joined += ',';
      joined += cats_[k];
    }
    return keep(std::move(joined));
  }

  /// A flow record for `fr` at the event `rec` (its start, its thread).
  void flow(const fields& rec, const flow_ref& fr) {
    fields& f = b_->b.events.emplace_back();  // (`rec` is track_event's own: not moved by this)
    f.at = rec.at;
    f.pid = rec.pid;
    f.tid = rec.tid;
    f.has_ts = true;
    f.ts = rec.ts;
    f.has_id = true;
    std::uint64_t id = fr.id;
    std::string_view cat;
    auto started = flow_kinds_.find(fr.id);
    if (marked_) {
      if ((fr.id & pf::drawn_bit) != 0) {
        cat = "tracemodel_drawn";
      } else if ((fr.id & pf::fwd_bwd_bit) != 0) {
        cat = "fwdbwd";
        id = fr.id & ~pf::fwd_bwd_bit;
      } else {
        cat = "ac2g";
      }
    } else if (started != flow_kinds_.end()) {
      cat = started->second;
    } else {
      // From an op (or an event of no category): a forward/backward flow; else host-to-device.
      const activity_type act =
          rec.cat.empty() ? activity_type::cpu_op : activity_type_from(rec.cat);
      cat =
          act == activity_type::cpu_op || act == activity_type::user_annotation ? "fwdbwd" : "ac2g";
    }
    f.id = id;
    f.cat = cat;
    f.name = cat;
    if (fr.terminating || started != flow_kinds_.end()) {
      f.ph = "f";
      f.bp = "e";
      if (started != flow_kinds_.end()) flow_kinds_.erase(started);
    } else {
      f.ph = "s";
      flow_kinds_.emplace(fr.id, cat);
    }
  }

  // ---- counters -----------------------------------------------------------------------------
  void counter_sample(sequence_state& s, std::uint64_t uuid, const track_info* track,
                      std::int64_t ts, double value, bool whole) {
    anomalies_.add(anomaly::unsupported_record);
    if (counters_ == nullptr) return;
    if (track != nullptr && track->multiplier != 1) value *= static_cast<double>(track->multiplier);
    if (track != nullptr && track->incremental) {
      double& total = s.counter_totals[uuid];
      total += value;
      value = total;
    }
    auto [it, fresh] = series_.try_emplace(uuid, counters_->size());
    if (fresh) {
      counter_series c;
      if (track != nullptr) {
        c.track = std::string(track->name.empty() ? std::string_view("counter") : track->name);
        c.process = process_of(*track);
        c.value_name = std::string(!track->description.empty() ? track->description
                                   : !track->unit_name.empty() ? track->unit_name
                                                               : std::string_view("value"));
      }
      c.counts = true;
      counters_->push_back(std::move(c));
    }
    counter_series& c = (*counters_)[it->second];
    c.counts = c.counts && whole;
    c.points.push_back({ts, value});
  }
  void thread_counter(std::string_view what, const fields& rec, std::int64_t ts, double v) {
    anomalies_.add(anomaly::unsupported_record);
    if (counters_ == nullptr) return;
    const std::string track =
        std::string(what) + " " +
        (rec.tid.is_string ? std::string(rec.tid.text)
                           : std::to_string(static_cast<std::int64_t>(rec.tid.number)));
    auto [it, fresh] = thread_series_.try_emplace(track, counters_->size());
    if (fresh) {
      counter_series c;
      c.track = track;
      c.process = rec.pid.is_string ? 0 : static_cast<std::int64_t>(rec.pid.number);
      c.value_name = std::string(what);
      c.counts = true;
      counters_->push_back(std::move(c));
    }
    (*counters_)[it->second].points.push_back({ts, v});
  }
  // ---- batches ------------------------------------------------------------------------------
  std::string_view keep(std::string s) {
    b_->kept.push_back(std::move(s));
    return b_->kept.back();
  }
  void flush() {
    ++batch_number_;  // (records of slices still open are left as begins)
    if (!b_->b.events.empty()) {
      std::shared_ptr<batch_text> full = std::exchange(b_, sink_.fresh());
      sink_.post([full, &h = sink_](chrome_trace::record_sink& s) mutable {
        s.build(chrome_trace::view_of(full->b));
        h.recycle(std::move(full));
      });
    } else {
      b_->b.clear();
      b_->kept.clear();
    }
  }

  handoff& sink_;
  std::vector<counter_series>* counters_;
  const read_options& opt_;
  bool expected_ = false;
  std::unordered_map<std::uint32_t, sequence_state> seqs_;
  sequence_state* last_seq_ = nullptr;
  std::uint32_t last_seq_id_ = 0;
  std::unordered_map<std::uint64_t, std::vector<open_slice>> stacks_;  // open slices by track
  std::uint32_t batch_number_ = 0;                                     // the batch being filled
  std::uint32_t next_slice_ = 1;
  std::unordered_map<std::uint64_t, std::string_view> flow_kinds_;  // started flows' categories
  std::unordered_map<std::uint64_t, std::size_t> series_;           // counter track -> series
  std::unordered_map<std::string, std::size_t> thread_series_;
  std::vector<std::string_view> cats_;
  detail::perfetto::annotation_cache cache_;
  std::vector<flow_ref> flows_here_;
  std::shared_ptr<batch_text> b_ = std::make_shared<batch_text>();
};

/// Reads Perfetto bytes into `t` (which is empty): decoded on a second thread while this one
/// builds, when the read may use two and the trace has a quarter of `parallel_threshold` bytes
/// or more (a Perfetto trace holds the events of about four times its size of JSON).
template <class Schema>
void read_into(basic_event_table<Schema>& t, std::string_view bytes, const read_options& opt,
               std::vector<counter_series>* counters) {
  chrome_trace::table_builder<Schema> builder(t, bytes.size(), opt);
  builder.keep_file_order(opt.keep_file_order);
  anomaly_counts decoded;  // the decoder's own (the builder counts into the table meanwhile)
  const bool two = thread_budget(opt) > 1 && bytes.size() >= opt.parallel_threshold / 4;
  handoff h(builder, two);
  decoder d(bytes, h, decoded, counters, opt);
  worker w;
  if (two) {
    try {
      w = worker(opt, [&] {
        struct end_guard {
          handoff& h;
          ~end_guard() { h.done(); }
        } guard{h};
        try {
          d.run();
        } catch (const handoff::stopped&) {  // the builder failed: its error is the read's
        }
      });
    } catch (const std::system_error&) {  // no thread to be had: read on this one
      handoff serial(builder, false);
      decoder one(bytes, serial, decoded, counters, opt);
      one.run();
      t.anomalies += decoded;
      builder.finish();
      return;
    }
    try {
      h.consume();
    } catch (...) {
      h.stop();
      try {
        w.join();
      } catch (...) {  // the builder's error comes first
      }
      throw;
    }
    w.join();  // the decoder's error, if it had one
  } else {
    d.run();
  }
  t.anomalies += decoded;
  builder.finish();
}

}  // namespace detail::perfetto

/// Reads a Perfetto trace from its bytes. `counters`, when given, receives its counter tracks'
/// samples.
template <class Schema = default_schema>
basic_event_table<Schema> read_perfetto_trace(std::string_view bytes, const read_options& opt = {},
                                              std::vector<counter_series>* counters = nullptr) {
  basic_event_table<Schema> t;
  detail::perfetto::read_into(t, bytes, opt, counters);
  return t;
}

/// Reads a Perfetto trace file, gzip-compressed or not.
template <class Schema = default_schema>
basic_event_table<Schema> read_perfetto_trace_file(
    const std::string& path, const read_options& opt = {},
    std::vector<counter_series>* counters = nullptr) {
  const trace_text text = load_trace_text(path, opt);
  return read_perfetto_trace<Schema>(std::string_view(text.data(), text.size()), opt, counters);
}

TRACEMODEL_END_NAMESPACE
