// tracemodel/hta — HTA's kernel type breakdown (docs/hta-rules.md, "Kernel type breakdown"): the
// time of each set of kernel classes, swept in the order HTA's sorts leave the edges, with a row
// for every set the sweep passes through, even for no time.
//
//   const auto sets = tracemodel::hta::class_sets_of(tracemodel::hta::device_intervals(f));
//   const auto rows = tracemodel::hta::kernel_type_rows(sets);  // over one rank or summed ones
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "tracemodel/algo/device_time.hpp"
#include "tracemodel/algo/kernel_type_breakdown.hpp"
#include "tracemodel/algo/measure.hpp"
#include "tracemodel/config.hpp"
#include "tracemodel/hta/numpy.hpp"

TRACEMODEL_BEGIN_NAMESPACE
namespace hta {

/// A rank's (or a sum of ranks') time per set of classes (bit 0 computation, 1 communication,
/// 2 memory), and the sets HTA's sweep passed through (bit `b` of `seen` for set `b`).
struct class_sets {
  std::array<std::int64_t, 8> time{};
  unsigned seen = 0;

  class_sets& operator+=(const class_sets& o) {
    for (std::size_t b = 1; b < 8; ++b) time[b] += o.time[b];
    seen |= o.seen;
    return *this;
  }
};

/// HTA's sweep over one rank's intervals: each class's merged spans add their starts, then
/// their ends, to the edges sorted so far, and the whole list is sorted again (NumPy's unstable
/// sort) before the next class; the running sum of the edges' bits then names the set in force
/// from each edge to the next. Where a start and an end of two classes share a time, the set in
/// between lasts no time and is still a set the sweep passed through.
[[nodiscard]] inline class_sets class_sets_of(std::span<const device_interval> iv) {
  struct edge {
    std::int64_t time;
    int bits;
  };
  std::vector<edge> edges;
  std::vector<std::int64_t> times;
  for (int c = 0; c < 3; ++c) {
    const auto cls = static_cast<kernel_class>(c);
    const row_list<span> merged =
        merge_intervals(iv, [cls](const device_interval& d) { return d.cls == cls; });
    for (const span& s : merged) edges.push_back({s.start, 1 << c});
    for (const span& s : merged) edges.push_back({s.end, -(1 << c)});
    times.clear();
    for (const edge& e : edges) times.push_back(e.time);
    std::vector<edge> sorted;
    sorted.reserve(edges.size());
    for (const std::size_t k : numpy_argsort(times)) sorted.push_back(edges[k]);
    edges = std::move(sorted);
  }
  class_sets out;
  int running = 0;
  for (std::size_t k = 0; k < edges.size(); ++k) {
    running += edges[k].bits;
    // (A set is named by its bits among the three; a rounded span that ends before it starts
    // can leave other values, which name the classes of their low bits.)
    const auto set = static_cast<std::size_t>(running & 7);
    if (running <= 0 || set == 0) continue;
    out.seen |= 1u << set;
    if (k + 1 < edges.size()) out.time[set] += edges[k + 1].time - edges[k].time;
  }
  return out;
}

/// The rows of `sets` as HTA prints them: one per set passed through, in pandas' order (by
/// name, then sorted by time, largest first, with NumPy's unstable sort), each with its share of
/// the total in percent, rounded to one decimal.
[[nodiscard]] inline row_list<kernel_type_row> kernel_type_rows(const class_sets& sets) {
  std::vector<kernel_type_row> by_name;
  std::int64_t total = 0;
  for (unsigned b = 1; b < 8; ++b) {
    if ((sets.seen & (1u << b)) == 0) continue;
    by_name.push_back({class_set_name(b), sets.time[b], 0});
    total += sets.time[b];
  }
  std::sort(by_name.begin(), by_name.end(), [](const kernel_type_row& a, const kernel_type_row& b) {
    return a.kernel_type < b.kernel_type;
  });
  // pandas' descending sort: NumPy's argsort of the reversed keys, read backwards.
  std::vector<std::int64_t> keys;
  for (auto it = by_name.rbegin(); it != by_name.rend(); ++it) keys.push_back(it->sum);
  const std::vector<std::size_t> order = numpy_argsort(keys);
  row_list<kernel_type_row> rows;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    kernel_type_row r = by_name[by_name.size() - 1 - *it];
    // (sum / total) * 100, rounded as NumPy rounds: half to even at one decimal
    r.percentage = total == 0 ? std::nan("")
                              : std::nearbyint(static_cast<double>(r.sum) /
                                               static_cast<double>(total) * 100.0 * 10.0) /
                                    10.0;
    rows.push_back(std::move(r));
  }
  return rows;
}

}  // namespace hta
TRACEMODEL_END_NAMESPACE
