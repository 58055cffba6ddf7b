// tracemodel/formats — the Perfetto reader: TrackEvent traces (`perfetto.protos.Trace`, as
// Perfetto's SDK, Kineto and tracemodel's own writer write them) into the same event table the
// Chrome-trace reader builds, so that every analysis and command works on `.pftrace` files.
//
//   tracemodel::event_table t = tracemodel::read_perfetto_trace_file("trace.pftrace");
//   std::vector<tracemodel::counter_series> counters;
//   t = tracemodel::read_perfetto_trace_file("trace.pftrace", {}, &counters);
//
// The reader decodes packets into the records the JSON reader's parsers produce
// (chrome_trace/records.hpp) and builds them with the same table builder: categories map onto
// kinds, args onto payload fields and attributes, flows bind the same way. What it reads
// (docs/perfetto.md says it rule by rule):
//  * packet sequences (`trusted_packet_sequence_id`) with their incremental state: interned
//    names, categories, annotation names and string values, cleared by
//    SEQ_INCREMENTAL_STATE_CLEARED; a packet that needs a state its sequence lost is skipped and
//    counted (`skipped_packet`), as Perfetto drops it;
//  * times: each packet's clock (`timestamp_clock_id`, the sequence's defaults, else BOOTTIME),
//    incremental sequence clocks, units, converted to the trace's clock (BOOTTIME, or the
//    snapshots' `primary_trace_clock`) through the `clock_snapshot`s nearest before the time;
//    TrackEvent's own microsecond times (absolute, and deltas from the thread descriptor's
//    reference) in older traces;
//  * tracks: process, thread and custom track descriptors, the sequence's default track and
//    legacy thread descriptor: a thread track's events get its pid and tid; a child track of a
//    thread its thread's; a track under a process its pid and its name as the thread (a string
//    id); any other track its root's name as the process;
//  * slices: begin/end (an end closes the last open slice of its track), legacy complete events
//    (`X`, microseconds), instants (thread, process, global scope), begins never ended
//    (unfinished ops, as from a JSON `B` without `E`);
//  * args: typed debug annotations (nested arrays and dicts as JSON, `Input Dims`/`Input type`/
//    `Input Strides`/`Concrete Inputs` as op inputs), legacy JSON values, a TrackEvent's
//    correlation id;
//  * flows: `flow_ids`/`terminating_flow_ids` of both generations and legacy `bind_id` flows:
//    from an op, a forward/backward flow; from anything else, a host-to-device one (a trace
//    tracemodel wrote says which in its ids);
//  * counters (counter tracks, incremental counters, unit multipliers, the extra counter
//    values of a TrackEvent and its thread time and instruction counts): into `counters` when
//    given, and counted as records the table does not model (`unsupported_record`), as the JSON
//    reader counts counter records;
//  * the Chrome bundle: metadata, the base time, and legacy JSON events (metadata records);
//  * anything else (ftrace, system info, ...) is skipped and counted (`skipped_packet`).
// Bad input is an `input_error` whose offset is the byte offset of the problem: a field cut
// short or running past its message, a corrupt varint, a file that is not a trace.
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

using chrome_trace::batch;
using chrome_trace::fields;
using chrome_trace::key_value;

/// A slice begun and not ended yet: its number, and where its record is while its batch is
/// being filled (an end there makes it a complete record: no end record to build).
struct open_slice {
  std::uint32_t slice, batch, index;
};

/// A track as its descriptor says, and the thread its events belong to.
struct track_info {
  std::uint64_t parent = 0;
  std::string_view name;
  std::string_view description;
  bool has_process = false, has_thread = false, is_counter = false;
  std::int64_t pid = 0, tid = 0;
  std::string_view process_name, thread_name;
  // counters
  bool incremental = false;
  std::int64_t multiplier = 1;
  std::string_view unit_name;
  // resolved
  key_value rpid, rtid;
  bool resolved = false;
  mutable std::vector<open_slice> open;  // its open slices, the last on top
};

/// One clock snapshot: simultaneous readings of clocks (id; scoped ids carry their sequence).
struct snapshot {
  std::vector<std::pair<std::uint64_t, std::uint64_t>> clocks;  // (key, timestamp ns-scaled)
};

/// A sequence's incremental state and defaults.
struct sequence_state {
  bool valid = false;  // cleared at least once (or never needs it)
  std::vector<std::string_view> names, categories, annotation_names, string_values;
  std::vector<std::uint8_t> annotation_kinds;  // by iid: what its name means (arg_kind)
  std::uint32_t clock = 0;                     // default timestamp clock (0: BOOTTIME)
  std::uint64_t default_track = 0;
  std::vector<std::uint64_t> extra_counter_tracks, extra_double_counter_tracks;
  bool has_thread = false;
  std::int64_t pid = 0, tid = 0;
  std::int64_t ref_us = 0, ref_thread_time_us = 0, ref_instructions = 0;
  std::unordered_map<std::uint64_t, std::uint64_t> incremental_clocks;  // clock -> value
  std::unordered_map<std::uint64_t, double> counter_totals;  // incremental counter tracks
};

