// tracemodel/algo — key averages (PyTorch's `prof.key_averages()`).
//
//   auto rows = tracemodel::key_averages(table, {.group = group_by::shapes, .sort = sort_by::self});
//   std::fputs(tracemodel::format_key_averages(rows, 20).c_str(), stdout);
//
// Per key (the name, optionally with the input shapes or the call stack): count, total time,
// self time (total minus the time of its counted children), and each as a share of the sum of
// self times (so the self shares add up to 100 %). Which events count is a predicate; by default
// what PyTorch's CPU table counts: ops, backend spans and runtime/driver calls on host threads,
// not global instant markers; "ProfilerStep#N" rows merge into "ProfilerStep*".
//
// Children, by default as PyTorch's `key_averages` finds them (`nesting::containment`): per
// thread, over the counted events alone, sorted by start then longest first, an event is the
// child of the innermost open event that contains it whole; one that overlaps the end of the
// open event closes it. No built tree is needed, and Python frames (with_stack traces) change
// nothing: PyTorch's C++ tree closes an annotation that outlives the Python call it started in
// (`ProfilerStep#2` under `_record_function_enter_new`), so the tree's descendants would leave it
// with no children. `nesting::tree` uses the built tree instead: the nearest counted descendants.
#pragma once

#include <fmt/format.h>

#include <range/v3/algorithm/stable_sort.hpp>
#include <range/v3/view/filter.hpp>
#include <range/v3/view/take.hpp>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tracemodel/algo/walk.hpp"
#include "tracemodel/config.hpp"
#include "tracemodel/model/table.hpp"

TRACEMODEL_BEGIN_NAMESPACE

enum class group_by : std::uint8_t { name, shapes, stack };
/// How self time finds an event's children (see the header comment).
enum class nesting : std::uint8_t { containment, tree };
enum class sort_by : std::uint8_t { total, self, count };

struct key_average_row {
  std::string name;
  std::string detail;  ///< the input shapes or the stack, when grouped by them
  std::uint64_t count = 0;
  std::int64_t total_ns = 0;
  std::int64_t self_ns = 0;
  double total_share = 0;  ///< total / sum of all self times
  double self_share = 0;   ///< self / sum of all self times
  /// The key as one string: "name" or "name detail".
  [[nodiscard]] std::string key() const { return detail.empty() ? name : name + " " + detail; }
};

struct key_average_options {
  group_by group = group_by::name;
  sort_by sort = sort_by::total;
  std::size_t stack_frames = 5;  ///< frames of the call stack in the key (group_by::stack)
  nesting children = nesting::containment;
  bool merge_profiler_steps = true;  ///< "ProfilerStep#3" counts as "ProfilerStep*", as in PyTorch
};

/// The events PyTorch's CPU table counts: ops (CPU ops and user annotations) and backend spans
/// but not global instant markers ("Iteration Start: PyTorch Profiler"), and the runtime and
/// driver calls of host threads (`cudaLaunchKernel`, `cuLaunchKernel`, ...).
struct count_ops {
  template <class Table, class Event>
  bool operator()(const Table&, const Event& e) const noexcept {
    if (e.template is<event_kind::op>()) return !(e.instant_scope == 'g' && e.is_instant());
    if (e.template is<event_kind::backend>()) return true;
    const auto* d = e.template get_if<event_kind::device_activity>();  // null without that kind
    if (d == nullptr) return false;
    switch (d->activity) {
      case activity_type::cuda_runtime:
      case activity_type::cuda_driver:
      case activity_type::xpu_runtime:
      case activity_type::xpu_driver:
      case activity_type::mtia_runtime:
      case activity_type::privateuse1_runtime:
      case activity_type::privateuse1_driver:
      case activity_type::glow_runtime:
        return true;
      default:
        return false;
    }
  }
};
/// Every event with a duration.
struct count_spans {
  template <class Table, class Event>
  bool operator()(const Table&, const Event& e) const noexcept {
    return !e.is_instant();
  }
};

