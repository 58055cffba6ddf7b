// tracemodel/algo — what changed between two runs: per name, the count and total time of the ops
// and kernels on each side, and the change.
//
//   const auto a = tracemodel::op_totals_of(control, {.iteration = 1010});       // ns
//   const auto b = tracemodel::op_totals_of(test, {.iteration = 1010});
//   const tracemodel::row_list<tracemodel::diff_row> rows = tracemodel::compare_totals(a, b);
//   const tracemodel::ops_change changed = tracemodel::ops_diff(rows);          // added, ...
//
// A side's totals are taken from one table (a rank), for the host's events, the device's or
// both, in one profiler step (`ProfilerStep#N`) or in all of them; totals of several ranks add
// up (`+=`). Nanoseconds as stated; the host's events are every event that is not device work
// (ops, annotations, runtime calls, Python functions; not instants), the device's are the
// device work of `device_view` (kernels, copies, sets, synchronization, collectives; not the
// GPU's annotations, which repeat the time of the work they span); an event's step is the
// innermost `ProfilerStep#N` that contains the start of the event, or for device work of the
// call that launched it (of the work itself without a call). With `short_names`, names are
// `short_kernel_name`s (kernel_class.hpp). The comparison joins the names of both sides (a
// name missing on one side counts 0 there), in the names' byte order, with the test side minus
// the control side.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <iterator>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tracemodel/algo/device_time.hpp"
#include "tracemodel/algo/kernel_class.hpp"
#include "tracemodel/algo/measure.hpp"
#include "tracemodel/config.hpp"
#include "tracemodel/model/table.hpp"

TRACEMODEL_BEGIN_NAMESPACE

enum class diff_device : std::uint8_t { cpu, gpu, all };
inline constexpr std::string_view diff_device_names[] = {"cpu", "gpu", "all"};

/// Which events of a side count.
struct diff_selection {
  std::optional<std::int64_t> iteration;  ///< the `N` of `ProfilerStep#N`; empty: every event
  diff_device device = diff_device::all;
  bool short_names = false;  ///< names shortened (`short_kernel_name`)
};

struct op_total {
  std::uint64_t count = 0;
  std::int64_t duration = 0;  ///< ns (from a table; the unit of its events otherwise)
  friend constexpr bool operator==(const op_total&, const op_total&) = default;
};

/// A side's totals by name (in byte order). Several ranks' totals add up with `+=`.
struct op_totals {
  std::map<std::string, op_total, std::less<>> by_name;
  op_totals& operator+=(const op_totals& o) {
    for (const auto& [name, x] : o.by_name) {
      op_total& t = by_name[name];
      t.count += x.count;
      t.duration += x.duration;
    }
    return *this;
  }
  void add(std::string_view name, std::int64_t duration) {
    auto it = by_name.find(name);
    if (it == by_name.end()) it = by_name.emplace(std::string(name), op_total{}).first;
    ++it->second.count;
    it->second.duration += duration;
  }
};

/// A side's totals for every step at once and over every event, each for the host, the
/// device and both (indexed by `diff_device`).
struct step_totals {
  std::map<std::int64_t, std::array<op_totals, 3>> steps;
  std::array<op_totals, 3> all;

  /// The totals that `s` selects (its `short_names` is the one these were made with).
  [[nodiscard]] op_totals select(const diff_selection& s) const {
    const auto d = static_cast<std::size_t>(s.device);
    if (!s.iteration) return all[d];
    const auto it = steps.find(*s.iteration);
    return it == steps.end() ? op_totals{} : it->second[d];
  }
  /// The steps named, in order.
  [[nodiscard]] std::vector<std::int64_t> iterations() const {
    std::vector<std::int64_t> out;
    for (const auto& [n, x] : steps) out.push_back(n);
    return out;
  }
  step_totals& operator+=(const step_totals& o) {
    for (const auto& [n, x] : o.steps)
      for (std::size_t d = 0; d < 3; ++d) steps[n][d] += x[d];
    for (std::size_t d = 0; d < 3; ++d) all[d] += o.all[d];
    return *this;
  }
};