/// A batch of records and the text made for them, handed to the builder whole.
struct batch_text {
  batch b;
  std::deque<std::string> kept;  // text made while decoding (JSON of nested annotations, ...)
};

/// Where the decoder's records go: the table builder, called on this thread, or (two threads)
/// on the reading thread while the decoder runs on another, through a short queue of jobs kept
/// in order.
class handoff {
 public:
  using job = std::function<void(chrome_trace::record_sink&)>;
  handoff(chrome_trace::record_sink& to, bool threaded) : to_(to), threaded_(threaded) {}

  /// A job for the builder (the decoder's side).
  void post(job j) {
    if (!threaded_) {
      j(to_);
      return;
    }
    std::unique_lock lock(m_);
    cv_.wait(lock, [this] { return queue_.size() < max_queued || stop_; });
    if (stop_) throw stopped{};
    queue_.push_back(std::move(j));
    cv_.notify_all();
  }
  /// Runs the jobs as they come until the decoder is done (the reading thread's side).
  void consume() {
    while (true) {
      job j;
      {
        std::unique_lock lock(m_);
        cv_.wait(lock, [this] { return !queue_.empty() || done_; });
        if (queue_.empty()) return;
        j = std::move(queue_.front());
        queue_.pop_front();
        cv_.notify_all();
      }
      j(to_);
    }
  }
  /// The decoder is done (or failed): what is queued still runs.
  void done() {
    const std::lock_guard lock(m_);
    done_ = true;
    cv_.notify_all();
  }
  /// The builder failed: the decoder stops at its next job.
  void stop() {
    const std::lock_guard lock(m_);
    stop_ = true;
    cv_.notify_all();
  }
  struct stopped {};

  /// A batch to fill: one the builder is done with (its memory warm), or a new one.
  std::shared_ptr<batch_text> fresh() {
    {
      const std::lock_guard lock(m_);
      if (!free_.empty()) {
        std::shared_ptr<batch_text> b = std::move(free_.back());
        free_.pop_back();
        return b;
      }
    }
    return std::make_shared<batch_text>();
  }
  /// Gives a built batch back for the decoder to fill again.
  void recycle(std::shared_ptr<batch_text> b) {
    b->b.clear();
    b->kept.clear();
    const std::lock_guard lock(m_);
    free_.push_back(std::move(b));
  }

 private:
  static constexpr std::size_t max_queued = 8;
  chrome_trace::record_sink& to_;
  bool threaded_;
  std::mutex m_;
  std::condition_variable cv_;
  std::deque<job> queue_;
  std::vector<std::shared_ptr<batch_text>> free_;
  bool done_ = false, stop_ = false;
};

/// What an annotation's name means to the reader.
enum arg_kind : std::uint8_t {
  plain_arg,
  dims_arg,
  strides_arg,
  types_arg,
  concrete_arg,
  correlation_arg
};
inline arg_kind arg_kind_of(std::string_view key) noexcept {
  if (key.size() < 10 || key.size() > 15) return key == "correlation" ? correlation_arg : plain_arg;
  return key == "Input Dims"        ? dims_arg
         : key == "Input Strides"   ? strides_arg
         : key == "Input type"      ? types_arg
         : key == "Concrete Inputs" ? concrete_arg
         : key == "correlation"     ? correlation_arg
                                    : plain_arg;
}

/// Reads a Perfetto trace's bytes into a record sink (the table builder).
class decoder {
 public:
  decoder(std::string_view bytes, handoff& sink, anomaly_counts& anomalies,
          std::vector<counter_series>* counters, const read_options& opt)
      : bytes_(bytes), sink_(sink), anomalies_(anomalies), counters_(counters), opt_(opt) {}

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

  std::size_t at(std::string_view s) const noexcept {
    return static_cast<std::size_t>(s.data() - bytes_.data());
  }
  pb::decoder sub(std::string_view s) const { return {s, at(s)}; }

  // ---- pass one: tracks, clock snapshots, the bundle's metadata --------------------------
  void scan() {
    pb::decoder d(bytes_, 0);
    pb::field f;
    while (d.next(f)) {
      if (f.number != pf::trace_packet || f.type != pb::wire::bytes) {
        anomalies_.add(anomaly::skipped_packet);
        continue;
      }
      pb::decoder p = sub(f.bytes);
      pb::field g;
      std::uint32_t seq = 0;
      std::string_view snap, desc, bundle;
      while (p.next(g)) {
        if (g.type == pb::wire::bytes) {
          if (g.number == pf::packet::track_descriptor) desc = g.bytes;
          if (g.number == pf::packet::clock_snapshot) snap = g.bytes;
          if (g.number == pf::packet::chrome_events) bundle = g.bytes;
        } else if (g.number == pf::packet::trusted_packet_sequence_id) {
          seq = static_cast<std::uint32_t>(g.value);
        }
      }
      if (!desc.empty()) track_descriptor(desc);
      if (!snap.empty()) clock_snapshot(snap, seq);
      if (!bundle.empty()) bundle_metadata(bundle);
    }
  }

