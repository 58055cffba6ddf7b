// tracemodel/algo — key averages (PyTorch's `prof.key_averages()`).
//
//   auto rows = tracemodel::key_averages(table, {.group = tracemodel::group_by::shapes,
//                                                .sort = tracemodel::sort_by::self});
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
//
// Device time, as PyTorch's "Self CUDA" and "CUDA total": each device-side activity (kernel,
// memcpy, memset, synchronization) gives its duration to the op that launched it,
// the op whose correlation id is the activity's external id (PyTorch's linked activity), or
// without an external id the nearest op above it in the built tree (tables recorded without
// them); an external id that names no op leaves the time to no op, as in PyTorch.
// An op's self device time is what its own activities took; its device total adds its children's
// device totals (children as for self time). Device activities also get rows of their own (count
// and device time, no CPU time), apart from ops of the same name, as in PyTorch; GPU annotations
// too, but their time spans other activities: it is their device total only, not self time, and
// goes to no op.
// `device_rows = false` leaves those rows out.
//
// Memory, as PyTorch's `profile_memory=True` columns (its 1.13 rule): an allocation or free
// (its signed size) counts for every counted event, of any thread, whose interval in whole
// microseconds, [floor(start / 1000), that + floor(duration / 1000)] both ends included, holds
// the allocation's floor(start / 1000). CPU memory is what CPU, MKLDNN and IDEEP allocations
// moved; device memory what any other device's moved (PyTorch 1.13: CUDA and HIP; newer ones
// add their other accelerators). Self memory is an event's memory less its children's (children
// as for self time). Allocations no counted event holds make the row "[memory]" (count: how
// many; memory: their sum), as in PyTorch. Tables without allocations have no memory columns.
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

#include "tracemodel/algo/concepts.hpp"
#include "tracemodel/algo/measure.hpp"
#include "tracemodel/algo/walk.hpp"
#include "tracemodel/config.hpp"
#include "tracemodel/model/table.hpp"

TRACEMODEL_BEGIN_NAMESPACE

enum class group_by : std::uint8_t { name, shapes, stack };
/// How self time finds an event's children (see the header comment).
enum class nesting : std::uint8_t { containment, tree };
enum class sort_by : std::uint8_t { total, self, count, device_total, self_device };

struct key_average_row {
  std::string name;
  std::string detail;  ///< the input shapes or the stack, when grouped by them
  std::uint64_t count = 0;
  std::int64_t total_ns = 0;
  std::int64_t self_ns = 0;
  std::int64_t device_total_ns = 0;   ///< device time of its activities and its children's
  std::int64_t self_device_ns = 0;    ///< device time of its own activities
  double total_share = 0;             ///< total / sum of all self times
  double self_share = 0;              ///< self / sum of all self times
  double self_device_share = 0;       ///< self device / time of all device activities (PyTorch's)
  bool device_activities = false;     ///< a row of device activities (not ops)
  bool gpu_annotations = false;       ///< ... of GPU annotations: device total only, no self time
  std::int64_t cpu_memory_bytes = 0;  ///< allocated less freed while it ran (its children's too)
  std::int64_t self_cpu_memory_bytes = 0;     ///< ... less its children's
  std::int64_t device_memory_bytes = 0;       ///< as CPU memory, for device allocations
  std::int64_t self_device_memory_bytes = 0;  ///< ... less its children's
  bool memory_events = false;  ///< the "[memory]" row: allocations no counted event holds
  bool memory_known = false;   ///< the table has allocations: the memory columns are meaningful
  /// The key as one string: "name" or "name detail".
  [[nodiscard]] std::string key() const { return detail.empty() ? name : name + " " + detail; }
};

struct key_average_options {
  group_by group = group_by::name;
  sort_by sort = sort_by::total;
  std::size_t stack_frames = 5;  ///< frames of the call stack in the key (group_by::stack)
  nesting children = nesting::containment;
  bool merge_profiler_steps = true;  ///< "ProfilerStep#3" counts as "ProfilerStep*", as in PyTorch
  bool device_rows = true;  ///< rows for device activities (device time only), as in PyTorch
  bool memory_rows = true;  ///< the "[memory]" row, when allocations lie outside every event
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
        for (std::size_t k = 0; k < sizes.size(); ++k)
          out += (k ? ", " : "") + std::to_string(sizes[k]);
        out += "]";
      },
      [&out] { out += ", "; });
  out += "]";
  return out;
}

