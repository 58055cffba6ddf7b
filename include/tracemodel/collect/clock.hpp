// tracemodel/collect — clocks for the hot path and their conversion to wall-clock nanoseconds.
//
// The hot path reads an approximate clock (the time-stamp counter where the target has one,
// the steady clock otherwise) and stores raw ticks. Materialization converts ticks to
// nanoseconds since the Unix epoch with a `time_converter` calibrated between two sync points:
// one taken when a record queue is created and one taken when it is materialized.
//
// A clock is a policy (`approx_clock` in collect/concepts.hpp): `static approx_time now()
// noexcept`, monotonic per thread, and `static constexpr bool ticks_are_ns` (true when ticks
// already are steady nanoseconds).
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <concepts>
#include <cstdint>
#include <thread>
#include <utility>
#include <vector>

#include "tracemodel/collect/concepts.hpp"
#include "tracemodel/config.hpp"

#if TRACEMODEL_USE_TSC
#if defined(_MSC_VER)
#include <intrin.h>
#else
#include <x86intrin.h>
#endif
#endif

TRACEMODEL_BEGIN_NAMESPACE

/// Steady-clock nanoseconds: portable, about twice as dear to read as the time-stamp counter.
struct steady_clock_source {
  static constexpr bool ticks_are_ns = true;
  static approx_time now() noexcept {
    return static_cast<approx_time>(std::chrono::steady_clock::now().time_since_epoch().count());
  }
};
static_assert(std::is_same_v<std::chrono::steady_clock::period, std::nano>);

#if TRACEMODEL_USE_TSC
/// The time-stamp counter (`rdtsc`, no fence): the cheapest clock to read where there is one.
struct tsc_clock {
  static constexpr bool ticks_are_ns = false;
  static approx_time now() noexcept { return static_cast<approx_time>(__rdtsc()); }
};
using default_clock = tsc_clock;
#else
using default_clock = steady_clock_source;
#endif

static_assert(approx_clock<steady_clock_source>);
static_assert(approx_clock<default_clock>);

/// Nanoseconds since the Unix epoch.
inline std::int64_t wall_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

/// A pair of simultaneous readings of the approximate clock and the wall clock.
struct clock_sync_point {
  approx_time approx = 0;
  std::int64_t wall = 0;

  /// Takes a few readings and keeps the one whose approximate-clock bracket is the tightest.
  template <approx_clock Clock>
  static clock_sync_point take() noexcept {
    clock_sync_point best{};
    approx_time best_width = ~approx_time{0};
    for (int i = 0; i < 5; ++i) {
      const approx_time a0 = Clock::now();
      const std::int64_t w = wall_ns();
      const approx_time a1 = Clock::now();
      if (a1 - a0 < best_width) {
        best_width = a1 - a0;
        best = {a0 + (a1 - a0) / 2, w};
      }
    }
    return best;
  }
  /// `b`, or, when it is less than `min_span_ns` after `a` (or its ticks are not later), a point
  /// taken once it is: a slope measured between two points is noisy over a short span. Clocks
  /// whose ticks already are nanoseconds need no slope: `b` as it is.
  template <approx_clock Clock>
  static clock_sync_point settled(clock_sync_point a, clock_sync_point b,
                                  std::int64_t min_span_ns = 2'000'000) {
    if constexpr (!Clock::ticks_are_ns)
      while (b.wall - a.wall < min_span_ns || b.approx <= a.approx) {
        std::this_thread::sleep_for(std::chrono::nanoseconds(min_span_ns - (b.wall - a.wall)));
        b = take<Clock>();
      }
    return b;
  }
};

/// Linear map from approximate-clock ticks to nanoseconds since the Unix epoch.
class time_converter {
 public:
  time_converter() = default;
  time_converter(clock_sync_point origin, double ns_per_tick) noexcept
      : origin_(origin), ns_per_tick_(ns_per_tick) {}

  /// The converter through two sync points. Clocks whose ticks already are nanoseconds use
  /// slope 1 (no drift estimate needed); otherwise the slope is measured between the points,
  /// and when they are less than `min_span_ns` apart, the calibration waits until they are
  /// not (a short session would otherwise give a noisy slope).
  template <approx_clock Clock>
  static time_converter between(clock_sync_point a, clock_sync_point b,
                                std::int64_t min_span_ns = 2'000'000) {
    return through<Clock>(a, clock_sync_point::settled<Clock>(a, b, min_span_ns));
  }
  /// The line through `a` and `b` as they are (slope 1 for nanosecond ticks, or when their
  /// ticks are equal).
  template <approx_clock Clock>
  static time_converter through(clock_sync_point a, clock_sync_point b) noexcept {
    if (Clock::ticks_are_ns || b.approx == a.approx) return time_converter(a, 1.0);
    return time_converter(
        a, static_cast<double>(b.wall - a.wall) / static_cast<double>(b.approx - a.approx));
  }