  void track_descriptor(std::string_view s) {
    pb::decoder d = sub(s);
    pb::field f;
    std::uint64_t uuid = 0;
    track_info t;
    while (d.next(f)) {
      switch (f.number) {
        case pf::track::uuid:
          uuid = f.value;
          break;
        case pf::track::parent_uuid:
          t.parent = f.value;
          break;
        case pf::track::name:
        case pf::track::static_name:
        case pf::track::atrace_name:
          if (f.type == pb::wire::bytes) t.name = f.bytes;
          break;
        case pf::track::description:
          if (f.type == pb::wire::bytes) t.description = f.bytes;
          break;
        case pf::track::process: {
          t.has_process = true;
          pb::decoder q = sub(f.bytes);
          pb::field g;
          while (q.next(g)) {
            if (g.number == pf::process::pid) t.pid = static_cast<std::int32_t>(g.value);
            if (g.number == pf::process::process_name && g.type == pb::wire::bytes)
              t.process_name = g.bytes;
          }
          break;
        }
        case pf::track::thread: {
          t.has_thread = true;
          pb::decoder q = sub(f.bytes);
          pb::field g;
          while (q.next(g)) {
            if (g.number == pf::thread::pid) t.pid = static_cast<std::int32_t>(g.value);
            if (g.number == pf::thread::tid) t.tid = g.as_int();
            if (g.number == pf::thread::thread_name && g.type == pb::wire::bytes)
              t.thread_name = g.bytes;
          }
          break;
        }
        case pf::track::counter: {
          t.is_counter = true;
          pb::decoder q = sub(f.bytes);
          pb::field g;
          while (q.next(g)) {
            if (g.number == pf::counter::is_incremental) t.incremental = g.value != 0;
            if (g.number == pf::counter::unit_multiplier) t.multiplier = g.as_int();
            if (g.number == pf::counter::unit_name && g.type == pb::wire::bytes)
              t.unit_name = g.bytes;
          }
          break;
        }
        default:
          break;
      }
    }
    if (uuid == 0) return;
    // A later descriptor of the same track adds to it (Perfetto merges them).
    auto [it, fresh] = tracks_.try_emplace(uuid, t);
    if (!fresh) {
      track_info& o = it->second;
      if (t.parent) o.parent = t.parent;
      if (!t.name.empty()) o.name = t.name;
      if (!t.description.empty()) o.description = t.description;
      if (t.has_process) o.has_process = true, o.pid = t.pid, o.process_name = t.process_name;
      if (t.has_thread)
        o.has_thread = true, o.pid = t.pid, o.tid = t.tid, o.thread_name = t.thread_name;
      if (t.is_counter)
        o.is_counter = true, o.incremental = t.incremental, o.multiplier = t.multiplier,
        o.unit_name = t.unit_name;
    }
  }

  static std::uint64_t clock_key(std::uint64_t id, std::uint32_t seq) noexcept {
    // Ids 64-127 are scoped to their sequence.
    return id >= 64 && id <= 127 ? (std::uint64_t{seq} << 32) | id : id;
  }

  void clock_snapshot(std::string_view s, std::uint32_t seq) {
    pb::decoder d = sub(s);
    pb::field f;
    snapshot snap;
    while (d.next(f)) {
      if (f.number == pf::clock::primary_trace_clock && f.type == pb::wire::varint) {
        trace_clock_ = f.value;
        continue;
      }
      if (f.number != pf::clock::clocks || f.type != pb::wire::bytes) continue;
      pb::decoder c = sub(f.bytes);
      pb::field g;
      std::uint64_t id = 0, ts = 0, mult = 1;
      while (c.next(g)) {
        if (g.number == pf::clock::clock_id) id = g.value;
        if (g.number == pf::clock::timestamp) ts = g.value;
        if (g.number == pf::clock::unit_multiplier_ns && g.value != 0) mult = g.value;
      }
      const std::uint64_t key = clock_key(id, seq);
      if (mult != 1) multipliers_[key] = mult;
      snap.clocks.emplace_back(key, ts);
    }
    if (!snap.clocks.empty()) snapshots_.push_back(std::move(snap));
  }

  void bundle_metadata(std::string_view s) {
    pb::decoder d = sub(s);
    pb::field f;
    while (d.next(f)) {
      if (f.number != pf::chrome::metadata || f.type != pb::wire::bytes) continue;
      pb::decoder m = sub(f.bytes);
      pb::field g;
      std::string_view name;
      while (m.next(g)) {
        if (g.number == pf::chrome::name && g.type == pb::wire::bytes) name = g.bytes;
        if (g.number == pf::chrome::int_value && name == pf::base_time_key) {
          has_base_ = true;
          base_ = g.as_int();
          base_at_ = g.at;
        }
      }
      if (name == pf::writer_mark) marked_ = true;
    }
  }