struct key_averages_fn {
  template <class Schema, class Counted = count_ops>
  row_list<key_average_row> operator()(const basic_event_table<Schema>& t,
                                       key_average_options opt = {}, Counted counted = {}) const {
    if constexpr (detail::check_event_filter<Counted, Schema>())  // (else its message alone)
      return rows_of(t, opt, counted);
    else
      return {};
  }

 private:
  template <class Schema, class Counted>
  static row_list<key_average_row> rows_of(const basic_event_table<Schema>& t,
                                           const key_average_options& opt, Counted counted) {
    const std::size_t n = t.size();
    const nest_info nest =
        opt.children == nesting::tree ? tree_nesting(t, counted) : contained_nesting(t, counted);
    // Device time: each device-side activity's duration goes to its op, then device totals add
    // up from children to parents (nest.order has parents before children).
    std::vector<std::int64_t> self_device(n, 0);
    const bool any_device = attribute_device_time(t, counted, self_device);
    std::vector<std::int64_t> device_total = self_device;
    if (any_device)
      for (auto it = nest.order.rbegin(); it != nest.order.rend(); ++it)
        if (const event_index p = nest.parent[*it]; p != no_event)
          device_total[p] += device_total[*it];

    const memory_info memory = attribute_memory(t, nest);

    std::unordered_map<std::string, std::size_t> index;
    row_list<key_average_row> rows;
    std::int64_t self_sum = 0, device_sum = 0;
    auto row_of = [&](const auto& e, bool device) -> key_average_row& {
      std::string detail;
      if (opt.group == group_by::shapes) detail = input_shapes_text(t, e);
      if (opt.group == group_by::stack) detail = stack_text(t, e, opt.stack_frames);
      std::string name(t.name(e));
      if (opt.merge_profiler_steps && name.starts_with("ProfilerStep#")) name = "ProfilerStep*";
      std::string key = name;
      key += device ? '\1' : '\0';  // device rows apart from ops of the same name
      key += detail;
      auto [it, inserted] = index.try_emplace(std::move(key), rows.size());
      if (inserted) {
        rows.push_back({std::move(name), std::move(detail)});
        rows.back().device_activities = device;
      }
      return rows[it->second];
    };
    for (std::size_t i = 0; i < n; ++i) {
      const auto& e = t.events[i];
      if (counted(t, e)) {
        key_average_row& r = row_of(e, false);
        const std::int64_t total = e.duration_ns();
        const std::int64_t self = total - nest.child_time[i];
        ++r.count;
        r.total_ns += total;
        r.self_ns += self;
        r.device_total_ns += device_total[i];
        r.self_device_ns += self_device[i];
        if (memory.known) {
          r.cpu_memory_bytes += memory.cpu[i];
          r.self_cpu_memory_bytes += memory.self_cpu[i];
          r.device_memory_bytes += memory.device[i];
          r.self_device_memory_bytes += memory.self_device[i];
        }
        self_sum += self;
      } else if (const auto* d = device_activity(e); d != nullptr && is_device_side(d->activity)) {
        if (!is_annotation(*d)) device_sum += e.duration_ns();
        if (!opt.device_rows) continue;
        key_average_row& r = row_of(e, true);
        r.gpu_annotations = is_annotation(*d);
        ++r.count;
        r.device_total_ns += e.duration_ns();
        if (!r.gpu_annotations) r.self_device_ns += e.duration_ns();
      }
    }
    if (memory.unheld_count != 0 && opt.memory_rows) {
      key_average_row& r = rows.emplace_back();
      r.name = std::string(memory_row_name);
      r.memory_events = true;
      r.count = memory.unheld_count;
      r.cpu_memory_bytes = r.self_cpu_memory_bytes = memory.unheld_cpu;
      r.device_memory_bytes = r.self_device_memory_bytes = memory.unheld_device;
    }
    for (auto& r : rows) r.memory_known = memory.known;
    auto share = [](std::int64_t part, std::int64_t whole) {
      return whole > 0 ? static_cast<double>(part) / static_cast<double>(whole) : 0.0;
    };
    for (auto& r : rows) {
      r.total_share = share(r.total_ns, self_sum);
      r.self_share = share(r.self_ns, self_sum);
      r.self_device_share = share(r.self_device_ns, device_sum);
    }
    sort(rows, opt.sort);
    return rows;
  }

 public:
  /// Sorts rows, largest first; equal values keep first-appearance order.
  static void sort(row_list<key_average_row>& rows, sort_by by) {
    // Counts stay far below 2^63: as signed values they order as they are.
    ranges::stable_sort(rows, std::greater<>{}, [by](const key_average_row& r) -> std::int64_t {
      switch (by) {
        case sort_by::total:
          return r.total_ns;
        case sort_by::self:
          return r.self_ns;
        case sort_by::count:
          return static_cast<std::int64_t>(r.count);
        case sort_by::device_total:
          return r.device_total_ns;
        case sort_by::self_device:
          return r.self_device_ns;
      }
      return 0;
    });
  }

