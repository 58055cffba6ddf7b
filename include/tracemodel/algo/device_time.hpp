// tracemodel/algo — what a device spent its time on: the device intervals of one rank's table,
// each classified, under a policy.
//
//   auto iv = tracemodel::device_intervals(table);                       // exact
//   auto hta = tracemodel::device_intervals(table, tracemodel::hta_device_time{});
//
// The breakdowns (temporal_breakdown.hpp, kernel_type_breakdown.hpp, comm_comp_overlap.hpp)
// read these intervals and nothing else. A policy decides three things:
//  1. which events are device work: `exact_device_time` takes the device activities that run
//     on a stream (kernels, copies, sets, synchronization on a stream); `hta_device_time` takes
//     what Holistic Trace Analysis takes, every complete event with a `stream` other than -1
//     (a Triton `cpu_op` that carries `stream: 0` too);
//  2. the time of each: exact nanoseconds as the file states them, or HTA's integer
//     microseconds (when any start is fractional, `ceil(ts)` and `floor(ts + dur)` computed in
//     doubles, as pandas does, so that short events can end before they start), with the last
//     profiler step and its kernels dropped when the traces hold two or more step names;
//  3. the class of each: `kernel_class::memory` for copies and sets, `other` for
//     synchronization, `communication` by name (the `kernel_classifier`'s patterns), else
//     `computation`; HTA classifies by name alone (its regular expressions, in order).
// Interval times are in the policy's unit (`unit_name`): "ns" or "us".
#pragma once

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "tracemodel/config.hpp"
#include "tracemodel/model/table.hpp"

TRACEMODEL_BEGIN_NAMESPACE

/// What a device interval did.
enum class kernel_class : std::uint8_t { computation, communication, memory, other };
inline constexpr std::string_view kernel_class_names[] = {"COMPUTATION", "COMMUNICATION", "MEMORY",
                                                          "OTHER"};
[[nodiscard]] constexpr std::string_view to_string(kernel_class c) noexcept {
  return kernel_class_names[static_cast<int>(c)];
}

/// One event of device work: [start, end) in the policy's unit; `end < start` only under HTA's
/// rounding. `event` is its index in the table.
struct device_interval {
  std::int64_t start = 0, end = 0;
  kernel_class cls = kernel_class::computation;
  event_index event = no_event;
  std::int64_t stream = -1;
  friend constexpr bool operator==(const device_interval&, const device_interval&) = default;
};

/// Communication kernels by name: a name that starts with one of `prefixes` or contains one of
/// `contains` (case-sensitive). The defaults cover NCCL, RCCL and HCCL.
struct kernel_classifier {
  std::vector<std::string> prefixes{"nccl", "rccl", "hccl"};
  std::vector<std::string> contains{"ncclKernel", "ncclDevKernel", "rcclKernel"};

  [[nodiscard]] bool communication(std::string_view name) const noexcept {
    for (const std::string& p : prefixes)
      if (name.starts_with(p)) return true;
    for (const std::string& c : contains)
      if (name.find(c) != std::string_view::npos) return true;
    return false;
  }
};

/// The default: device activities on a stream, nanoseconds as stated, classes by kind first.
struct exact_device_time {
  static constexpr std::string_view unit_name = "ns";
  kernel_classifier classifier{};

  template <class Schema>
  [[nodiscard]] std::vector<device_interval> intervals(const basic_event_table<Schema>& t) const {
    std::vector<device_interval> out;
    for (event_index i = 0; i < t.size(); ++i) {
      const auto* d = t.events[i].template get_if<event_kind::device_activity>();
      if (d == nullptr || d->stream < 0 || t.events[i].instant_scope != 0) continue;
      kernel_class c = kernel_class::computation;
      switch (d->activity) {
        case activity_type::kernel:
          c = classifier.communication(t.strings.view(d->name)) ? kernel_class::communication
                                                                : kernel_class::computation;
          break;
        case activity_type::gpu_memcpy:
        case activity_type::gpu_memset:
          c = kernel_class::memory;
          break;
        case activity_type::cuda_sync:
          c = kernel_class::other;
          break;
        case activity_type::collective_comm:
          c = kernel_class::communication;
          break;
        default:
          continue;  // runtime calls, annotations, events: not device work
      }
      out.push_back({t.events[i].start_ns, d->end_ns, c, i, d->stream});
    }
    return out;
  }
};

