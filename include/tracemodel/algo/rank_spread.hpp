// tracemodel/algo — how far ranks drift apart: each step's and each collective's start and
// duration across ranks, and the stragglers.
//
//   std::vector<std::pair<std::int64_t, tracemodel::rank_timeline>> ranks;
//   ranks.emplace_back(0, tracemodel::rank_timeline_of(table0));   // per rank, tables dropped
//   const tracemodel::rank_spread s = tracemodel::spread_across_ranks(ranks);
//
// A rank's timeline is its profiler steps (`ProfilerStep#N` annotations) and its collectives:
// the communication kernels (device_time.hpp's exact classes), each named by its kind and its
// place among the collectives of that kind on the rank: "allreduce #3". The kind (in lower
// case) is the
// launching op's `Collective name` arg when the trace has one (PyTorch's record_param_comms),
// else the collective in the kernel's name (`ncclKernel_AllReduce_...`,
// `ncclDevKernel_AllGather_...`, ...), so kernels renamed by a newer NCCL still match.
// Across ranks, per step and per collective met on two ranks or more: the earliest start, the
// spread of the starts, the shortest and longest duration, and the rank that started last. Per
// rank: how many collectives it started last (the straggler count) and its mean lag behind the
// earliest start. Times are nanoseconds of each rank's own clock: ranks on different hosts are
// comparable only as far as their clocks agree.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tracemodel/algo/device_time.hpp"
#include "tracemodel/algo/measure.hpp"
#include "tracemodel/config.hpp"
#include "tracemodel/model/table.hpp"

TRACEMODEL_BEGIN_NAMESPACE

struct timed_event {
  std::string key;  ///< "ProfilerStep#12", "allreduce #3"
  std::int64_t start = 0, duration = 0;
};

struct rank_timeline {
  row_list<timed_event> steps, collectives;
};

/// The collective a communication kernel's name names ("AllReduce", "SendRecv", ...), or "".
[[nodiscard]] inline std::string_view collective_of_kernel(std::string_view name) noexcept {
  for (std::string_view prefix : {"ncclDevKernel_", "ncclKernel_", "rcclKernel_"}) {
    const std::size_t k = name.find(prefix);
    if (k == std::string_view::npos) continue;
    std::string_view rest = name.substr(k + prefix.size());
    const std::size_t end = rest.find_first_of("_(<");
    return rest.substr(0, end);
  }
  return {};
}

template <class Schema>
[[nodiscard]] rank_timeline rank_timeline_of(const basic_event_table<Schema>& t,
                                             const device_view& v) {
  rank_timeline out;
  for (const auto& e : t.events) {
    if (t.activity(e) != activity_type::user_annotation) continue;
    const std::string_view n = t.name(e);
    if (!n.starts_with("ProfilerStep#")) continue;
    const std::int64_t end = e.end_ns();
    if (end != no_end_ns) out.steps.push_back({std::string(n), e.start_ns, end - e.start_ns});
  }
  // `Collective name` of the ops, by their correlation id (a kernel's external id).
  std::unordered_map<std::uint64_t, std::string_view> collective;
  name_id key{};
  if (t.strings.find("Collective name", key))
    for (const auto& e : t.events)
      if (const auto* op = e.template get_if<event_kind::op>())
        for (const attribute& a : t.attrs_of(e))
          if (a.key == key && a.type == attr_type::string && op->correlation_id != 0)
            collective[op->correlation_id] = t.strings.view(a.s);
  std::map<std::string, std::size_t> seen;
  for (const device_work& d : v.work) {
    if (d.cls != kernel_class::communication) continue;
    const auto* a = t.events[d.event].template get_if<event_kind::device_activity>();
    std::string kind;
    if (const auto it = collective.find(a != nullptr ? a->external_id : 0);
        it != collective.end() && a->external_id != 0)
      kind = std::string(it->second);
    else
      kind = std::string(collective_of_kernel(t.name(t.events[d.event])));
    if (kind.empty()) kind = "collective";
    for (char& c : kind)  // "allreduce" (an op's arg) and "AllReduce" (a kernel's name) alike
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    const std::size_t k = seen[kind]++;
    out.collectives.push_back({kind + " #" + std::to_string(k), d.start, d.end - d.start});
  }
  return out;
}
template <class Schema>
[[nodiscard]] rank_timeline rank_timeline_of(const basic_event_table<Schema>& t,
                                             const device_time_options& o = {}) {
  return rank_timeline_of(t, device_view(t, o.classifier));
}

