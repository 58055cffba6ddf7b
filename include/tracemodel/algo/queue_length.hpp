// tracemodel/algo — how deep each stream's queue runs, and the bandwidth of copies and sets.
//
//   auto q = tracemodel::queue_length(table);                          // ns
//   auto bw = tracemodel::memory_bandwidth(table);
//
// Queue length: work launched on a stream and not started yet. Each launching call adds one at
// its start, each piece of work takes one away at its start; the series is the running count
// per stream, one step per change, with its summary (pandas' describe()) and the time the queue
// spent at or above `full` (the device runtime's limit; 1024 for CUDA). Streams are keyed by
// (device, stream); the calls are every runtime or driver call that has device work with its
// correlation id; a start and a launch at one instant take the start first.
// Memory bandwidth: per memory kind (`Memcpy DtoH`, `Memset`, ...: the first 11 characters of a
// copy's name), the running sum of the bandwidth of each copy or set while it runs, recomputed
// from its `bytes` and its duration (bytes per ns are GB/s; those without bytes or duration are
// left out; an end before a start at one instant), summarized over the steps where it is above
// 0. `detail::queues_of` and `detail::bandwidth_of` make the series from changes of any unit.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tracemodel/algo/describe.hpp"
#include "tracemodel/algo/device_time.hpp"
#include "tracemodel/algo/measure.hpp"
#include "tracemodel/config.hpp"
#include "tracemodel/model/table.hpp"

TRACEMODEL_BEGIN_NAMESPACE

struct queue_step {
  std::int64_t ts = 0;
  std::int64_t length = 0;
};

struct stream_queue {
  std::int32_t device = -1;
  std::int64_t stream = -1;
  row_list<queue_step> steps;  ///< in time order
  interval_stats summary;      ///< of the steps' lengths
  std::int64_t time_full = 0;  ///< time at or above `full` (to the last step)
};

namespace detail {
struct queue_change {
  std::int32_t device;
  std::int64_t stream, ts;
  int delta;
};
/// Fills a queue's summary and time full from its steps.
inline void summarize_queue(stream_queue& q, std::int64_t full) {
  scratch_vector<std::int64_t> lengths;
  lengths.reserve(q.steps.size());
  for (std::size_t k = 0; k < q.steps.size(); ++k) {
    lengths.push_back(q.steps[k].length);
    if (k + 1 < q.steps.size() && q.steps[k].length >= full)
      q.time_full += q.steps[k + 1].ts - q.steps[k].ts;
  }
  q.summary = describe(std::move(lengths));
}

/// Queues from changes, in the given order at equal times; streams by (device, stream).
template <class Changes>  // a vector of queue_change
row_list<stream_queue> queues_of(Changes changes, std::int64_t full) {
  auto by_time = [](const queue_change& a, const queue_change& b) { return a.ts < b.ts; };
  if (!std::is_sorted(changes.begin(), changes.end(), by_time))
    std::stable_sort(changes.begin(), changes.end(), by_time);
  std::map<std::pair<std::int32_t, std::int64_t>, stream_queue> by;
  std::map<std::pair<std::int32_t, std::int64_t>, std::size_t> steps;  // each stream's count
  for (const queue_change& c : changes) ++steps[{c.device, c.stream}];
  for (const auto& [key, n] : steps) by[key].steps.reserve(n);
  for (const queue_change& c : changes) {
    stream_queue& q = by[{c.device, c.stream}];
    q.device = c.device;
    q.stream = c.stream;
    const std::int64_t before = q.steps.empty() ? 0 : q.steps.back().length;
    q.steps.push_back({c.ts, before + c.delta});
  }
  row_list<stream_queue> out;
  for (auto& [key, q] : by) {
    summarize_queue(q, full);
    out.push_back(std::move(q));
  }
  return out;
}
}  // namespace detail

struct queue_length_options {
  std::int64_t full = 1024;  ///< the runtime's limit of queued work per stream
};