/// HTA's kernel classes, by name alone (hta-analyses.md, section 2).
[[nodiscard]] inline kernel_class hta_kernel_class(std::string_view n) noexcept {
  auto contains = [&](std::string_view s) { return n.find(s) != std::string_view::npos; };
  if (n.starts_with("nccl") || n.starts_with("hip") || n.starts_with("hccl") ||
      contains("ncclKernel"))
    return kernel_class::communication;
  if (n.starts_with("Memcpy") || n.starts_with("hipMemcpy") || n.starts_with("Memset") ||
      n.starts_with("hipMemset") || n.starts_with("dma"))
    return kernel_class::memory;
  // Not computation when any of these matches (anchored at the start unless it begins with .*).
  static constexpr std::string_view starts[] = {"nccl",        "Stream Wait Event",
                                                "runFunction", "hip",
                                                "job_exe",     "packet",
                                                "pe_exe",      "cpum_exe_subgraph",
                                                "hccl",        "collective_subgraph_execution"};
  for (std::string_view s : starts)
    if (n.starts_with(s)) return kernel_class::other;
  if (contains("Memcpy") || contains("Memset") || contains("dma") || contains("Sync"))
    return kernel_class::other;  // (.*Memcpy), (.*Memset), (.*dma), (^.*Sync)
  // (cuda.*LaunchKernel): "cuda" at the start, "LaunchKernel" after it.
  if (n.starts_with("cuda") && n.find("LaunchKernel", 4) != std::string_view::npos)
    return kernel_class::other;
  return kernel_class::computation;
}

namespace detail {
/// The double nearest to `ns / 1000` (as Python reads the decimal text of a time in µs).
[[nodiscard]] inline double micros_as_python(std::int64_t ns) {
  char buf[40];
  const bool neg = ns < 0;
  const std::uint64_t a = neg ? 0 - static_cast<std::uint64_t>(ns) : static_cast<std::uint64_t>(ns);
  char* p = buf;
  if (neg) *p++ = '-';
  p = std::to_chars(p, buf + sizeof buf, a / 1000).ptr;
  *p++ = '.';
  const auto frac = static_cast<unsigned>(a % 1000);
  *p++ = static_cast<char>('0' + frac / 100);
  *p++ = static_cast<char>('0' + frac / 10 % 10);
  *p++ = static_cast<char>('0' + frac % 10);
  double d = 0;
  std::from_chars(buf, p, d);
  return d;
}
}  // namespace detail

/// Holistic Trace Analysis's view (hta-analyses.md, sections 1 and 2), quirks included.
struct hta_device_time {
  static constexpr std::string_view unit_name = "us";
  /// Drop the last profiler step and the kernels launched in it (HTA does when the ranks' traces
  /// hold two or more distinct `ProfilerStep#N` names: see `hta_step_names`).
  bool drop_last_step = false;

