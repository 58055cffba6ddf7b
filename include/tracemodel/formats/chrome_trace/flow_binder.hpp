// tracemodel/formats/chrome_trace — the flow binder: which events the flow records of a trace
// (`ph` s, f, t) point at, and what they make of them.
//
// A flow record binds to an event of its track (pid, tid): with "bp":"e" (and for starts) the
// innermost event that encloses its time, else the next event that starts at or after it;
// events that start exactly at its time are chosen by kind (and device flows by correlation id).
// `fwdbwd` flows become forward/backward links; `ac2g` (and the older `async_cpu_to_gpu`) flows
// set the flow fields of the two device activities they join. Repairs are counted: a duplicate
// start or end (the first wins), an end without a start, a flow bound to nothing, a category
// the model does not read. The binder does not depend on the table's schema: what it needs of
// the events comes as bind keys, and through `flow_events`.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <system_error>
#include <utility>
#include <vector>

#include "tracemodel/config.hpp"
#include "tracemodel/detail/big_allocator.hpp"
#include "tracemodel/formats/chrome_trace/parse.hpp"
#include "tracemodel/model/table.hpp"
#include "tracemodel/threads.hpp"

TRACEMODEL_BEGIN_NAMESPACE
namespace detail::chrome_trace {

struct raw_flow {  // 40 bytes
  std::uint64_t id;
  std::int64_t ts;
  std::size_t offset;
  name_id cat;
  std::uint32_t track;  ///< its track (pid, tid), numbered as the events' tracks are
  char ph;
  bool enclosing;
};

/// What binding a flow needs of an event, kept in track order: finding a flow's event then
/// reads this compact array (16 bytes an event, each track's run read in time order) instead
/// of the 112-byte events at scattered places.
struct bind_key {
  std::int64_t start;
  std::uint32_t correlation;  ///< a device activity's, when it fits (bind_corr32)
  std::uint8_t cls;           ///< bind_op, bind_device, bind_runtime, bind_device_side, bind_corr32
  std::uint8_t mark;          ///< the event's flow while flows are bound (mark_*)
};
inline constexpr std::uint8_t bind_op = 1, bind_device = 2, bind_runtime = 4, bind_device_side = 8,
                              bind_corr32 = 16;
/// An event's flow mark while flows are bound (the fields are written at the end): a start,
/// a start whose end bound too (an end refused because its activity carries a flow already,
/// the start's own when both bind to one activity, leaves its start without), an end, a flow
/// the event carried before.
enum : std::uint8_t {
  mark_none = 0,
  mark_start = 1,
  mark_end = 2,
  mark_before = 3,
  mark_start_ended = 4
};
inline constexpr std::uint32_t no_slot = 0xffffffffu;

/// What the binder asks of the table's events, by index.
class flow_events {
 public:
  flow_events() = default;
  flow_events(const flow_events&) = delete;
  flow_events& operator=(const flow_events&) = delete;
  [[nodiscard]] virtual std::int64_t end_ns(event_index i) const = 0;
  [[nodiscard]] virtual std::uint64_t correlation_id(event_index i) const = 0;
  /// Makes device activity `i` the start (or the end) of the host-to-device flow `id`.
  virtual void set_device_flow(event_index i, std::uint64_t id, bool start) = 0;

 protected:
  ~flow_events() = default;
};

/// The flows of a read, and the events they may bind to (in table order, sorted by start).
struct flow_records {
  std::span<const raw_flow> flows;
  scratch_vector<std::uint32_t> event_track;  ///< each event's track (released while binding)
  scratch_vector<bind_key> event_keys;        ///< each event's bind key (released too)
  std::size_t tracks = 0;                     ///< the number of tracks
};

/// Binds the flows: forward/backward links appended to `links`, device activities' flow fields
/// set through `events`, repairs counted in `anomalies`. `strings`: the table's, where the
/// flows' categories are.
TRACEMODEL_READER_API void bind_flows(flow_records in, const string_table& strings,
                                      const thread_options& opt, flow_events& events,
                                      anomaly_counts& anomalies, table_vector<flow_link>& links);

#if TRACEMODEL_READER_DEFINITIONS
}  // namespace detail::chrome_trace
TRACEMODEL_END_NAMESPACE

#include "tracemodel/detail/id_map.hpp"
#include "tracemodel/detail/radix_sort.hpp"

