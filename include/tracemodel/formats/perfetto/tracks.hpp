// tracemodel/formats — the Perfetto reader's first pass (formats/perfetto_reader.hpp): the track
// descriptors, the clock snapshots and the Chrome bundle's metadata, read before any event; the
// tracks resolved to the (pid, tid) their events get, times converted to the trace's clock, and
// what a sequence's packets set (defaults, incremental clocks, interned data, legacy threads).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <deque>
#include <iterator>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tracemodel/config.hpp"
#include "tracemodel/detail/assert.hpp"
#include "tracemodel/formats/perfetto/state.hpp"
#include "tracemodel/formats/perfetto_fields.hpp"
#include "tracemodel/formats/protobuf.hpp"
#include "tracemodel/model/table.hpp"

TRACEMODEL_BEGIN_NAMESPACE
namespace detail::perfetto {

/// What the first pass finds (the decoder reads the events with it).
class track_index {
 protected:
  track_index(std::string_view bytes, anomaly_counts& anomalies) noexcept
      : bytes_(bytes), anomalies_(anomalies) {}

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
          if (f.type == pb::wire::bytes) t.name = lasting_utf8(f.bytes);
          break;
        case pf::track::description:
          if (f.type == pb::wire::bytes) t.description = lasting_utf8(f.bytes);
          break;
        case pf::track::process: {
          t.has_process = true;
          pb::decoder q = sub(f.bytes);
          pb::field g;
          while (q.next(g)) {
            if (g.number == pf::process::pid) t.pid = static_cast<std::int32_t>(g.value);
            if (g.number == pf::process::process_name && g.type == pb::wire::bytes)
              t.process_name = lasting_utf8(g.bytes);
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
              t.thread_name = lasting_utf8(g.bytes);
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
              t.unit_name = lasting_utf8(g.bytes);
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
    return label("track " + std::to_string(uuid));
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
    t.rpid = text(label("track " + std::to_string(uuid)));
    t.rtid = t.rpid;
    return &tracks_.emplace(uuid, t).first->second;
  }

  // ---- time ---------------------------------------------------------------------------------
  /// `v` on clock `key` in the trace's clock (ns), through the snapshot holding both clocks
  /// whose reading of `key` is the latest at or before `v` (else the earliest).
  std::int64_t to_trace_time(std::uint64_t key, std::uint64_t v, std::size_t at_) {
    const std::uint64_t target = trace_clock_;
    // (the clock of the last call, its pairs and both multipliers: the snapshots were all read
    // in the first pass)
    if (!last_clock_ || last_pairs_key_ != key) {
      last_clock_ = true;
      last_pairs_key_ = key;
      last_multiplier_ = multiplier(key);
      target_multiplier_ = multiplier(target);
      if (key != target) {
        auto [it, fresh] = pairs_.try_emplace(key);
        last_pairs_ = &it->second;
        if (fresh) fill_pairs(key, target, it->second);
      }
    }
    if (key == target) return static_cast<std::int64_t>(v * last_multiplier_);
    const std::vector<std::pair<std::uint64_t, std::uint64_t>>& pairs = *last_pairs_;
    if (pairs.empty())
      throw input_error("perfetto: a timestamp on clock " + std::to_string(key & 0xffffffffu) +
                            " that no clock snapshot relates to the trace's clock",
                        at_);
    auto p = std::upper_bound(pairs.begin(), pairs.end(), v,
                              [](std::uint64_t x, const auto& e) { return x < e.first; });
    const auto& [from, to] = p == pairs.begin() ? *p : *std::prev(p);
    const auto m = static_cast<std::int64_t>(last_multiplier_);
    return static_cast<std::int64_t>(to * target_multiplier_) +
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

  std::int64_t process_of(const track_info& t) const {
    for (const track_info* p = &t; p != nullptr;) {
      if (p->has_process || p->has_thread) return p->pid;
      auto it = tracks_.find(p->parent);
      p = p->parent == 0 || it == tracks_.end() ? nullptr : &it->second;
    }
    return 0;
  }

  /// Each id of a flow field (fixed64 in the newer fields, varints in the older ones).
  template <class F>
  static void for_each_id(const pb::field& f, F&& fn) {
    if (f.number == pf::event::flow_ids || f.number == pf::event::terminating_flow_ids)
      pb::for_each_fixed64(f, f.at, fn);
    else
      pb::for_each_varint(f, f.at, fn);
  }

  // ---- a sequence's state, as its packets set it --------------------------------------------
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
        if (g.number == pf::interned::name && g.type == pb::wire::bytes)
          name = lasting_utf8(g.bytes);
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

  /// A name made for a track: kept as long as the reader (records of every batch use it).
  std::string_view label(std::string s) {
    labels_.push_back(std::move(s));
    return labels_.back();
  }
  /// Text from the file that records of any batch may use (names of tracks, interned strings).
  std::string_view lasting_utf8(std::string_view s) { return utf8_text(s, labels_, anomalies_); }

  std::string_view bytes_;
  anomaly_counts& anomalies_;
  std::unordered_map<std::uint64_t, track_info> tracks_;
  std::vector<snapshot> snapshots_;
  std::unordered_map<std::uint64_t, std::uint64_t> multipliers_;
  std::unordered_map<std::uint64_t, std::vector<std::pair<std::uint64_t, std::uint64_t>>> pairs_;
  const std::vector<std::pair<std::uint64_t, std::uint64_t>>* last_pairs_ = nullptr;
  std::uint64_t last_pairs_key_ = 0, last_multiplier_ = 1, target_multiplier_ = 1;
  bool last_clock_ = false;
  std::uint64_t trace_clock_ = pf::clock::boottime;
  bool has_base_ = false, marked_ = false;
  std::int64_t base_ = 0;
  std::size_t base_at_ = 0;
  // Recent tracks by uuid (the map's nodes stay where they are).
  std::array<std::pair<std::uint64_t, const track_info*>, 64> track_cache_{};
  std::deque<std::string> labels_;
};

}  // namespace detail::perfetto
TRACEMODEL_END_NAMESPACE