/// The queues of a view made already.
[[nodiscard]] inline row_list<stream_queue> queue_length(const device_view& v,
                                                         const queue_length_options& o = {}) {
  // Each stream's launches and starts, grouped by stream (in (device, stream) order): one
  // stream's queue at a time, from its own times.
  auto queued = [](const device_work& d) {
    return is_queued_work(d.activity) && d.call != no_event;
  };
  std::map<std::pair<std::int32_t, std::int64_t>, std::size_t> at;  // count, then offset
  for (const device_work& d : v.work)
    if (queued(d)) ++at[{d.device, d.stream}];
  std::size_t n = 0;
  for (auto& [key, x] : at) n += std::exchange(x, n);
  detail::scratch_vector<std::int64_t> starts(n), launches(n);
  for (const device_work& d : v.work) {
    if (!queued(d)) continue;
    const std::size_t i = at[{d.device, d.stream}]++;  // (now the group's end)
    starts[i] = d.start;
    launches[i] = d.launched;
  }
  row_list<stream_queue> out;
  std::size_t from = 0;
  for (const auto& [key, to] : at) {
    stream_queue& q = out.emplace_back();
    q.device = key.first;
    q.stream = key.second;
    const auto s = std::span(starts).subspan(from, to - from);
    const auto l = std::span(launches).subspan(from, to - from);
    from = to;
    for (const auto x : {s, l})
      if (!std::is_sorted(x.begin(), x.end())) std::sort(x.begin(), x.end());
    // In time order, a start before a launch at one instant.
    q.steps.reserve(2 * s.size());
    std::int64_t length = 0;
    for (std::size_t i = 0, j = 0; i < s.size() || j < l.size();) {
      const bool start = j == l.size() || (i < s.size() && s[i] <= l[j]);
      length += start ? -1 : +1;
      q.steps.push_back({start ? s[i++] : l[j++], length});
    }
    detail::summarize_queue(q, o.full);
  }
  return out;
}
/// The queue length of each stream of `t` (see above).
template <class Schema>
[[nodiscard]] row_list<stream_queue> queue_length(const basic_event_table<Schema>& t,
                                                  const queue_length_options& o = {}) {
  return queue_length(device_view(t), o);
}

/// The running bandwidth of one memory kind, and its summary over the steps above 0.
struct bandwidth_step {
  std::int64_t ts = 0;
  double gbps = 0;
};
struct memory_bandwidth_series {
  std::string kind;                ///< "Memcpy DtoH", "Memset", ...
  row_list<bandwidth_step> steps;  ///< in time order
  interval_stats summary;
};

/// The memory kind of a copy's or set's name.
[[nodiscard]] inline std::string memory_kind(std::string_view name) {
  if (name.starts_with("Memset")) return "Memset";
  if (!name.starts_with("Memcpy")) return "Memcpy Unknown";
  return std::string(name.substr(0, 11));
}

namespace detail {
struct bw_change {
  std::int64_t ts;
  double bw;
  std::string kind;
};
/// Running sums per kind from changes in time order (summed in the order given), summarized
/// above 0.
inline row_list<memory_bandwidth_series> bandwidth_in_order(const std::vector<bw_change>& changes) {
  std::map<std::string, memory_bandwidth_series> by;
  for (const bw_change& c : changes) {
    memory_bandwidth_series& s = by[c.kind];
    s.kind = c.kind;
    const double before = s.steps.empty() ? 0.0 : s.steps.back().gbps;
    s.steps.push_back({c.ts, before + c.bw});
  }
  row_list<memory_bandwidth_series> out;
  for (auto& [kind, s] : by) {
    std::vector<double> above;
    for (const bandwidth_step& x : s.steps)
      if (x.gbps > 0) above.push_back(x.gbps);
    if (above.empty()) continue;
    s.summary = describe(std::move(above));
    out.push_back(std::move(s));
  }
  return out;
}
/// The same of changes in any order (stable at equal times).
inline row_list<memory_bandwidth_series> bandwidth_of(std::vector<bw_change> changes) {
  std::stable_sort(changes.begin(), changes.end(),
                   [](const bw_change& a, const bw_change& b) { return a.ts < b.ts; });
  return bandwidth_in_order(changes);
}
}  // namespace detail

/// The bandwidth series of a view made already.
template <class Schema>
[[nodiscard]] row_list<memory_bandwidth_series> memory_bandwidth(const basic_event_table<Schema>& t,
                                                                 const device_view& v) {
  std::vector<detail::bw_change> changes;
  for (const device_work& w : v.work) {
    if (w.activity != activity_type::gpu_memcpy && w.activity != activity_type::gpu_memset)
      continue;
    const auto& e = t.events[w.event];
    const auto* d = e.template get_if<event_kind::device_activity>();
    if (d->bytes == 0 || d->end_ns <= e.start_ns) continue;
    const double bw = static_cast<double>(d->bytes) / static_cast<double>(d->end_ns - e.start_ns);
    const std::string kind = d->activity == activity_type::gpu_memset
                                 ? std::string("Memset")
                                 : memory_kind(t.strings.view(d->name));
    changes.push_back({d->end_ns, -bw, kind});
    changes.push_back({e.start_ns, bw, kind});
  }
  std::stable_sort(changes.begin(), changes.end(),
                   [](const detail::bw_change& a, const detail::bw_change& b) {
                     return a.ts != b.ts ? a.ts < b.ts : a.bw < b.bw;
                   });
  return detail::bandwidth_of(std::move(changes));
}
/// The memory bandwidth of each kind of copy and set of `t` (see above).
template <class Schema>
[[nodiscard]] row_list<memory_bandwidth_series> memory_bandwidth(
    const basic_event_table<Schema>& t) {
  return memory_bandwidth(t, device_view(t));
}

TRACEMODEL_END_NAMESPACE