struct spread_row {
  std::string key;
  std::size_t ranks = 0;  ///< how many ranks have it
  std::int64_t first_start = 0, start_spread = 0, min_duration = 0, max_duration = 0;
  std::int64_t last_rank = 0;  ///< the rank that started it last
};

struct straggler_row {
  std::int64_t rank = 0;
  std::size_t last = 0;  ///< collectives this rank started last
  double mean_lag = 0;   ///< ns behind the earliest start, over its collectives
};

struct rank_spread {
  row_list<spread_row> steps, collectives;  ///< in order of their earliest start
  row_list<straggler_row> stragglers;       ///< by rank
};

namespace detail {
inline row_list<spread_row> spread_of(
    const std::vector<std::pair<std::int64_t, rank_timeline>>& ranks,
    row_list<timed_event> rank_timeline::*which,
    std::map<std::int64_t, std::pair<std::size_t, double>>* lag) {
  std::map<std::string, std::vector<std::pair<std::int64_t, const timed_event*>>> by_key;
  for (const auto& [rank, tl] : ranks)
    for (const timed_event& e : tl.*which) by_key[e.key].emplace_back(rank, &e);
  row_list<spread_row> rows;
  for (const auto& [key, items] : by_key) {
    if (items.size() < 2) continue;
    spread_row r;
    r.key = key;
    r.ranks = items.size();
    r.first_start = items[0].second->start;
    std::int64_t last_start = r.first_start;
    r.last_rank = items[0].first;
    r.min_duration = r.max_duration = items[0].second->duration;
    for (const auto& [rank, e] : items) {
      r.first_start = std::min(r.first_start, e->start);
      if (e->start > last_start) {
        last_start = e->start;
        r.last_rank = rank;
      }
      r.min_duration = std::min(r.min_duration, e->duration);
      r.max_duration = std::max(r.max_duration, e->duration);
    }
    r.start_spread = last_start - r.first_start;
    if (lag != nullptr) {
      ++(*lag)[r.last_rank].first;
      for (const auto& [rank, e] : items)
        (*lag)[rank].second += static_cast<double>(e->start - r.first_start);
    }
    rows.push_back(std::move(r));
  }
  std::stable_sort(rows.begin(), rows.end(), [](const spread_row& a, const spread_row& b) {
    return a.first_start < b.first_start;
  });
  return rows;
}
}  // namespace detail

[[nodiscard]] inline rank_spread spread_across_ranks(
    const std::vector<std::pair<std::int64_t, rank_timeline>>& ranks) {
  rank_spread s;
  s.steps = detail::spread_of(ranks, &rank_timeline::steps, nullptr);
  std::map<std::int64_t, std::pair<std::size_t, double>> lag;  // rank: (last, summed lag)
  s.collectives = detail::spread_of(ranks, &rank_timeline::collectives, &lag);
  std::set<std::string_view> keys;  // the collectives met on two ranks or more
  for (const spread_row& r : s.collectives) keys.insert(r.key);
  std::map<std::int64_t, std::size_t> matched;  // how many of them each rank has
  for (const auto& [rank, tl] : ranks)
    for (const timed_event& e : tl.collectives) matched[rank] += keys.count(e.key);
  for (const auto& [rank, tl] : ranks) {
    straggler_row r;
    r.rank = rank;
    const auto it = lag.find(rank);
    if (it != lag.end()) {
      r.last = it->second.first;
      if (matched[rank] != 0) r.mean_lag = it->second.second / static_cast<double>(matched[rank]);
    }
    s.stragglers.push_back(r);
  }
  return s;
}

TRACEMODEL_END_NAMESPACE