  // ---- tracks resolved to (pid, tid) -------------------------------------------------------
  key_value number(std::int64_t v) const noexcept {
    key_value k;
    k.number = static_cast<std::uint64_t>(v);
    return k;
  }
  key_value text(std::string_view s) {
    key_value k;
    k.is_string = true;
    k.text = s;
    return k;
  }
  std::string_view track_label(std::uint64_t uuid, const track_info& t) {
    if (!t.name.empty()) return t.name;
    return keep("track " + std::to_string(uuid));
  }

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

  /// The id a named track stands for: its name, or the number its name is (pf::numeric_id).
  key_value named(std::uint64_t uuid, const track_info& t) {
    std::int64_t n = 0;
    if (marked_ && t.description == pf::numeric_id && parse_int64(t.name, n)) return number(n);
    return marked_ ? text(t.name) : text(track_label(uuid, t));  // tracemodel names every one
  }

  void resolve_tracks() {
    for (auto& [uuid, t] : tracks_) resolve(uuid, t, 0);
  }
  /// The thread of a track's events (see the header comment).
  void resolve(std::uint64_t uuid, track_info& t, int depth) {
    if (t.resolved) return;
    t.resolved = true;
    if (t.has_thread) {
      t.rpid = number(t.pid);
      t.rtid = number(t.tid);
      return;
    }
    if (t.has_process) {
      t.rpid = number(t.pid);
      t.rtid = t.name.empty() ? number(0) : text(t.name);
      return;
    }
    auto parent = tracks_.find(t.parent);
    if (t.parent == 0 || parent == tracks_.end() || depth > 64) {  // a root: a process of its own
      t.rpid = named(uuid, t);
      t.rtid = t.rpid;
      return;
    }
    track_info& p = parent->second;
    resolve(t.parent, p, depth + 1);
    t.rpid = p.rpid;
    // A child of a thread, or an unnamed child of any track, is its parent's thread; a named
    // track under a process (or under another track) is a thread of its own, by name.
    t.rtid = p.has_thread || t.name.empty() ? p.rtid : named(uuid, t);
  }

  /// The track of a TrackEvent: its uuid, the sequence's default, the sequence's thread.
  const track_info* track_of(std::uint64_t uuid) {
    if (uuid == 0) return nullptr;
    auto& [cached_uuid, cached] = track_cache_[uuid & (track_cache_.size() - 1)];
    if (cached != nullptr && cached_uuid == uuid) return cached;
    auto it = tracks_.find(uuid);
    if (it != tracks_.end()) {
      cached_uuid = uuid;
      return cached = &it->second;
    }
    // An event on a track never described: a track of its own, named by its uuid.
    track_info t;
    t.resolved = true;
    t.rpid = text(keep("track " + std::to_string(uuid)));
    t.rtid = t.rpid;
    return &tracks_.emplace(uuid, t).first->second;
  }