/// One name of the comparison: test minus control.
struct diff_row {
  std::string name;
  std::uint64_t control_counts = 0;
  std::int64_t control_total_duration = 0;
  std::uint64_t test_counts = 0;
  std::int64_t test_total_duration = 0;
  std::int64_t diff_counts = 0;
  std::int64_t diff_duration = 0;
  char change = '=';  ///< by the counts: '+' more in test, '-' fewer, '=' as many
};

/// The names of the comparison by what happened to them.
struct ops_change {
  std::vector<std::string> added;      ///< none in control, some in test
  std::vector<std::string> deleted;    ///< some in control, none in test
  std::vector<std::string> increased;  ///< some in control, more in test
  std::vector<std::string> decreased;  ///< some in test, fewer than in control
  std::vector<std::string> unchanged;  ///< as many in both (and some)
};

namespace detail {
/// N of a name `ProfilerStep#N` (spaces allowed around '#').
[[nodiscard]] inline std::optional<std::int64_t> step_number(std::string_view n) noexcept {
  if (!n.starts_with("ProfilerStep")) return std::nullopt;
  n.remove_prefix(12);
  auto spaces = [&] {
    while (!n.empty() && (n.front() == ' ' || n.front() == '\t')) n.remove_prefix(1);
  };
  spaces();
  if (n.empty() || n.front() != '#') return std::nullopt;
  n.remove_prefix(1);
  spaces();
  if (n.empty() || n.front() < '0' || n.front() > '9') return std::nullopt;
  std::int64_t v = 0;
  for (std::size_t i = 0; i < n.size() && n[i] >= '0' && n[i] <= '9' && v < (std::int64_t{1} << 58);
       ++i)
    v = v * 10 + (n[i] - '0');
  return v;
}

/// The steps of a table as [start, end) intervals with their numbers, by start; `of(ts)` the
/// innermost (latest started) that holds `ts`.
struct step_index {
  struct step {
    std::int64_t start, end, number;
  };
  std::vector<step> steps;
  std::vector<std::int64_t> reach;  ///< the greatest end of the steps up to each