TRACEMODEL_BEGIN_NAMESPACE
namespace detail::chrome_trace {

class flow_binder {
 public:
  flow_binder(flow_records in, const string_table& strings, const thread_options& opt,
              flow_events& events, anomaly_counts& anomalies, table_vector<flow_link>& links)
      : flows_(in.flows),
        event_track_(std::move(in.event_track)),
        event_keys_(std::move(in.event_keys)),
        tracks_(in.tracks),
        strings_(strings),
        opt_(opt),
        events_(events),
        anomalies_(anomalies),
        links_(links) {}

  void run() {
    if (flows_.empty()) return;
    // The flows' order by time (radix, stable) does not depend on the events: with many flows
    // it is made on another thread while this one lays out the tracks (the sort is about a
    // sixth of the binding).
    std::optional<by_time> sorted_aside;
    worker sorting;
    if (flows_.size() >= parallel_flows && thread_budget(opt_) > 1) {
      try {
        sorting = worker(opt_, [&] { sorted_aside = sort_by_time(); });
      } catch (const std::system_error&) {  // no thread to be had: sorted below instead
      }
    }
    layout_tracks();
    sorting.join();
    find_lower_bounds(sorted_aside ? std::move(*sorted_aside) : sort_by_time());
    bind_each_flow();
    pair_device_flows();
    link_fwd_bwd();
  }

 private:
  struct by_time {
    detail::fill_vector<std::int64_t> ts;
    detail::scratch_vector<std::uint32_t> order;
  };
  struct pending {
    event_index from = no_event, to = no_event;
  };

  by_time sort_by_time() const {
    const std::size_t nf = flows_.size();
    by_time r{detail::fill_vector<std::int64_t>(nf), {}};
    for (std::size_t i = 0; i < nf; ++i) r.ts[i] = flows_[i].ts;
    r.order = detail::stable_order(r.ts);
    return r;
  }

  /// The events of each track (pid, tid) by start (the table is sorted): a counting sort, which
  /// also lays out their bind keys in that order. Events and flows got their tracks as they
  /// were built (a track with flows and no events is empty here).
  void layout_tracks() {
    const std::size_t n = event_keys_.size();
    const std::size_t nt = tracks_;
    track_begin_.assign(nt + 1, 0);
    for (const std::uint32_t k : event_track_) ++track_begin_[k + 1];
    for (std::size_t k = 0; k < nt; ++k) track_begin_[k + 1] += track_begin_[k];
    by_track_ = detail::fill_vector<event_index>(n);
    keys_ = detail::fill_vector<bind_key>(n);
    std::vector<std::size_t> fill(track_begin_.begin(), track_begin_.end() - 1);
    for (std::size_t i = 0; i < n; ++i) {
      const std::size_t at = fill[event_track_[i]]++;
      by_track_[at] = static_cast<event_index>(i);
      keys_[at] = event_keys_[i];
    }
    event_track_ = {};
    event_keys_ = {};
  }

  /// Each flow's lower bound in its track, found by walking flows and events of a track in step
  /// (flows sorted by track and time) instead of a binary search each: the flows are then bound
  /// in file order, which decides which of two duplicates wins. The order: by time (radix),
  /// then stably by track (counting).
  void find_lower_bounds(const by_time& sorted) {
    const std::size_t nf = flows_.size();
    const std::size_t nt = tracks_;
    flow_track_ = detail::fill_vector<std::uint32_t>(nf);
    for (std::size_t i = 0; i < nf; ++i) flow_track_[i] = flows_[i].track;
    lower_ = detail::fill_vector<std::uint32_t>(nf);
    detail::fill_vector<std::uint32_t> order(nf);
    {
      std::vector<std::size_t> flow_fill(nt + 1, 0);
      for (const std::uint32_t k : flow_track_) ++flow_fill[k + 1];
      for (std::size_t k = 0; k < nt; ++k) flow_fill[k + 1] += flow_fill[k];
      for (const std::uint32_t i : sorted.order) order[flow_fill[flow_track_[i]]++] = i;
    }
    for (std::size_t j = 0; j < nf;) {
      const std::uint32_t k = flow_track_[order[j]];
      const std::size_t end = track_begin_[k + 1];
      std::size_t at = track_begin_[k];
      for (; j < nf && flow_track_[order[j]] == k; ++j) {
        const std::int64_t ts = sorted.ts[order[j]];
        while (at < end && keys_[at].start < ts) ++at;
        lower_[order[j]] = static_cast<std::uint32_t>(at);
      }
    }
  }

