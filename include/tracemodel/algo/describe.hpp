// tracemodel/algo — summary statistics of a series, as pandas' describe() gives them.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "tracemodel/config.hpp"

TRACEMODEL_BEGIN_NAMESPACE

/// count, mean, std (n - 1), min, 25%, 50%, 75%, max; NaN where pandas' describe() has NaN.
struct interval_stats {
  std::uint64_t count = 0;
  double mean = NAN, std = NAN, min = NAN, q25 = NAN, q50 = NAN, q75 = NAN, max = NAN;
};

/// Statistics of `v` (sorted here), as pandas' describe().
template <class T>
[[nodiscard]] interval_stats describe(std::vector<T> v) {
  interval_stats s;
  s.count = v.size();
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  double sum = 0;
  for (const auto x : v) sum += static_cast<double>(x);
  s.mean = sum / static_cast<double>(v.size());
  if (v.size() > 1) {
    double sq = 0;
    for (const auto x : v)
      sq += (static_cast<double>(x) - s.mean) * (static_cast<double>(x) - s.mean);
    s.std = std::sqrt(sq / static_cast<double>(v.size() - 1));
  }
  auto q = [&](double p) {
    const double h = p * static_cast<double>(v.size() - 1);
    const auto lo = static_cast<std::size_t>(std::floor(h));
    const std::size_t hi = std::min(lo + 1, v.size() - 1);
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

TRACEMODEL_END_NAMESPACE