 private:
  static constexpr std::string_view memory_row_name = "[memory]";

  /// Per counted event: the time of its counted children and its counted parent; and the counted
  /// events with every parent before its children.
  struct nest_info {
    std::vector<std::int64_t> child_time;
    std::vector<event_index> parent;
    std::vector<event_index> order;
    explicit nest_info(std::size_t n) : child_time(n, 0), parent(n, no_event) {}
    void add(event_index child, event_index p, std::int64_t duration) {
      order.push_back(child);
      if (p == no_event) return;
      parent[child] = p;
      child_time[p] += duration;
    }
  };

  // Children: the nearest counted descendants in the tree.
  template <class Schema, class Counted>
  static nest_info tree_nesting(const basic_event_table<Schema>& t, Counted& counted) {
    nest_info nest(t.size());
    std::vector<std::pair<std::uint32_t, event_index>> open;  // (depth, counted ancestor)
    walk_preorder(t, [&](event_index i, std::uint32_t depth) {
      while (!open.empty() && open.back().first >= depth) open.pop_back();
      const auto& e = t.events[i];
      if (!counted(t, e)) return;
      nest.add(i, open.empty() ? no_event : open.back().second, e.duration_ns());
      open.emplace_back(depth, i);
    });
    return nest;
  }

  // ... by containment among the counted events of each thread (PyTorch's rule).
  template <class Schema, class Counted>
  static nest_info contained_nesting(const basic_event_table<Schema>& t, Counted& counted) {
    struct item {
      process_key pid;
      thread_key tid;
      std::int64_t start, end;
      event_index i;
    };
    std::vector<item> items;
    for (event_index i = 0; i < t.size(); ++i) {
      const auto& e = t.events[i];
      if (counted(t, e))
        items.push_back({e.pid, e.tid, e.start_ns, e.start_ns + e.duration_ns(), i});
    }
    ranges::stable_sort(items, [](const item& a, const item& b) {
      if (a.pid != b.pid) return a.pid < b.pid;
      if (a.tid != b.tid) return a.tid < b.tid;
      if (a.start != b.start) return a.start < b.start;
      return a.end > b.end;
    });
    nest_info nest(t.size());
    std::vector<const item*> open;
    for (std::size_t k = 0; k < items.size(); ++k) {
      const item& c = items[k];
      if (k > 0 && (items[k - 1].pid != c.pid || items[k - 1].tid != c.tid)) open.clear();
      while (!open.empty() && (c.start >= open.back()->end || c.end > open.back()->end))
        open.pop_back();
      nest.add(c.i, open.empty() ? no_event : open.back()->i, c.end - c.start);
      open.push_back(&c);
    }
    return nest;
  }

  /// Per counted event: the memory its interval holds, and the same less its children's.
  struct memory_info {
    bool known = false;  ///< the table has allocations
    std::vector<std::int64_t> cpu, device, self_cpu, self_device;
    std::uint64_t unheld_count = 0;                  ///< allocations no counted event holds ...
    std::int64_t unheld_cpu = 0, unheld_device = 0;  ///< ... and their sizes
  };
  static constexpr std::int64_t floor_us(std::int64_t ns) noexcept {
    return ns / 1000 - (ns % 1000 < 0 ? 1 : 0);
  }
  /// PyTorch's: CPU, MKLDNN and IDEEP memory is CPU memory.
  static constexpr bool cpu_memory(std::int8_t device_type) noexcept {
    return device_type == 0 || device_type == 2 || device_type == 5;
  }