  /// Each flow record to its event, in file order: a forward/backward flow's ends into `fb_`,
  /// a device flow's start into `started_` (its activity marked), its end into `device_ends_`.
  /// Flow ids are dense and met roughly in order: id maps (an array over a window of ids, hashed
  /// outside it) keep the lookups sequential where a hash spreads them over the map. The lists
  /// are reserved for every flow: growing them copied them about 20 times, and the pages of what
  /// is not used are never touched.
  void bind_each_flow() {
    const std::size_t nf = flows_.size();
    name_id fwdbwd{}, ac2g{}, old_ac2g{};
    const bool has_fwdbwd = strings_.find("fwdbwd", fwdbwd);
    const bool has_ac2g = strings_.find("ac2g", ac2g);
    const bool has_old_ac2g = strings_.find("async_cpu_to_gpu", old_ac2g);
    detail::id_map fb_index(nf);  // flow id -> position in fb_
    fb_.reserve(nf);
    device_starts_.emplace(nf);
    started_.reserve(nf);
    device_ends_.reserve(nf);
    for (std::size_t fi = 0; fi < nf; ++fi) {
      const raw_flow& f = flows_[fi];
      const bool is_fb = has_fwdbwd && f.cat == fwdbwd;
      const bool is_dev = (has_ac2g && f.cat == ac2g) || (has_old_ac2g && f.cat == old_ac2g);
      if (!is_fb && !is_dev) {
        anomalies_.add(anomaly::unsupported_record);
        continue;
      }
      if (f.ph == 't') continue;  // a step: nothing to bind
      const std::uint32_t k = flow_track_[fi];
      const std::uint32_t at =
          bind(f, is_dev, keys_, by_track_, track_begin_[k], track_begin_[k + 1], lower_[fi]);
      if (at == no_slot) {
        anomalies_.add(anomaly::unbound_flow);
        continue;
      }
      if (is_fb) {
        event_index slot = fb_index.find(f.id);
        if (slot == no_event) {
          slot = static_cast<event_index>(fb_.size());
          fb_index.insert(f.id, slot);
          fb_.emplace_back(f.id, pending{});
        }
        pending& p = fb_[slot].second;
        event_index& end = f.ph == 's' ? p.from : p.to;
        if (end != no_event)
          anomalies_.add(f.ph == 's' ? anomaly::duplicate_flow_start : anomaly::duplicate_flow_end);
        else
          end = by_track_[at];
      } else {
        bind_device_flow(f, at);
      }
    }
  }
  void bind_device_flow(const raw_flow& f, std::uint32_t at) {
    if ((keys_[at].cls & bind_device) == 0) {
      anomalies_.add(anomaly::unbound_flow);
      return;
    }
    if (f.ph != 's') {
      device_ends_.emplace_back(f.id, at);
      return;
    }
    if (device_starts_->find(f.id) != no_event) {
      anomalies_.add(anomaly::duplicate_flow_start);
      return;
    }
    if (keys_[at].mark != mark_none) {  // an activity carries one flow: the first wins
      anomalies_.add(anomaly::unbound_flow);
      return;
    }
    device_starts_->insert(f.id, at);
    started_.emplace_back(f.id, at);
    keys_[at].mark = mark_start;
  }

  /// Each device flow's end to its start; the events of the pairs marked. A start whose end
  /// never bound draws nothing (as for fwdbwd flows): it is not marked, so that what is written
  /// reads back the same (a lone start would bind anew, perhaps to another event of the same
  /// time).
  void pair_device_flows() {
    detail::id_map ended(device_ends_.size());
    std::size_t kept = 0;  // the ends that bind, moved to the front of device_ends_
    for (const auto& [id, at] : device_ends_) {
      const event_index start = device_starts_->find(id);
      if (start == no_event) {
        anomalies_.add(anomaly::flow_end_without_start);
        continue;
      }
      if (!ended.insert(id, at)) {
        anomalies_.add(anomaly::duplicate_flow_end);
        continue;
      }
      if (keys_[at].mark != mark_none) {  // already a flow's start or end
        anomalies_.add(anomaly::unbound_flow);
        continue;
      }
      keys_[at].mark = mark_end;
      keys_[start].mark = mark_start_ended;
      device_ends_[kept++] = {id, at};
    }
    device_ends_.resize(kept);
    for (const auto& [id, at] : started_)
      if (keys_[at].mark == mark_start_ended) events_.set_device_flow(by_track_[at], id, true);
    for (const auto& [id, at] : device_ends_) events_.set_device_flow(by_track_[at], id, false);
  }