/// "[[8, 16], [32, 16], []]": sizes of each top-level input (lists nested, non-tensors empty).
template <class Schema>
std::string input_shapes_text(const basic_event_table<Schema>& t,
                              const typename basic_event_table<Schema>::event_type& e) {
  std::string out = "[";
  walk_nested_inputs(
      t.inputs_of(e), [&out](const input_value&) { out += "["; }, [&out] { out += "]"; },
      [&](const input_value& v) {
        out += "[";
        const auto sizes = t.sizes(v);
        for (std::size_t k = 0; k < sizes.size(); ++k) out += (k ? ", " : "") + std::to_string(sizes[k]);
        out += "]";
      },
      [&out] { out += ", "; });
  out += "]";
  return out;
}

struct key_averages_fn {
  template <class Schema, class Counted = count_ops>
  std::vector<key_average_row> operator()(const basic_event_table<Schema>& t,
                                          key_average_options opt = {},
                                          Counted counted = {}) const {
    const std::size_t n = t.size();
    const std::vector<std::int64_t> child_time =
        opt.children == nesting::tree ? tree_child_time(t, counted) : contained_child_time(t, counted);

    std::unordered_map<std::string, std::size_t> index;
    std::vector<key_average_row> rows;
    std::int64_t self_sum = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const auto& e = t.events[i];
      if (!counted(t, e)) continue;
      std::string detail;
      if (opt.group == group_by::shapes) detail = input_shapes_text(t, e);
      if (opt.group == group_by::stack) detail = stack_text(t, e, opt.stack_frames);
      std::string name(t.name(e));
      if (opt.merge_profiler_steps && name.starts_with("ProfilerStep#")) name = "ProfilerStep*";
      std::string key = name;
      key += '\0';
      key += detail;
      auto [it, inserted] = index.try_emplace(std::move(key), rows.size());
      if (inserted) rows.push_back({std::move(name), std::move(detail)});
      key_average_row& r = rows[it->second];
      const std::int64_t total = e.duration_ns();
      const std::int64_t self = total - child_time[i];
      ++r.count;
      r.total_ns += total;
      r.self_ns += self;
      self_sum += self;
    }
    for (auto& r : rows) {
      r.total_share = self_sum > 0 ? static_cast<double>(r.total_ns) / static_cast<double>(self_sum) : 0;
      r.self_share = self_sum > 0 ? static_cast<double>(r.self_ns) / static_cast<double>(self_sum) : 0;
    }
    sort(rows, opt.sort);
    return rows;
  }

  /// Sorts rows, largest first; equal values keep first-appearance order.
  static void sort(std::vector<key_average_row>& rows, sort_by by) {
    switch (by) {
      case sort_by::total:
        ranges::stable_sort(rows, std::greater<>{}, &key_average_row::total_ns);
        break;
      case sort_by::self:
        ranges::stable_sort(rows, std::greater<>{}, &key_average_row::self_ns);
        break;
      case sort_by::count:
        ranges::stable_sort(rows, std::greater<>{}, &key_average_row::count);
        break;
    }
  }

 private:
  // Time of each counted event's counted children: the nearest counted descendants in the tree.
  template <class Schema, class Counted>
  static std::vector<std::int64_t> tree_child_time(const basic_event_table<Schema>& t, Counted& counted) {
    std::vector<std::int64_t> child_time(t.size(), 0);
    std::vector<std::pair<std::uint32_t, event_index>> open;  // (depth, counted ancestor)
    walk_preorder(t, [&](event_index i, std::uint32_t depth) {
      while (!open.empty() && open.back().first >= depth) open.pop_back();
      const auto& e = t.events[i];
      if (!counted(t, e)) return;
      if (!open.empty()) child_time[open.back().second] += e.duration_ns();
      open.emplace_back(depth, i);
    });
    return child_time;
  }

  // ... by containment among the counted events of each thread (PyTorch's rule).
  template <class Schema, class Counted>
  static std::vector<std::int64_t> contained_child_time(const basic_event_table<Schema>& t, Counted& counted) {
    struct item {
      process_key pid;
      thread_key tid;
      std::int64_t start, end;
      event_index i;
    };
    std::vector<item> items;
    for (event_index i = 0; i < t.size(); ++i) {
      const auto& e = t.events[i];
      if (counted(t, e)) items.push_back({e.pid, e.tid, e.start_ns, e.start_ns + e.duration_ns(), i});
    }
    ranges::stable_sort(items, [](const item& a, const item& b) {
      if (a.pid != b.pid) return a.pid < b.pid;
      if (a.tid != b.tid) return a.tid < b.tid;
      if (a.start != b.start) return a.start < b.start;
      return a.end > b.end;
    });
    std::vector<std::int64_t> child_time(t.size(), 0);
    std::vector<const item*> open;
    for (std::size_t k = 0; k < items.size(); ++k) {
      const item& c = items[k];
      if (k > 0 && (items[k - 1].pid != c.pid || items[k - 1].tid != c.tid)) open.clear();
      while (!open.empty() && (c.start >= open.back()->end || c.end > open.back()->end)) open.pop_back();
      if (!open.empty()) child_time[open.back()->i] += c.end - c.start;
      open.push_back(&c);
    }
    return child_time;
  }

  template <class Schema>
  static std::string stack_text(const basic_event_table<Schema>& t,
                                const typename basic_event_table<Schema>::event_type& e,
                                std::size_t frames) {
    const attribute* a = t.find_attr(e, "Call stack");
    if (a == nullptr || a->type != attr_type::string_list) return {};
    std::string out;
    std::size_t k = 0;
    for (name_id f : t.string_list(*a)) {
      if (k++ == frames) break;
      if (!out.empty()) out += "; ";
      out += t.strings.view(f);
    }
    return out;
  }
};

