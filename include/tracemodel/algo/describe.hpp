// tracemodel/algo — summary statistics of a series, as pandas' describe() gives them.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "tracemodel/config.hpp"

TRACEMODEL_BEGIN_NAMESPACE

/// count, mean, std (n - 1), min, 25%, 50%, 75%, max; NaN where pandas' describe() has NaN.
struct interval_stats {
  std::uint64_t count = 0;
  double mean = NAN, std = NAN, min = NAN, q25 = NAN, q50 = NAN, q75 = NAN, max = NAN;
};

/// Statistics of `v`, as pandas' describe(): the moments summed in the order given, the
/// quantiles interpolated linearly between order statistics (found by selection; `v` is
/// reordered).
template <class T, class A>
[[nodiscard]] interval_stats describe(std::vector<T, A> v) {
  interval_stats s;
  s.count = v.size();
  if (v.empty()) return s;
  double sum = 0;
  for (const auto x : v) sum += static_cast<double>(x);
  s.mean = sum / static_cast<double>(v.size());
  if (v.size() > 1) {
    double sq = 0;
    for (const auto x : v)
      sq += (static_cast<double>(x) - s.mean) * (static_cast<double>(x) - s.mean);
    s.std = std::sqrt(sq / static_cast<double>(v.size() - 1));
  }
  // The order statistics needed, smallest first: each selection works on what lies above the
  // one before it.
  const std::size_t last = v.size() - 1;
  std::size_t places[8] = {0, last};
  std::size_t n = 2;
  for (const double p : {0.25, 0.5, 0.75}) {
    const auto lo = static_cast<std::size_t>(std::floor(p * static_cast<double>(last)));
    places[n++] = lo;
    places[n++] = std::min(lo + 1, last);
  }
  std::sort(places, places + n);
  n = static_cast<std::size_t>(std::unique(places, places + n) - places);
  std::size_t from = 0;
  for (std::size_t k = 0; k < n; ++k) {
    const auto first = v.begin() + static_cast<std::ptrdiff_t>(from);
    std::nth_element(first, v.begin() + static_cast<std::ptrdiff_t>(places[k]), v.end());
    from = places[k] + 1;
  }
  auto q = [&](double p) {
    const double h = p * static_cast<double>(last);
    const auto lo = static_cast<std::size_t>(std::floor(h));
    const std::size_t hi = std::min(lo + 1, last);
    return static_cast<double>(v[lo]) +
           (h - static_cast<double>(lo)) *
               (static_cast<double>(v[hi]) - static_cast<double>(v[lo]));
  };
  s.min = static_cast<double>(v.front());
  s.q25 = q(0.25);
  s.q50 = q(0.5);
  s.q75 = q(0.75);
  s.max = static_cast<double>(v.back());
  return s;
}

/// The statistics under pandas' names, in describe()'s order ("count", "mean", "std", "min",
/// "25%", "50%", "75%", "max").
[[nodiscard]] inline std::array<std::pair<std::string_view, double>, 8> describe_fields(
    const interval_stats& s) {
  return {{{"count", static_cast<double>(s.count)},
           {"mean", s.mean},
           {"std", s.std},
           {"min", s.min},
           {"25%", s.q25},
           {"50%", s.q50},
           {"75%", s.q75},
           {"max", s.max}}};
}

TRACEMODEL_END_NAMESPACE
