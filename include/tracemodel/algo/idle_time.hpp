// tracemodel/algo — why each stream is idle: waiting for the host, or between kernels.
//
//   auto rows = tracemodel::idle_time_breakdown(table);                       // ns
//   auto wider = tracemodel::idle_time_breakdown(table, {.threshold = 100'000});
//
// The work of each stream (kernels, copies, sets) in start order; before each but the first
// lies a gap from the end of the one before it (negative when they overlap). The gap is
//   host wait    when the runtime call that launched the work started after that end (the
//                device had nothing to do until the host asked),
//   kernel wait  else when it is shorter than `threshold` (the usual launch-to-launch gap),
//   other        else (and the first work of a stream, which has no gap).
// Per stream and category: the summed gaps, their share of the stream's summed gaps (empty when
// that sum is 0), and statistics of the gaps (count, mean, sample standard deviation, min,
// quartiles by linear interpolation, max). Streams are keyed by (device, stream); the launching
// call is the runtime or driver call with the work's correlation id; the threshold is 30 us.
// `idle_time_breakdown(work, threshold)` is the same rule on work of any unit.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tracemodel/algo/describe.hpp"
#include "tracemodel/algo/device_time.hpp"
#include "tracemodel/algo/measure.hpp"
#include "tracemodel/algo/temporal_breakdown.hpp"
#include "tracemodel/config.hpp"
#include "tracemodel/detail/assert.hpp"
#include "tracemodel/model/table.hpp"

TRACEMODEL_BEGIN_NAMESPACE

enum class idle_category : std::uint8_t { host_wait, kernel_wait, other };
inline constexpr std::string_view idle_category_names[] = {"host_wait", "kernel_wait", "other"};

/// One piece of work on a stream, and when the call that launched it started (if known).
struct stream_work {
  std::int32_t device = -1;
  std::int64_t stream = -1;
  std::int64_t start = 0, end = 0;
  std::optional<std::int64_t> launched;
};

struct idle_row {
  std::int32_t device = -1;
  std::int64_t stream = -1;
  idle_category category = idle_category::other;
  std::int64_t idle_time = 0;
  std::optional<double> ratio;  ///< of the stream's idle time; empty when that is 0
  interval_stats stats;
};

/// The breakdown of `work`, streams in order of their first work in `work` (times and threshold
/// in one unit).
[[nodiscard]] inline row_list<idle_row> idle_time_breakdown(std::span<const stream_work> work,
                                                            std::int64_t threshold) {
  if (work.size() > std::numeric_limits<std::uint32_t>::max())
    throw usage_error("idle_time_breakdown: more than 2^32 pieces of work");
  // Each stream's work as positions in `work`, grouped by stream (a counting sort).
  std::vector<std::pair<std::int32_t, std::int64_t>> order;  // the streams, first seen first
  std::vector<std::size_t> at;                               // each stream's count, then end
  detail::scratch_vector<std::uint32_t> stream_of(work.size());
  {
    std::unordered_map<std::int64_t, std::uint32_t> index;
    for (std::size_t i = 0; i < work.size(); ++i) {
      const stream_work& w = work[i];
      const auto [it, fresh] =
          index.try_emplace((static_cast<std::int64_t>(w.device) << 40) ^ w.stream,
                            static_cast<std::uint32_t>(order.size()));
      if (fresh) {
        order.emplace_back(w.device, w.stream);
        at.push_back(0);
      }
      stream_of[i] = it->second;
      ++at[it->second];
    }
  }
  std::size_t n = 0;
  for (std::size_t& x : at) n += std::exchange(x, n);
  detail::scratch_vector<std::uint32_t> grouped(work.size());
  for (std::size_t i = 0; i < work.size(); ++i)
    grouped[at[stream_of[i]]++] = static_cast<std::uint32_t>(i);
  row_list<idle_row> rows;
  std::size_t from = 0;
  for (std::size_t s = 0; s < order.size(); ++s) {
    const auto [device, stream] = order[s];
    const auto v = std::span(grouped).subspan(from, at[s] - from);
    from = at[s];
    auto by_start = [&](std::uint32_t a, std::uint32_t b) { return work[a].start < work[b].start; };
    if (!std::is_sorted(v.begin(), v.end(), by_start))  // a table's work mostly is
      std::stable_sort(v.begin(), v.end(), by_start);
    detail::scratch_vector<std::int64_t> gaps[3];
    for (auto& g : gaps) g.reserve(v.size());  // (untouched pages cost nothing)
    bool present[3] = {false, false, true};    // the first work of a stream is `other`
    for (std::size_t k = 1; k < v.size(); ++k) {
      const std::int64_t prev_end = work[v[k - 1]].end;
      const stream_work& w = work[v[k]];
      const std::int64_t gap = w.start - prev_end;
      const idle_category c = w.launched && *w.launched > prev_end ? idle_category::host_wait
                              : gap < threshold                    ? idle_category::kernel_wait
                                                                   : idle_category::other;
      gaps[static_cast<int>(c)].push_back(gap);
      present[static_cast<int>(c)] = true;
    }
    std::int64_t total = 0;
    std::int64_t sums[3] = {0, 0, 0};
    for (int c = 0; c < 3; ++c) {
      for (const auto g : gaps[c]) sums[c] += g;
      total += sums[c];
    }
    for (int c = 0; c < 3; ++c) {
      if (!present[c]) continue;
      idle_row r{device,  stream,       static_cast<idle_category>(c),
                 sums[c], std::nullopt, describe(gaps[c])};
      if (total != 0) r.ratio = static_cast<double>(sums[c]) / static_cast<double>(total);
      rows.push_back(r);
    }
  }
  return rows;
}

struct idle_time_options {
  std::int64_t threshold = 30'000;  ///< ns: shorter gaps wait for the kernel before
};

/// The breakdown of a view made already.
[[nodiscard]] inline row_list<idle_row> idle_time_breakdown(const device_view& v,
                                                            const idle_time_options& o = {}) {
  row_list<stream_work> work;
  work.reserve(v.work.size());
  for (const device_work& d : v.work) {
    if (!is_queued_work(d.activity)) continue;
    stream_work w{d.device, d.stream, d.start, d.end, std::nullopt};
    if (d.call != no_event) w.launched = d.launched;
    work.push_back(w);
  }
  return idle_time_breakdown(work, o.threshold);
}
/// The idle time breakdown of `t` (see above).
template <class Schema>
[[nodiscard]] row_list<idle_row> idle_time_breakdown(const basic_event_table<Schema>& t,
                                                     const idle_time_options& o = {}) {
  return idle_time_breakdown(device_view(t), o);
}

TRACEMODEL_END_NAMESPACE