/// Aggregates counted events per key (see the header comment).
inline constexpr key_averages_fn key_averages{};

/// A duration as PyTorch prints it: "12.345us", "1.234ms", "2.000s".
inline std::string format_duration(std::int64_t ns) {
  const std::string_view sign = ns < 0 ? "-" : "";
  const std::uint64_t mag = ns < 0 ? 0 - static_cast<std::uint64_t>(ns) : static_cast<std::uint64_t>(ns);
  const double v = static_cast<double>(mag);
  if (mag < 1'000'000) return fmt::format("{}{:.3f}us", sign, v / 1e3);
  if (mag < 1'000'000'000) return fmt::format("{}{:.3f}ms", sign, v / 1e6);
  return fmt::format("{}{:.3f}s", sign, v / 1e9);
}

/// The rows as a text table (the first `top` rows; 0: all).
inline std::string format_key_averages(const std::vector<key_average_row>& rows, std::size_t top = 0) {
  std::size_t name_width = 4;
  bool details = false;
  const std::size_t shown = top == 0 || top > rows.size() ? rows.size() : top;
  for (const auto& r : rows | ranges::views::take(shown)) {
    name_width = std::max(name_width, std::min<std::size_t>(r.name.size(), 55));
    details = details || !r.detail.empty();
  }
  auto clip = [](const std::string& s, std::size_t w) {
    return s.size() <= w ? s : s.substr(0, w - 3) + "...";
  };
  std::string out;
  const std::string rule(name_width + 64 + (details ? 42 : 0), '-');
  out += rule + "\n";
  out += fmt::format("{:<{}}  {:>8}  {:>12}  {:>8}  {:>12}  {:>8}", "Name", name_width, "Self %",
                     "Self", "Total %", "Total", "Count");
  if (details) out += fmt::format("  {}", "Input shapes / stack");
  out += "\n" + rule + "\n";
  for (const auto& r : rows | ranges::views::take(shown)) {
    out += fmt::format("{:<{}}  {:>7.2f}%  {:>12}  {:>7.2f}%  {:>12}  {:>8}", clip(r.name, 55),
                       name_width, 100 * r.self_share, format_duration(r.self_ns),
                       100 * r.total_share, format_duration(r.total_ns), r.count);
    if (details) out += "  " + clip(r.detail, 40);
    out += "\n";
  }
  out += rule + "\n";
  std::int64_t self_sum = 0;
  for (const auto& r : rows) self_sum += r.self_ns;
  out += fmt::format("Self time total: {}\n", format_duration(self_sum));
  return out;
}

TRACEMODEL_END_NAMESPACE
