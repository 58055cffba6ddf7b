// tracemodel/algo — device time by kernel class and by their overlaps, over ranks.
//
//   std::vector<std::vector<device_interval>> ranks = ...;   // one per rank
//   for (const auto& row : tracemodel::kernel_type_breakdown(ranks)) ...
//
// Per rank, the intervals of each of computation, communication and memory are merged; the
// time when exactly a set of them runs is labelled "COMPUTATION", "COMMUNICATION overlapping
// MEMORY", ... (names in that order, joined by " overlapping "). The rows are the labels' sums
// over the ranks, largest first, with the share of the total rounded to one decimal; labels
// with no time are left out. `other` intervals (synchronization) are not counted.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <initializer_list>
#include <ranges>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "tracemodel/algo/device_time.hpp"
#include "tracemodel/algo/temporal_breakdown.hpp"
#include "tracemodel/config.hpp"

TRACEMODEL_BEGIN_NAMESPACE

struct kernel_type_row {
  std::string kernel_type;
  std::int64_t sum = 0;
  double percentage = 0;
};

/// The time of each set of classes (bit 0 computation, 1 communication, 2 memory) in one rank.
[[nodiscard]] inline std::array<std::int64_t, 8> class_overlap_times(
    std::span<const device_interval> iv) {
  // (time, +bit or -bit), in time order: each class's merged spans are disjoint and sorted, so
  // its edges are; the three lists are merged (the order at one instant adds no time).
  table_vector<std::pair<std::int64_t, int>> edges;
  auto by_time = [](const std::pair<std::int64_t, int>& a, const std::pair<std::int64_t, int>& b) {
    return a.first < b.first;
  };
  for (int c = 0; c < 3; ++c) {
    const auto cls = static_cast<kernel_class>(c);
    const std::size_t from = edges.size();
    for (const span& s :
         merge_intervals(iv, [cls](const device_interval& d) { return d.cls == cls; })) {
      edges.emplace_back(s.start, 1 << c);
      edges.emplace_back(s.end, -(1 << c));
    }
    const auto mid = edges.begin() + static_cast<std::ptrdiff_t>(from);
    if (!std::is_sorted(mid, edges.end(), by_time))  // (rounded times: an end before its start)
      std::sort(mid, edges.end());
    std::inplace_merge(edges.begin(), mid, edges.end(), by_time);
  }
  std::array<std::int64_t, 8> t{};
  int running = 0;
  for (std::size_t k = 0; k + 1 < edges.size(); ++k) {
    running += edges[k].second;
    if (running > 0 && running < 8)
      t[static_cast<std::size_t>(running)] += edges[k + 1].first - edges[k].first;
  }
  return t;
}

[[nodiscard]] inline std::string class_set_name(unsigned bits) {
  std::string s;
  for (unsigned c = 0; c < 3; ++c) {
    if ((bits & (1u << c)) == 0) continue;
    if (!s.empty()) s += " overlapping ";
    s += to_string(static_cast<kernel_class>(c));
  }
  return s;
}

/// The rows of the summed times of each set of classes (`class_overlap_times` over ranks).
[[nodiscard]] inline row_list<kernel_type_row> kernel_type_rows(
    const std::array<std::int64_t, 8>& sum) {
  std::int64_t total = 0;
  for (std::size_t b = 1; b < 8; ++b) total += sum[b];
  row_list<kernel_type_row> rows;
  for (unsigned b = 1; b < 8; ++b)
    if (sum[b] != 0)
      rows.push_back({class_set_name(b), sum[b], detail::percent_of(sum[b], total, 1)});
  std::stable_sort(
      rows.begin(), rows.end(),
      [](const kernel_type_row& a, const kernel_type_row& b) { return a.sum > b.sum; });
  return rows;
}

/// Over ranks: `ranks` is a range of each rank's intervals (`device_intervals`, a
/// `std::vector<device_interval>`, ...).
template <std::ranges::input_range Ranks>
requires std::ranges::contiguous_range<std::ranges::range_value_t<Ranks>>
[[nodiscard]] row_list<kernel_type_row> kernel_type_breakdown(const Ranks& ranks) {
  std::array<std::int64_t, 8> sum{};
  for (const auto& iv : ranks) {
    const auto t = class_overlap_times(std::span<const device_interval>(iv.data(), iv.size()));
    for (std::size_t b = 1; b < 8; ++b) sum[b] += t[b];
  }
  return kernel_type_rows(sum);
}
/// The same of a list: `kernel_type_breakdown({rank0, rank1})`.
[[nodiscard]] inline row_list<kernel_type_row> kernel_type_breakdown(
    std::initializer_list<std::span<const device_interval>> ranks) {
  return kernel_type_breakdown(std::vector<std::span<const device_interval>>(ranks));
}

TRACEMODEL_END_NAMESPACE
