// tracemodel/algo — key averages (PyTorch's `prof.key_averages()`).
//
//   auto rows = tracemodel::key_averages(table, {.group = group_by::shapes, .sort = sort_by::self});
//   std::fputs(tracemodel::format_key_averages(rows, 20).c_str(), stdout);
//
// Per key (the name, optionally with the input shapes or the call stack): count, total time,
// self time (total minus the time of the nearest counted descendants, so script-call frames
// between two ops do not hide the inner op), and each as a share of the sum of self times (so
// the self shares add up to 100 %). Which events count is a predicate; by default ops and
// backend spans, as PyTorch's CPU table. Needs a built tree for self times (without one, self
// equals total).
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
};

/// The events PyTorch's CPU table counts: ops (CPU ops and user annotations) and backend spans.
struct count_ops {
  template <class Table, class Event>
  bool operator()(const Table&, const Event& e) const noexcept {
    return e.template is<event_kind::op>() || e.template is<event_kind::backend>();
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
    std::vector<std::int64_t> child_time(n, 0);
    // Nearest counted ancestor of every counted event, in one pre-order walk.
    std::vector<std::pair<std::uint32_t, event_index>> open;  // (depth, counted ancestor)
    walk_preorder(t, [&](event_index i, std::uint32_t depth) {
      while (!open.empty() && open.back().first >= depth) open.pop_back();
      const auto& e = t.events[i];
      if (!counted(t, e)) return;
      if (!open.empty()) child_time[open.back().second] += e.duration_ns();
      open.emplace_back(depth, i);
    });

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