  /// The forward/backward flows whose two ends bound, as links.
  void link_fwd_bwd() {
    const std::size_t first = links_.size();
    links_.reserve(links_.size() + fb_.size());
    for (const auto& [id, p] : fb_) {
      if (p.from == no_event) {
        anomalies_.add(anomaly::flow_end_without_start);
        continue;
      }
      if (p.to == no_event) continue;  // a start without an end: nothing to draw
      links_.push_back({flow_kind::fwd_bwd, id, p.from, p.to});
    }
    // In the order of their events, whatever order a file listed its flow records in (formats
    // list them differently: a Perfetto trace on the events, a Chrome trace after them).
    std::sort(
        links_.begin() + static_cast<std::ptrdiff_t>(first), links_.end(),
        [](const flow_link& a, const flow_link& b) {
          return a.from != b.from ? a.from < b.from : a.to != b.to ? a.to < b.to : a.id < b.id;
        });
  }

  /// The event a flow record points at, as its slot in `keys` (all tracks' events by track,
  /// then start; the flow's track is `keys[first, end)`): with "bp":"e" (and for starts) the
  /// innermost event of its track that encloses its time (Kineto puts it at the event's
  /// start); otherwise the next event of its track that starts at or after it.
  /// `lb`: the first slot of the track starting at or after f.ts.
  std::uint32_t bind(const raw_flow& f, bool device_flow, std::span<const bind_key> keys,
                     std::span<const event_index> by_track, std::size_t first, std::size_t end,
                     std::size_t lb) const {
    if (!f.enclosing && f.ph != 's') return lb == end ? no_slot : static_cast<std::uint32_t>(lb);
    // Events starting exactly at ts: choose by kind (and by correlation id for device flows).
    std::uint32_t best = no_slot;
    int best_score = -1;
    for (std::size_t k = lb; k < end && keys[k].start == f.ts; ++k) {
      const bind_key& e = keys[k];
      int score = 0;
      if (device_flow) {
        if ((e.cls & bind_device) != 0) {
          // A start passes over activities that already carry a flow (one flow each), so
          // that two starts on events of one start time both bind, as they were written.
          if (f.ph == 's' && e.mark != mark_none) continue;
          const bool right = (e.cls & (f.ph == 's' ? bind_runtime : bind_device_side)) != 0;
          const bool same = (e.cls & bind_corr32) != 0
                                ? e.correlation == f.id
                                : events_.correlation_id(by_track[k]) == f.id;
          score = right ? (same ? 3 : 2) : 1;
        }
      } else {
        score = (e.cls & bind_op) != 0 ? 2 : 1;
      }
      // Later events with equal start are inner ones: ops take the last of equal score. A
      // device flow takes the first: the writer writes device flows in table order, so the
      // first start of such a group is the first event's, and each start binds where it was
      // written from (a start passes over activities that carry a flow already).
      if (score > best_score || (score == best_score && !device_flow)) {
        best = static_cast<std::uint32_t>(k);
        best_score = score;
      }
    }
    if (best != no_slot) return best;
    // Otherwise the innermost event that encloses ts (a bounded look back).
    std::size_t k = lb;
    for (int steps = 0; k > first && steps < 256; ++steps) {
      --k;
      if (events_.end_ns(by_track[k]) >= f.ts) return static_cast<std::uint32_t>(k);
    }
    return no_slot;
  }

  static constexpr std::size_t parallel_flows = std::size_t{1} << 16;  // flows sorted aside

  std::span<const raw_flow> flows_;
  scratch_vector<std::uint32_t> event_track_;
  scratch_vector<bind_key> event_keys_;
  std::size_t tracks_;
  const string_table& strings_;
  const thread_options& opt_;
  flow_events& events_;
  anomaly_counts& anomalies_;
  table_vector<flow_link>& links_;
  // The binding's state, step to step.
  std::vector<std::size_t> track_begin_;  // each track's first slot
  detail::fill_vector<event_index> by_track_;
  detail::fill_vector<bind_key> keys_;
  detail::fill_vector<std::uint32_t> flow_track_, lower_;
  detail::scratch_vector<std::pair<std::uint64_t, pending>> fb_;
  std::optional<detail::id_map> device_starts_;  // device flow id -> the slot of its start
  detail::scratch_vector<std::pair<std::uint64_t, std::uint32_t>> started_;      // (id, slot)
  detail::scratch_vector<std::pair<std::uint64_t, std::uint32_t>> device_ends_;  // (id, slot)
};

TRACEMODEL_READER_API void bind_flows(flow_records in, const string_table& strings,
                                      const thread_options& opt, flow_events& events,
                                      anomaly_counts& anomalies, table_vector<flow_link>& links) {
  flow_binder(std::move(in), strings, opt, events, anomalies, links).run();
}

#endif  // TRACEMODEL_READER_DEFINITIONS

}  // namespace detail::chrome_trace
TRACEMODEL_END_NAMESPACE