  template <class Schema>
  static memory_info attribute_memory(const basic_event_table<Schema>& t, const nest_info& nest) {
    memory_info m;
    if constexpr (Schema::template contains<event_kind::allocation>) {
      struct allocation {
        std::int64_t us, cpu, device;
      };
      std::vector<allocation> allocs;
      for (const auto& e : t.events)
        if (const auto* a = e.template get_if<event_kind::allocation>()) {
          const bool cpu = cpu_memory(a->device_type);
          allocs.push_back(
              {floor_us(e.start_ns), cpu ? a->alloc_size : 0, cpu ? 0 : a->alloc_size});
        }
      if (allocs.empty()) return m;
      m.known = true;
      std::stable_sort(allocs.begin(), allocs.end(),
                       [](const allocation& a, const allocation& b) { return a.us < b.us; });
      const std::size_t na = allocs.size(), n = t.size();
      std::vector<std::int64_t> cpu_sum(na + 1, 0), device_sum(na + 1, 0);
      for (std::size_t k = 0; k < na; ++k) {
        cpu_sum[k + 1] = cpu_sum[k] + allocs[k].cpu;
        device_sum[k + 1] = device_sum[k] + allocs[k].device;
      }
      std::vector<std::int32_t> held(na + 1, 0);  // +1 where an interval begins, -1 after it
      m.cpu.assign(n, 0);
      m.device.assign(n, 0);
      for (const event_index i : nest.order) {  // the counted events
        const auto& e = t.events[i];
        const std::int64_t first = floor_us(e.start_ns);
        const std::int64_t last = first + e.duration_ns() / 1000;
        const auto lo = static_cast<std::size_t>(
            std::partition_point(allocs.begin(), allocs.end(),
                                 [first](const allocation& a) { return a.us < first; }) -
            allocs.begin());
        const auto hi = static_cast<std::size_t>(
            std::partition_point(allocs.begin() + static_cast<std::ptrdiff_t>(lo), allocs.end(),
                                 [last](const allocation& a) { return a.us <= last; }) -
            allocs.begin());
        m.cpu[i] = cpu_sum[hi] - cpu_sum[lo];
        m.device[i] = device_sum[hi] - device_sum[lo];
        ++held[lo];
        --held[hi];
      }
      std::int32_t open = 0;
      for (std::size_t k = 0; k < na; ++k) {
        open += held[k];
        if (open != 0) continue;
        ++m.unheld_count;
        m.unheld_cpu += allocs[k].cpu;
        m.unheld_device += allocs[k].device;
      }
      m.self_cpu = m.cpu;
      m.self_device = m.device;
      for (const event_index i : nest.order)
        if (const event_index p = nest.parent[i]; p != no_event) {
          m.self_cpu[p] -= m.cpu[i];
          m.self_device[p] -= m.device[i];
        }
    }
    return m;
  }

  template <class Event>
  static auto device_activity(const Event& e) noexcept {
    return e.template get_if<event_kind::device_activity>();  // null without that kind
  }
  template <class Fields>
  static bool is_annotation(const Fields& d) noexcept {
    return d.activity == activity_type::gpu_user_annotation;
  }
  /// A device-side activity whose time goes to an op (not a GPU annotation).
  template <class Event>
  static bool device_side(const Event& e) noexcept {
    const auto* d = device_activity(e);
    return d != nullptr && is_device_side(d->activity) && !is_annotation(*d);
  }