  void sort() {
    std::stable_sort(steps.begin(), steps.end(),
                     [](const step& a, const step& b) { return a.start < b.start; });
    reach.clear();
    for (const step& s : steps)
      reach.push_back(reach.empty() ? s.end : std::max(reach.back(), s.end));
  }
  [[nodiscard]] std::optional<std::int64_t> of(std::int64_t ts) const noexcept {
    auto k = static_cast<std::size_t>(
        std::upper_bound(steps.begin(), steps.end(), ts,
                         [](std::int64_t x, const step& s) { return x < s.start; }) -
        steps.begin());
    while (k > 0 && reach[k - 1] > ts) {  // no step before k - 1 reaches `ts` otherwise
      --k;
      if (ts < steps[k].end) return steps[k].number;
    }
    return std::nullopt;
  }
};

inline std::vector<std::int64_t> sorted_unique(std::vector<std::int64_t> v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

/// Adds events to a side's totals: into every event's, and its step's when it has one.
struct totals_maker {
  explicit totals_maker(bool shorten_names) : shorten(shorten_names) {}
  void add(std::string_view name, std::int64_t duration, std::optional<std::int64_t> step,
           bool host) {
    if (shorten) {
      auto it = shortened.find(name);
      if (it == shortened.end()) it = shortened.emplace(name, short_kernel_name(name)).first;
      name = it->second;
    }
    const std::size_t side = host ? 0 : 1;
    out.all[side].add(name, duration);
    out.all[2].add(name, duration);
    if (!step) return;
    auto& s = out.steps[*step];
    s[side].add(name, duration);
    s[2].add(name, duration);
  }
  bool shorten;
  std::map<std::string_view, std::string> shortened;  // each name shortened once
  step_totals out;
};
}  // namespace detail

namespace detail {
/// The profiler steps of `t` by start.
template <class Schema>
step_index steps_of(const basic_event_table<Schema>& t) {
  step_index idx;
  for (const auto& e : t.events) {
    if (t.activity(e) != activity_type::user_annotation) continue;
    const auto n = step_number(t.name(e));
    const std::int64_t end = e.end_ns();
    if (n && end != no_end_ns) idx.steps.push_back({e.start_ns, end, *n});
  }
  idx.sort();
  return idx;
}
}  // namespace detail

/// The step numbers `t` names (`ProfilerStep#N`), in order.
template <class Schema>
[[nodiscard]] std::vector<std::int64_t> trace_steps(const basic_event_table<Schema>& t) {
  std::vector<std::int64_t> out;
  for (const auto& s : detail::steps_of(t).steps) out.push_back(s.number);
  return detail::sorted_unique(std::move(out));
}

/// Every step's totals and the whole table's, in one pass.
template <class Schema>
[[nodiscard]] step_totals step_totals_of(const basic_event_table<Schema>& t,
                                         bool short_names = false) {
  const detail::step_index steps = detail::steps_of(t);
  detail::totals_maker make(short_names);
  for (const auto& e : t.events) {
    if (e.instant_scope != 0) continue;
    if (const auto* d = e.template get_if<event_kind::device_activity>();
        d != nullptr && (d->stream >= 0 || d->activity == activity_type::gpu_user_annotation))
      continue;  // the device's
    const std::int64_t end = e.end_ns();
    if (end != no_end_ns) make.add(t.name(e), end - e.start_ns, steps.of(e.start_ns), true);
  }
  const device_view v(t);
  for (const device_work& w : v.work)
    make.add(t.strings.view(w.name), w.end - w.start,
             steps.of(w.call != no_event ? w.launched : w.start), false);
  return std::move(make.out);
}

/// A side's totals: the events of `t` that `s` selects.
template <class Schema>
[[nodiscard]] op_totals op_totals_of(const basic_event_table<Schema>& t,
                                     const diff_selection& s = {}) {
  return step_totals_of(t, s.short_names).select(s);
}

/// The comparison of two sides, by name in byte order (an outer join), test minus control.
[[nodiscard]] inline row_list<diff_row> compare_totals(const op_totals& control,
                                                       const op_totals& test) {
  row_list<diff_row> rows;
  auto a = control.by_name.begin(), b = test.by_name.begin();
  while (a != control.by_name.end() || b != test.by_name.end()) {
    diff_row r;
    if (b == test.by_name.end() || (a != control.by_name.end() && a->first < b->first)) {
      r.name = a->first;
      r.control_counts = a->second.count;
      r.control_total_duration = a->second.duration;
      ++a;
    } else if (a == control.by_name.end() || b->first < a->first) {
      r.name = b->first;
      r.test_counts = b->second.count;
      r.test_total_duration = b->second.duration;
      ++b;
    } else {
      r.name = a->first;
      r.control_counts = a->second.count;
      r.control_total_duration = a->second.duration;
      r.test_counts = b->second.count;
      r.test_total_duration = b->second.duration;
      ++a;
      ++b;
    }
    r.diff_counts =
        static_cast<std::int64_t>(r.test_counts) - static_cast<std::int64_t>(r.control_counts);
    r.diff_duration = r.test_total_duration - r.control_total_duration;
    r.change = r.diff_counts > 0 ? '+' : r.diff_counts < 0 ? '-' : '=';
    rows.push_back(std::move(r));
  }
  return rows;
}

/// The names by what happened to their counts.
[[nodiscard]] inline ops_change ops_diff(const row_list<diff_row>& rows) {
  ops_change c;
  for (const diff_row& r : rows) {
    if (r.control_counts == 0 && r.test_counts > 0) c.added.push_back(r.name);
    if (r.control_counts > 0 && r.test_counts == 0) c.deleted.push_back(r.name);
    if (r.control_counts > 0 && r.diff_counts > 0) c.increased.push_back(r.name);
    if (r.test_counts > 0 && r.diff_counts < 0) c.decreased.push_back(r.name);
    if (r.test_counts > 0 && r.diff_counts == 0) c.unchanged.push_back(r.name);
  }
  return c;
}

/// The `k` rows whose time grew most (largest `diff_duration` first, names breaking ties).
[[nodiscard]] inline row_list<diff_row> top_regressions(const row_list<diff_row>& rows,
                                                        std::size_t k) {
  row_list<diff_row> out;
  for (const diff_row& r : rows)
    if (r.diff_duration > 0) out.push_back(r);
  std::stable_sort(out.begin(), out.end(), [](const diff_row& a, const diff_row& b) {
    return a.diff_duration > b.diff_duration;
  });
  if (out.size() > k) out.resize(k);
  return out;
}

TRACEMODEL_END_NAMESPACE