  // ---- time ---------------------------------------------------------------------------------
  /// `v` on clock `key` in the trace's clock (ns), through the snapshot holding both clocks
  /// whose reading of `key` is the latest at or before `v` (else the earliest).
  std::int64_t to_trace_time(std::uint64_t key, std::uint64_t v, std::size_t at_) {
    const std::uint64_t target = trace_clock_;
    if (key == target) return static_cast<std::int64_t>(v * multiplier(key));
    if (last_pairs_ == nullptr || last_pairs_key_ != key) {
      auto [it, fresh] = pairs_.try_emplace(key);
      last_pairs_ = &it->second;
      last_pairs_key_ = key;
      if (fresh) fill_pairs(key, target, it->second);
    }
    const std::vector<std::pair<std::uint64_t, std::uint64_t>>& pairs = *last_pairs_;
    if (pairs.empty())
      throw input_error("perfetto: a timestamp on clock " + std::to_string(key & 0xffffffffu) +
                            " that no clock snapshot relates to the trace's clock",
                        at_);
    auto p = std::upper_bound(pairs.begin(), pairs.end(), v,
                              [](std::uint64_t x, const auto& e) { return x < e.first; });
    const auto& [from, to] = p == pairs.begin() ? *p : *std::prev(p);
    const auto m = static_cast<std::int64_t>(multiplier(key));
    return static_cast<std::int64_t>(to * multiplier(target)) +
           (static_cast<std::int64_t>(v) - static_cast<std::int64_t>(from)) * m;
  }
  /// The snapshots' readings of (`key`, `target`) where they hold both, by the first.
  void fill_pairs(std::uint64_t key, std::uint64_t target,
                  std::vector<std::pair<std::uint64_t, std::uint64_t>>& pairs) const {
    for (const snapshot& s : snapshots_) {
      std::uint64_t from = 0, to = 0;
      bool has_from = false, has_to = false;
      for (const auto& [k, ts] : s.clocks) {
        if (k == key) has_from = true, from = ts;
        if (k == target) has_to = true, to = ts;
      }
      if (has_from && has_to) pairs.emplace_back(from, to);
    }
    std::stable_sort(pairs.begin(), pairs.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
  }
  std::uint64_t multiplier(std::uint64_t key) const {
    auto m = multipliers_.find(key);
    return m == multipliers_.end() ? std::uint64_t{1} : m->second;
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

  void packet_defaults(sequence_state& s, std::string_view bytes) {
    pb::decoder d = sub(bytes);
    pb::field f;
    while (d.next(f)) {
      if (f.number == pf::defaults::timestamp_clock_id)
        s.clock = static_cast<std::uint32_t>(f.value);
      if (f.number != pf::defaults::track_event_defaults || f.type != pb::wire::bytes) continue;
      pb::decoder e = sub(f.bytes);
      pb::field g;
      s.extra_counter_tracks.clear();
      s.extra_double_counter_tracks.clear();
      while (e.next(g)) {
        if (g.number == pf::defaults::track_uuid) s.default_track = g.value;
        if (g.number == pf::defaults::extra_counter_track_uuids)
          pb::for_each_varint(g, g.at,
                              [&](std::uint64_t v) { s.extra_counter_tracks.push_back(v); });
        if (g.number == pf::defaults::extra_double_counter_track_uuids)
          pb::for_each_varint(g, g.at,
                              [&](std::uint64_t v) { s.extra_double_counter_tracks.push_back(v); });
      }
    }
  }

  void reset_incremental_clocks(sequence_state& s, std::string_view bytes, std::uint32_t seq) {
    pb::decoder d = sub(bytes);
    pb::field f;
    while (d.next(f)) {
      if (f.number != pf::clock::clocks || f.type != pb::wire::bytes) continue;
      pb::decoder c = sub(f.bytes);
      pb::field g;
      std::uint64_t id = 0, ts = 0;
      bool incremental = false;
      while (c.next(g)) {
        if (g.number == pf::clock::clock_id) id = g.value;
        if (g.number == pf::clock::timestamp) ts = g.value;
        if (g.number == pf::clock::is_incremental) incremental = g.value != 0;
      }
      if (incremental) s.incremental_clocks[clock_key(id, seq)] = ts;
    }
  }

  static void set_iid(std::vector<std::string_view>& table, std::uint64_t iid, std::string_view s,
                      std::size_t at_) {
    if (iid > (std::uint64_t{1} << 26))
      throw input_error("perfetto: an interning id beyond 2^26 (" + std::to_string(iid) + ")", at_);
    if (table.size() <= iid) table.resize(iid + 1);
    table[iid] = s;
  }
  static std::string_view get_iid(const std::vector<std::string_view>& table, std::uint64_t iid) {
    return iid < table.size() ? table[iid] : std::string_view{};
  }

  void interned_data(sequence_state& s, std::string_view bytes) {
    pb::decoder d = sub(bytes);
    pb::field f;
    while (d.next(f)) {
      std::vector<std::string_view>* table = nullptr;
      switch (f.number) {
        case pf::interned::event_categories:
          table = &s.categories;
          break;
        case pf::interned::event_names:
          table = &s.names;
          break;
        case pf::interned::debug_annotation_names:
          table = &s.annotation_names;
          break;
        case pf::interned::debug_annotation_string_values:
          table = &s.string_values;
          break;
        default:
          continue;
      }
      if (f.type != pb::wire::bytes) continue;
      pb::decoder e = sub(f.bytes);
      pb::field g;
      std::uint64_t iid = 0;
      std::string_view name;
      while (e.next(g)) {
        if (g.number == pf::interned::iid) iid = g.value;
        if (g.number == pf::interned::name && g.type == pb::wire::bytes) name = g.bytes;
      }
      set_iid(*table, iid, name, f.at);
      if (table == &s.annotation_names) {
        if (s.annotation_kinds.size() <= iid) s.annotation_kinds.resize(iid + 1, plain_arg);
        s.annotation_kinds[iid] = arg_kind_of(name);
      }
    }
  }

  void legacy_thread(sequence_state& s, std::string_view bytes) {
    pb::decoder d = sub(bytes);
    pb::field f;
    s.has_thread = true;
    while (d.next(f)) {
      if (f.number == pf::thread::pid) s.pid = static_cast<std::int32_t>(f.value);
      if (f.number == pf::thread::tid) s.tid = f.as_int();
      if (f.number == pf::thread::reference_timestamp_us) s.ref_us = f.as_int();
      if (f.number == pf::thread::reference_thread_time_us) s.ref_thread_time_us = f.as_int();
      if (f.number == pf::thread::reference_thread_instruction_count)
        s.ref_instructions = f.as_int();
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
              j.string(g.bytes);
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
            case pf::chrome::json_value:
              value = std::string(g.bytes);
              has_value = true;
              break;
            default:
              break;
          }
        }
        if (name == pf::writer_mark || name == pf::base_time_key || !has_value) continue;
        sink_.post([key = std::string(name), value](chrome_trace::record_sink& s) {
          s.metadata(key, value);
        });
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
          if (f.type == pb::wire::bytes) name = f.bytes;
          break;
        case pf::event::category_iids:
          pb::for_each_varint(f, f.at,
                              [&](std::uint64_t v) { cats_.push_back(get_iid(s.categories, v)); });
          break;
        case pf::event::categories:
          if (f.type == pb::wire::bytes) cats_.push_back(f.bytes);
          break;
        case pf::event::debug_annotations:
          if (f.type == pb::wire::bytes && annotation(s, f.bytes, rec))
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
    if (name.empty() && name_iid != 0) name = get_iid(s.names, name_iid);
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
        rec.scope = scope == pf::legacy::scope_global    ? "g"
                    : scope == pf::legacy::scope_process ? "p"
                                                         : "t";
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

  template <class F>
  static void for_each_id(const pb::field& f, F&& fn) {
    if (f.number == pf::event::flow_ids || f.number == pf::event::terminating_flow_ids)
      pb::for_each_fixed64(f, f.at, fn);
    else
      pb::for_each_varint(f, f.at, fn);
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
        rec.scope = scope == pf::legacy::scope_global    ? "g"
                    : scope == pf::legacy::scope_process ? "p"
                                                         : "t";
        return true;
      default:
        return false;  // async, counters and other legacy phases: not modelled
    }
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
    fields f;
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
    b_->b.events.push_back(f);
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
  std::int64_t process_of(const track_info& t) const {
    for (const track_info* p = &t; p != nullptr;) {
      if (p->has_process || p->has_thread) return p->pid;
      auto it = tracks_.find(p->parent);
      p = p->parent == 0 || it == tracks_.end() ? nullptr : &it->second;
    }
    return 0;
  }

  // ---- debug annotations --------------------------------------------------------------------
  /// Adds one annotation to the record's args (or its op inputs); true when it is the
  /// correlation id.
  bool annotation(const sequence_state& s, std::string_view bytes, fields& rec) {
    pb::decoder d = sub(bytes);
    pb::field f;
    std::string_view key;
    arg_kind kind = plain_arg;
    while (d.next(f)) {  // to its name (written first, as a rule)
      if (f.number == pf::annotation::name_iid && f.type == pb::wire::varint) {
        key = get_iid(s.annotation_names, f.value);
        kind = f.value < s.annotation_kinds.size()
                   ? static_cast<arg_kind>(s.annotation_kinds[f.value])
                   : plain_arg;
        break;
      }
      if (f.number == pf::annotation::name && f.type == pb::wire::bytes) {
        key = f.bytes;
        kind = arg_kind_of(key);
        break;
      }
    }
    if (kind == dims_arg || kind == strides_arg) {
      chrome_trace::dims_range& r = kind == dims_arg ? rec.dims : rec.strides;
      const auto d0 = static_cast<std::uint32_t>(b_->b.dims.size());
      const std::size_t i0 = b_->b.ints.size();
      if (dims_of(bytes, 0)) {
        r = {d0, static_cast<std::uint32_t>(b_->b.dims.size() - d0), true};
        return false;
      }
      b_->b.dims.resize(d0);
      b_->b.ints.resize(i0);
    } else if (kind == types_arg || kind == concrete_arg) {
      chrome_trace::string_range& r = kind == types_arg ? rec.types : rec.concrete;
      const auto s0 = static_cast<std::uint32_t>(b_->b.strings.size());
      if (strings_of(s, bytes)) {
        r = {s0, static_cast<std::uint32_t>(b_->b.strings.size() - s0)};
        return false;
      }
      b_->b.strings.resize(s0);
    }
    raw_arg& a = b_->b.args.emplace_back();
    a.key = key;
    a.offset = at(bytes);
    value_of(s, bytes, a);
    return kind == correlation_arg;
  }

  /// The value of an annotation as a raw arg (nested values as JSON text).
  void value_of(const sequence_state& s, std::string_view bytes, raw_arg& a) {
    pb::decoder d = sub(bytes);
    pb::field f;
    bool nested = false;
    a.kind = raw_arg::type::json;
    a.text = "[]";  // an annotation with no value: an empty array (as Perfetto writes one)
    while (d.next(f)) {
      switch (f.number) {
        case pf::annotation::bool_value:
          a.kind = raw_arg::type::boolean;
          a.b = f.value != 0;
          break;
        case pf::annotation::uint_value:
          if (f.value <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
            a.kind = raw_arg::type::integer;
            a.i = static_cast<std::int64_t>(f.value);
          } else {
            a.kind = raw_arg::type::unsigned_integer;
          }
          a.u = f.value;
          break;
        case pf::annotation::int_value:
          a.kind = raw_arg::type::integer;
          a.i = f.as_int();
          break;
        case pf::annotation::double_value:
          a.kind = raw_arg::type::floating;
          a.f = f.as_double();
          break;
        case pf::annotation::string_value:
          a.kind = raw_arg::type::string;
          a.text = f.bytes;
          break;
        case pf::annotation::string_value_iid:
          a.kind = raw_arg::type::string;
          a.text = get_iid(s.string_values, f.value);
          break;
        case pf::annotation::pointer_value:
          a.kind = raw_arg::type::string;
          a.text = keep(fmt::format("0x{:x}", f.value));
          break;
        case pf::annotation::legacy_json_value:
          a.kind = raw_arg::type::json;
          a.text = f.bytes;
          break;
        case pf::annotation::nested_value:
        case pf::annotation::dict_entries:
        case pf::annotation::array_values:
          nested = true;
          break;
        default:
          break;
      }
    }
    if (nested) {
      std::string json;
      json_output j = json_output::to_string(json);
      json_of(s, bytes, j, 0);
      j.flush();
      a.kind = raw_arg::type::json;
      a.text = keep(std::move(json));
    }
  }

  /// An annotation's value as JSON.
  void json_of(const sequence_state& s, std::string_view bytes, json_output& j, int depth) {
    if (depth > 64)
      throw input_error("perfetto: debug annotations nested deeper than 64", at(bytes));
    pb::decoder d = sub(bytes);
    pb::field f;
    bool any = false, dict = false;
    std::vector<std::string_view> entries;
    while (d.next(f)) {
      switch (f.number) {
        case pf::annotation::bool_value:
          j.boolean(f.value != 0);
          any = true;
          break;
        case pf::annotation::uint_value:
          j.unsigned_integer(f.value);
          any = true;
          break;
        case pf::annotation::int_value:
          j.integer(f.as_int());
          any = true;
          break;
        case pf::annotation::double_value:
          j.floating(f.as_double());
          any = true;
          break;
        case pf::annotation::string_value:
          j.string(f.bytes);
          any = true;
          break;
        case pf::annotation::string_value_iid:
          j.string(get_iid(s.string_values, f.value));
          any = true;
          break;
        case pf::annotation::pointer_value:
          j.string(fmt::format("0x{:x}", f.value));
          any = true;
          break;
        case pf::annotation::legacy_json_value:
          j.raw(f.bytes);
          any = true;
          break;
        case pf::annotation::nested_value:
          nested_json(f.bytes, j, depth + 1);
          any = true;
          break;
        case pf::annotation::dict_entries:
          dict = true;
          entries.push_back(f.bytes);
          break;
        case pf::annotation::array_values:
          entries.push_back(f.bytes);
          break;
        default:
          break;
      }
    }
    if (any) return;
    if (dict) {
      j.ch('{');
      for (std::size_t k = 0; k < entries.size(); ++k) {
        if (k) j.ch(',');
        pb::decoder e = sub(entries[k]);
        pb::field g;
        std::string_view key;
        while (e.next(g)) {
          if (g.number == pf::annotation::name && g.type == pb::wire::bytes) key = g.bytes;
          if (g.number == pf::annotation::name_iid) key = get_iid(s.annotation_names, g.value);
        }
        j.string(key).ch(':');
        json_of(s, entries[k], j, depth + 1);
      }
      j.ch('}');
      return;
    }
    j.ch('[');
    for (std::size_t k = 0; k < entries.size(); ++k) {
      if (k) j.ch(',');
      json_of(s, entries[k], j, depth + 1);
    }
    j.ch(']');
  }
  /// A deprecated NestedValue as JSON.
  void nested_json(std::string_view bytes, json_output& j, int depth) {
    if (depth > 64)
      throw input_error("perfetto: debug annotations nested deeper than 64", at(bytes));
    pb::decoder d = sub(bytes);
    pb::field f;
    std::uint64_t type = 0;
    std::vector<std::string_view> keys, values;
    bool scalar = false;
    std::string scalar_json;
    json_output sj = json_output::to_string(scalar_json);
    while (d.next(f)) {
      switch (f.number) {
        case pf::nested::nested_type:
          type = f.value;
          break;
        case pf::nested::dict_keys:
          keys.push_back(f.bytes);
          break;
        case pf::nested::dict_values:
        case pf::nested::array_values:
          values.push_back(f.bytes);
          break;
        case pf::nested::int_value:
          sj.integer(f.as_int());
          scalar = true;
          break;
        case pf::nested::double_value:
          sj.floating(f.as_double());
          scalar = true;
          break;
        case pf::nested::bool_value:
          sj.boolean(f.value != 0);
          scalar = true;
          break;
        case pf::nested::string_value:
          sj.string(f.bytes);
          scalar = true;
          break;
        default:
          break;
      }
    }
    sj.flush();
    if (type == pf::nested::dict) {
      j.ch('{');
      for (std::size_t k = 0; k < values.size(); ++k) {
        if (k) j.ch(',');
        j.string(k < keys.size() ? keys[k] : std::string_view{}).ch(':');
        nested_json(values[k], j, depth + 1);
      }
      j.ch('}');
    } else if (type == pf::nested::array) {
      j.ch('[');
      for (std::size_t k = 0; k < values.size(); ++k) {
        if (k) j.ch(',');
        nested_json(values[k], j, depth + 1);
      }
      j.ch(']');
    } else if (scalar) {
      j.raw(scalar_json);
    } else {
      j.raw("null");
    }
  }

  /// `Input Dims`/`Input Strides`: an array of entries, each an array of integers or of
  /// entries (chrome_trace/records.hpp); false when it is not one.
  bool dims_of(std::string_view bytes, int depth) {
    if (depth > 64) return false;
    pb::decoder d = sub(bytes);
    pb::field f;
    const bool has_entry = depth > 0;
    const auto entry = static_cast<std::uint32_t>(b_->b.dims.size());
    if (has_entry) b_->b.dims.push_back({false, 0, static_cast<std::uint32_t>(b_->b.ints.size())});
    bool ints = false, lists = false;
    while (d.next(f)) {
      if (f.number == pf::annotation::name || f.number == pf::annotation::name_iid) continue;
      if (f.number != pf::annotation::array_values || f.type != pb::wire::bytes) return false;
      // An element: an integer (most often `int_value` in one byte), or an array.
      const auto* e = reinterpret_cast<const unsigned char*>(f.bytes.data());
      bool is_int = false;
      std::int64_t v = 0;
      if (f.bytes.size() == 2 && e[0] == 0x20 && e[1] < 0x80) {
        is_int = true;
        v = e[1];
      } else if (!f.bytes.empty() && (e[0] == 0x20 || e[0] == 0x18)) {
        pb::decoder x = sub(f.bytes);
        pb::field g;
        while (x.next(g)) {
          if (g.number == pf::annotation::int_value && g.type == pb::wire::varint)
            is_int = true, v = g.as_int();
          else if (g.number == pf::annotation::uint_value && g.type == pb::wire::varint &&
                   g.value <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
            is_int = true, v = static_cast<std::int64_t>(g.value);
          else
            return false;
        }
      }
      if (is_int) {
        if (!has_entry || lists) return false;
        ints = true;
        b_->b.ints.push_back(v);
        ++b_->b.dims[entry].count;
        continue;
      }
      if (ints) return false;
      if (has_entry) {
        b_->b.dims[entry].list = true;
        ++b_->b.dims[entry].count;
      }
      lists = true;
      if (!dims_of(f.bytes, depth + 1)) return false;  // an array (an empty one: no fields)
    }
    return true;
  }
  /// `Input type`/`Concrete Inputs`: an array of strings; false when it is not one.
  bool strings_of(const sequence_state& s, std::string_view bytes) {
    pb::decoder d = sub(bytes);
    pb::field f;
    while (d.next(f)) {
      if (f.number == pf::annotation::name || f.number == pf::annotation::name_iid) continue;
      if (f.number != pf::annotation::array_values || f.type != pb::wire::bytes) return false;
      pb::decoder e = sub(f.bytes);
      pb::field g;
      bool got = false;
      while (e.next(g)) {
        if (g.number == pf::annotation::string_value && g.type == pb::wire::bytes) {
          b_->b.strings.push_back(g.bytes);
          got = true;
        } else if (g.number == pf::annotation::string_value_iid) {
          b_->b.strings.push_back(get_iid(s.string_values, g.value));
          got = true;
        } else {
          return false;
        }
      }
      if (!got) return false;
    }
    return true;
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

  std::string_view bytes_;
  handoff& sink_;
  anomaly_counts& anomalies_;
  std::vector<counter_series>* counters_;
  const read_options& opt_;
  std::unordered_map<std::uint64_t, track_info> tracks_;
  std::vector<snapshot> snapshots_;
  std::unordered_map<std::uint64_t, std::uint64_t> multipliers_;
  std::unordered_map<std::uint64_t, std::vector<std::pair<std::uint64_t, std::uint64_t>>> pairs_;
  const std::vector<std::pair<std::uint64_t, std::uint64_t>>* last_pairs_ = nullptr;
  std::uint64_t last_pairs_key_ = 0;
  std::uint64_t trace_clock_ = pf::clock::boottime;
  bool has_base_ = false, marked_ = false, expected_ = false;
  std::int64_t base_ = 0;
  std::size_t base_at_ = 0;
  std::unordered_map<std::uint32_t, sequence_state> seqs_;
  sequence_state* last_seq_ = nullptr;
  std::uint32_t last_seq_id_ = 0;
  // Recent tracks by uuid (the map's nodes stay where they are).
  std::array<std::pair<std::uint64_t, const track_info*>, 64> track_cache_{};
  std::unordered_map<std::uint64_t, std::vector<open_slice>> stacks_;  // open slices by track
  std::uint32_t batch_number_ = 0;                                     // the batch being filled
  std::uint32_t next_slice_ = 1;
  std::unordered_map<std::uint64_t, std::string_view> flow_kinds_;  // started flows' categories
  std::unordered_map<std::uint64_t, std::size_t> series_;           // counter track -> series
  std::unordered_map<std::string, std::size_t> thread_series_;
  std::vector<std::string_view> cats_;
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
