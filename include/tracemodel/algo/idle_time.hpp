// tracemodel/algo — why each stream is idle: waiting for the host, or between kernels.
//
//   auto rows = tracemodel::idle_time_breakdown(table);                       // exact, ns
//   auto hta = tracemodel::idle_time_breakdown(table, tracemodel::hta_idle_time{});
//
// The work of each stream (kernels, copies, sets) in start order; before each but the first
// lies a gap from the end of the one before it (negative when they overlap). The gap is
//   host wait    when the runtime call that launched the work started after that end (the
//                device had nothing to do until the host asked),
//   kernel wait  else when it is shorter than `threshold` (the usual launch-to-launch gap),
//   other        else (and the first work of a stream, which has no gap).
// Per stream and category: the summed gaps, their share of the stream's summed gaps (empty when
// that sum is 0), and statistics of the gaps (count, mean, sample standard deviation, min,
// quartiles by linear interpolation, max). Policies:
//  - `exact_idle_time` (default): streams keyed by (device, stream), nanoseconds, the launching
//    call found by correlation id among runtime and driver calls, threshold 30 us;
//  - `hta_idle_time`: HTA's frame (hta_frame.hpp), streams keyed by stream alone, whole
//    microseconds, the launching call its correlation partner, threshold 30 (us), and its
//    statistics rounded to two decimals, as HTA prints them.
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
#include "tracemodel/algo/hta_frame.hpp"
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

/// The breakdown of `work`, streams in order of their first work in `work`.
[[nodiscard]] inline std::vector<idle_row> idle_time_breakdown(std::span<const stream_work> work,
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
  std::vector<idle_row> rows;
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

/// The default: device work on a stream, in nanoseconds, launched by the runtime or driver call
/// with its correlation id.
struct exact_idle_time {
  std::int64_t threshold = 30'000;  ///< ns

  template <class Schema>
  [[nodiscard]] std::vector<idle_row> operator()(const basic_event_table<Schema>& t) const {
    return (*this)(t, device_view(t));
  }
  template <class Schema>
  [[nodiscard]] std::vector<idle_row> operator()(
      [[maybe_unused]] const basic_event_table<Schema>& t, const device_view& v) const {
    table_vector<stream_work> work;
    work.reserve(v.work.size());
    for (const device_work& d : v.work) {
      if (!is_queued_work(d.activity)) continue;
      stream_work w{d.device, d.stream, d.start, d.end, std::nullopt};
      if (d.call != no_event) w.launched = d.launched;
      work.push_back(w);
    }
    return idle_time_breakdown(work, threshold);
  }
};

/// Holistic Trace Analysis's idle time breakdown (hta-analyses.md, section 4).
struct hta_idle_time {
  std::int64_t threshold = 30;  ///< us (HTA's `consecutive_kernel_delay`)
  bool drop_last_step = false;  ///< as hta_device_time's

  template <class Schema>
  [[nodiscard]] std::vector<idle_row> operator()(const basic_event_table<Schema>& t) const {
    return (*this)(t, hta_frame(t, drop_last_step));
  }
  template <class Schema>
  [[nodiscard]] std::vector<idle_row> operator()(
      [[maybe_unused]] const basic_event_table<Schema>& t, const hta_frame& f) const {
    auto counted = [](const hta_row& r) {
      return r.stream != -1 && (r.flags & hta_flag::idle_cat) != 0;
    };
    std::vector<stream_work> work;
    work.reserve(static_cast<std::size_t>(std::count_if(f.rows.begin(), f.rows.end(), counted)));
    for (const hta_row& r : f.rows) {
      if (!counted(r)) continue;
      stream_work w{-1, r.stream, r.ts, r.end, std::nullopt};
      if (r.partner != -1) w.launched = f.rows[static_cast<std::size_t>(r.partner)].ts;
      work.push_back(w);
    }
    std::vector<idle_row> rows = idle_time_breakdown(work, threshold);
    for (idle_row& r : rows) {  // HTA rounds what it prints to two decimals
      if (r.ratio) r.ratio = detail::round_decimals(*r.ratio, 2);
      for (double* x : {&r.stats.mean, &r.stats.std, &r.stats.min, &r.stats.q25, &r.stats.q50,
                        &r.stats.q75, &r.stats.max})
        if (!std::isnan(*x)) *x = detail::round_decimals(*x, 2);
    }
    return rows;
  }
};

/// The idle time breakdown of `t` under `policy` (default: exact).
template <class Schema, class Policy = exact_idle_time>
[[nodiscard]] std::vector<idle_row> idle_time_breakdown(const basic_event_table<Schema>& t,
                                                        const Policy& policy = {}) {
  return policy(t);
}

TRACEMODEL_END_NAMESPACE