  [[nodiscard]] std::int64_t operator()(approx_time t) const noexcept {
    // Signed tick difference: events may predate the origin by a little (other threads).
    const auto d = static_cast<std::int64_t>(t - origin_.approx);
    return origin_.wall + static_cast<std::int64_t>(static_cast<double>(d) * ns_per_tick_);
  }
  [[nodiscard]] double ns_per_tick() const noexcept { return ns_per_tick_; }
  [[nodiscard]] clock_sync_point origin() const noexcept { return origin_; }

 private:
  clock_sync_point origin_{};
  double ns_per_tick_ = 1.0;
};

/// Ticks to nanoseconds over a session of hours: a line per stretch between sync points taken
/// now and then (`sync`, at each drain of a live queue), since one line fitted over hours
/// drifts. The first point is taken on construction; the second at least 2 ms after it.
template <approx_clock Clock>
class piecewise_time_converter {
 public:
  piecewise_time_converter() {
    points_.push_back(clock_sync_point::take<Clock>());
    last_line();
  }
  /// Through points taken earlier (a crash file's), in order; at least one.
  explicit piecewise_time_converter(std::vector<clock_sync_point> points)
      : points_(std::move(points)) {
    last_line();
  }
  /// A sync point now: a new stretch once the last one is `stretch_ns` old, else the last point
  /// moves here. At most 4,096 points are kept (the oldest half after the first goes).
  void sync(std::int64_t stretch_ns = 100'000'000) {
    clock_sync_point now = clock_sync_point::take<Clock>();
    if (points_.size() == 1) now = clock_sync_point::settled<Clock>(points_.front(), now);
    if (points_.size() == 1 || now.wall - points_.back().wall >= stretch_ns)
      points_.push_back(now);
    else if (now.approx > points_.back().approx)
      points_.back() = now;
    if (points_.size() > 4096) points_.erase(points_.begin() + 1, points_.begin() + 2049);
    last_line();
  }
  /// `t` in nanoseconds since the Unix epoch, by the line of its stretch (the first or last
  /// stretch's beyond the points).
  [[nodiscard]] const std::vector<clock_sync_point>& points() const noexcept { return points_; }
  [[nodiscard]] TRACEMODEL_ALWAYS_INLINE std::int64_t operator()(approx_time t) const {
    if (t >= from_) [[likely]]  // most ticks: the last stretch
      return last_(t);
    return earlier(t);
  }

 private:
  [[nodiscard]] TRACEMODEL_NOINLINE std::int64_t earlier(approx_time t) const {
    const std::size_t n = points_.size();
    if (n == 1) return last_(t);
    const auto it =
        std::upper_bound(points_.begin(), points_.end(), t,
                         [](approx_time x, const clock_sync_point& p) { return x < p.approx; });
    const std::size_t hi =
        std::clamp<std::size_t>(static_cast<std::size_t>(it - points_.begin()), 1, n - 1);
    return time_converter::through<Clock>(points_[hi - 1], points_[hi])(t);
  }

  /// The last stretch's line, and where it starts.
  void last_line() {
    const std::size_t n = points_.size();
    if (n == 0) return;
    last_ = n == 1 ? time_converter::through<Clock>(points_[0], points_[0])
                   : time_converter::through<Clock>(points_[n - 2], points_[n - 1]);
    from_ = n == 1 ? 0 : points_[n - 2].approx;
  }

  std::vector<clock_sync_point> points_;
  time_converter last_;
  approx_time from_ = 0;
};

namespace detail {
inline std::atomic<std::uint64_t> next_thread_id{1};

/// What a recording thread keeps of its own: its small id (0 until it asks), and how many ops it
/// has begun and not ended (in any queue): the depth the next op it begins records. Constant
/// initialized, so that reaching it costs no guard.
struct recording_thread {
  std::uint64_t id = 0;
  std::uint32_t open_ops = 0;
};
inline thread_local recording_thread this_thread_state{};
}  // namespace detail

/// The recording runtime's own small thread id: 1 for the first thread that asks, then 2, 3...
/// (as PyTorch's RecordFunction thread ids). Stable for the thread's life, never reused.
inline std::uint64_t current_thread_id() noexcept {
  detail::recording_thread& self = detail::this_thread_state;
  if (self.id == 0) [[unlikely]]
    self.id = detail::next_thread_id.fetch_add(1, std::memory_order_relaxed);
  return self.id;
}

TRACEMODEL_END_NAMESPACE