  template <class Schema>
  [[nodiscard]] std::vector<device_interval> intervals(const basic_event_table<Schema>& t) const {
    const std::int64_t base = t.info.base_time_ns;
    // pandas makes `ts` a float column (and HTA rounds) when any start is fractional.
    bool rounding = false;
    for (const auto& e : t.events)
      if ((e.start_ns - base) % 1000 != 0) {
        rounding = true;
        break;
      }
    struct row {
      std::int64_t ts, end, stream, correlation;
      bool gpu;  // HTA's GPUKernelFilter
    };
    const name_id stream_key = key_id(t, "stream"), corr_key = key_id(t, "correlation");
    std::vector<row> rows(t.size());
    std::vector<unsigned char> complete(t.size(), 0);
    std::int64_t last_step = std::numeric_limits<std::int64_t>::max();
    bool any_step = false;
    for (event_index i = 0; i < t.size(); ++i) {
      const auto& e = t.events[i];
      const std::int64_t end_ns = e.end_ns();
      if (e.instant_scope != 0 || end_ns == no_end_ns || e.kind() == event_kind::allocation ||
          e.kind() == event_kind::out_of_memory || t.category(e) == "Trace")
        continue;
      complete[i] = 1;
      row& r = rows[i];
      if (rounding) {
        const double ts = detail::micros_as_python(e.start_ns - base);
        const double dur = detail::micros_as_python(end_ns - e.start_ns);
        r.ts = static_cast<std::int64_t>(std::ceil(ts));
        r.end = static_cast<std::int64_t>(std::floor(ts + dur));
      } else {
        r.ts = (e.start_ns - base) / 1000;
        r.end = r.ts + (end_ns - e.start_ns) / 1000;
      }
      r.stream = -1;
      r.correlation = -1;
      if (const auto* d = e.template get_if<event_kind::device_activity>()) {
        r.stream = d->stream;
        if (d->correlation_id != 0) r.correlation = static_cast<std::int64_t>(d->correlation_id);
      }
      for (const attribute& a : t.attrs_of(e)) {
        if (a.key != stream_key && a.key != corr_key) continue;
        std::int64_t v = -1;
        if (a.type == attr_type::integer) v = a.i;
        if (a.type == attr_type::unsigned_integer) v = static_cast<std::int64_t>(a.u);
        if (a.type == attr_type::floating) v = static_cast<std::int64_t>(a.f);
        if (a.type == attr_type::string) {  // pandas' to_numeric: a number in a string counts
          const std::string_view x = t.strings.view(a.s);
          const auto [end, ec] = std::from_chars(x.data(), x.data() + x.size(), v);
          if (ec != std::errc{} || end != x.data() + x.size()) v = -1;
        }
        (a.key == stream_key ? r.stream : r.correlation) = v;
      }
      const std::string_view name = t.name(e);
      r.gpu =
          (r.stream >= 0 && r.correlation >= 0) || name == "Event Sync" || name == "Context Sync";
      if (name.starts_with("ProfilerStep") && (!any_step || r.ts > last_step)) {
        last_step = r.ts;
        any_step = true;
      }
    }
    // The last step's CPU rows and the GPU rows not launched by a kept CPU row go.
    std::vector<std::int64_t> kept_corr;
    if (drop_last_step) {
      for (event_index i = 0; i < t.size(); ++i)
        if (complete[i] && !rows[i].gpu && rows[i].ts < last_step)
          kept_corr.push_back(rows[i].correlation);
      std::sort(kept_corr.begin(), kept_corr.end());
    }
    std::vector<device_interval> out;
    for (event_index i = 0; i < t.size(); ++i) {
      const row& r = rows[i];
      if (!complete[i] || r.stream == -1) continue;
      if (drop_last_step) {
        if (r.gpu ? !std::binary_search(kept_corr.begin(), kept_corr.end(), r.correlation)
                  : r.ts >= last_step)
          continue;
      }
      out.push_back({r.ts, r.end, hta_kernel_class(t.name(t.events[i])), i, r.stream});
    }
    return out;
  }

 private:
  template <class Table>
  static name_id key_id(const Table& t, std::string_view k) {
    name_id id{};
    return t.strings.find(k, id) ? id : name_id{std::numeric_limits<std::uint32_t>::max()};
  }
};

/// The distinct `ProfilerStep#N` names of a table, for HTA's rule that drops the last step when
/// the ranks together hold two or more.
template <class Schema>
[[nodiscard]] std::vector<std::string> hta_step_names(const basic_event_table<Schema>& t) {
  std::vector<std::string> names;
  for (const auto& e : t.events) {
    const std::string_view n = t.name(e);
    if (!n.starts_with("ProfilerStep")) continue;
    std::string_view rest = n.substr(12);
    while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
    if (rest.empty() || rest.front() != '#') continue;
    rest.remove_prefix(1);
    while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
    if (rest.empty() || rest.front() < '0' || rest.front() > '9') continue;
    names.emplace_back(n);
  }
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

/// The device intervals of `t` under `policy` (default: exact).
template <class Schema, class Policy = exact_device_time>
[[nodiscard]] std::vector<device_interval> device_intervals(const basic_event_table<Schema>& t,
                                                            const Policy& policy = {}) {
  return policy.intervals(t);
}

/// Merged intervals: sorted by start, a new one where a start lies after every end before it
/// (touching intervals merge); each [its first start, its greatest end].
struct span {
  std::int64_t start = 0, end = 0;
  friend constexpr bool operator==(const span&, const span&) = default;
};
template <class Pred>
[[nodiscard]] std::vector<span> merge_intervals(const std::vector<device_interval>& iv, Pred keep) {
  std::vector<span> s;
  for (const device_interval& d : iv)
    if (keep(d)) s.push_back({d.start, d.end});
  std::sort(s.begin(), s.end(), [](const span& a, const span& b) { return a.start < b.start; });
  std::vector<span> out;
  std::int64_t reach = 0;  // the greatest end so far (of every interval, not only the group's)
  for (const span& x : s) {
    if (out.empty() || x.start > reach)
      out.push_back(x);
    else
      out.back().end = std::max(out.back().end, x.end);
    reach = out.size() == 1 && &x == s.data() ? x.end : std::max(reach, x.end);
  }
  return out;
}

TRACEMODEL_END_NAMESPACE