  /// Adds each device-side activity's duration to its op's entry of `self_device` (see the header
  /// comment); returns whether any activity found one.
  template <class Schema, class Counted>
  static bool attribute_device_time(const basic_event_table<Schema>& t, Counted& counted,
                                    std::vector<std::int64_t>& self_device) {
    // NOLINTNEXTLINE(misc-redundant-expression): two different kinds, per schema
    if constexpr (!Schema::template contains<event_kind::device_activity> ||
                  !Schema::template contains<event_kind::op>) {
      return false;
    } else {
      std::unordered_map<std::uint64_t, event_index> ops;  // correlation id -> first counted op
      bool any = false;
      for (event_index i = 0; i < t.size(); ++i) {
        const auto& e = t.events[i];
        if (const auto* op = e.template get_if<event_kind::op>())
          if (op->correlation_id != 0 && counted(t, e)) ops.emplace(op->correlation_id, i);
        any = any || device_side(e);
      }
      if (!any) return false;
      bool found_any = false;
      for (event_index i = 0; i < t.size(); ++i) {
        const auto& e = t.events[i];
        if (!device_side(e)) continue;
        event_index op = no_event;
        const std::uint64_t ext = e.template get<event_kind::device_activity>().external_id;
        if (const auto it = ext == 0 ? ops.end() : ops.find(ext); it != ops.end()) {
          op = it->second;
        } else if (ext == 0) {
          // Up the parents (at most n steps: a hand-made table may hold a cycle or a bad index).
          std::size_t steps = 0;
          for (event_index p = e.parent; p < t.size() && op == no_event && steps++ < t.size();
               p = t.events[p].parent)
            if (t.events[p].template is<event_kind::op>() && counted(t, t.events[p])) op = p;
        }
        if (op == no_event) continue;
        self_device[op] += e.duration_ns();
        found_any = true;
      }
      return found_any;
    }
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
  const std::uint64_t mag =
      ns < 0 ? 0 - static_cast<std::uint64_t>(ns) : static_cast<std::uint64_t>(ns);
  const double v = static_cast<double>(mag);
  if (mag < 1'000'000) return fmt::format("{}{:.3f}us", sign, v / 1e3);
  if (mag < 1'000'000'000) return fmt::format("{}{:.3f}ms", sign, v / 1e6);
  return fmt::format("{}{:.3f}s", sign, v / 1e9);
}

/// Bytes as PyTorch prints them: "512 b", "1.50 Kb", "2.00 Mb", "1.25 Gb" (powers of 1024).
inline std::string format_memory(std::int64_t bytes) {
  const double v = static_cast<double>(bytes);
  const std::int64_t mag = bytes < 0 ? -bytes : bytes;
  if (mag >= (std::int64_t{1} << 30)) return fmt::format("{:.2f} Gb", v / double(1 << 30));
  if (mag >= (std::int64_t{1} << 20)) return fmt::format("{:.2f} Mb", v / double(1 << 20));
  if (mag >= (std::int64_t{1} << 10)) return fmt::format("{:.2f} Kb", v / double(1 << 10));
  return fmt::format("{} b", bytes);
}

/// The rows as a text table (the first `top` rows; 0: all). Device columns appear when any row
/// has device time; memory columns when the table had allocations (device memory ones when any
/// row has device memory).
inline std::string format_key_averages(const row_list<key_average_row>& rows, std::size_t top = 0) {
  std::size_t name_width = 4;
  bool details = false;
  bool device = false;
  const std::size_t shown = top == 0 || top > rows.size() ? rows.size() : top;
  for (const auto& r : rows | ranges::views::take(shown)) {
    name_width = std::max(name_width, std::min<std::size_t>(r.name.size(), 55));
    details = details || !r.detail.empty();
  }
  bool memory = false, device_memory = false;
  for (const auto& r : rows) {
    device = device || r.device_total_ns != 0;
    memory = memory || r.memory_known;
    device_memory = device_memory || r.device_memory_bytes != 0;
  }
  auto clip = [](const std::string& s, std::size_t w) {
    return s.size() <= w ? s : s.substr(0, w - 3) + "...";
  };
  std::string out;
  const std::string rule(name_width + 64 + (device ? 42 : 0) + (memory ? 28 : 0) +
                             (device_memory ? 32 : 0) + (details ? 42 : 0),
                         '-');
  out += rule + "\n";
  out += fmt::format("{:<{}}  {:>8}  {:>12}  {:>8}  {:>12}  {:>8}", "Name", name_width, "Self %",
                     "Self", "Total %", "Total", "Count");
  if (device)
    out += fmt::format("  {:>12}  {:>8}  {:>14}", "Self device", "Self d %", "Device total");
  if (memory) out += fmt::format("  {:>12}  {:>12}", "CPU Mem", "Self CPU Mem");
  if (device_memory) out += fmt::format("  {:>14}  {:>14}", "Device Mem", "Self Device Mem");
  if (details) out += fmt::format("  {}", "Input shapes / stack");
  out += "\n" + rule + "\n";
  for (const auto& r : rows | ranges::views::take(shown)) {
    out += fmt::format("{:<{}}  {:>7.2f}%  {:>12}  {:>7.2f}%  {:>12}  {:>8}", clip(r.name, 55),
                       name_width, 100 * r.self_share, format_duration(r.self_ns),
                       100 * r.total_share, format_duration(r.total_ns), r.count);
    if (device)
      out += fmt::format("  {:>12}  {:>7.2f}%  {:>14}", format_duration(r.self_device_ns),
                         100 * r.self_device_share, format_duration(r.device_total_ns));
    if (memory)
      out += fmt::format("  {:>12}  {:>12}", format_memory(r.cpu_memory_bytes),
                         format_memory(r.self_cpu_memory_bytes));
    if (device_memory)
      out += fmt::format("  {:>14}  {:>14}", format_memory(r.device_memory_bytes),
                         format_memory(r.self_device_memory_bytes));
    if (details) out += "  " + clip(r.detail, 40);
    out += "\n";
  }
  out += rule + "\n";
  std::int64_t self_sum = 0;
  for (const auto& r : rows) self_sum += r.self_ns;
  out += fmt::format("Self time total: {}\n", format_duration(self_sum));
  if (device) {
    std::int64_t device_sum = 0;  // device rows: the time of the device activities
    for (const auto& r : rows)
      if (r.device_activities) device_sum += r.self_device_ns;
    out += fmt::format("Self device time total: {}\n", format_duration(device_sum));
  }
  return out;
}

TRACEMODEL_END_NAMESPACE
