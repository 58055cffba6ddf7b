// tracemodel/hta — Holistic Trace Analysis's frame: the rows its analyses read, made from an
// event table as HTA's loader makes them (docs/hta-rules.md, "The frame"), quirks included.
//
//   const tracemodel::hta::frame f(table, /*drop_last_step=*/true);
//
// A row per complete event (instants, allocations, flows, metadata and the `Trace` span are not
// rows), in the file's order when the reader kept it (`hta::read_options()`), else in the
// table's, with:
//  - its times in integer microseconds: when any start is fractional, `ceil(ts)` and
//    `floor(ts + dur)` computed in doubles from the correctly rounded decimal values, as pandas
//    does (so an event shorter than a microsecond can end before it starts); else the times cut
//    to microseconds;
//  - `stream` and `correlation` from its args (-1 without; a stream that is not a number, such
//    as AMD's "0x0", is -1, as pandas' to_numeric makes it);
//  - `gpu`: HTA's GPU-kernel test, `stream >= 0 and correlation >= 0`, or the name "Event Sync"
//    or "Context Sync";
//  - `partner`: the row on the other side of its correlation id (a kernel's runtime call, a
//    call's kernel; the last one when there are several), or -1;
//  - `memory_bw`: the `memory bandwidth (GB/s)` arg (0 without).
// With `drop_last_step`, HTA's filter: rows not `gpu` that start at or after the last
// `ProfilerStep` go, and `gpu` rows whose correlation no kept row has go too.
#pragma once

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tracemodel/algo/kernel_class.hpp"
#include "tracemodel/config.hpp"
#include "tracemodel/detail/flat_map.hpp"
#include "tracemodel/hta/kernel_class.hpp"
#include "tracemodel/hta/numpy.hpp"
#include "tracemodel/model/table.hpp"

TRACEMODEL_BEGIN_NAMESPACE
namespace hta {

namespace detail {
/// The double nearest to `ns / 1000`, through its decimal text (as Python reads a time in µs).
[[nodiscard]] inline double micros_from_text(std::int64_t ns) {
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

/// The same, faster.
[[nodiscard]] inline double micros_as_python(std::int64_t ns) {
  // With a 64-bit significand, ns / 1000 is within 2^-64 of itself, far nearer than the 0.001
  // between a three-decimal value and a point halfway between two doubles (exact halves stay
  // exact): rounding it to double is the correctly rounded value. Else through the text.
  if constexpr (std::numeric_limits<long double>::digits >= 64) {
    if (ns > -(std::int64_t{1} << 62) && ns < (std::int64_t{1} << 62))
      return static_cast<double>(static_cast<long double>(ns) / 1000.0L);
  }
  return micros_from_text(ns);
}
}  // namespace detail

/// What HTA's analyses ask of a row's name and category, computed once per distinct one.
namespace flag {
inline constexpr std::uint8_t step = 1;              ///< the name starts with `ProfilerStep`
inline constexpr std::uint8_t sync = 2;              ///< "Event Sync" or "Context Sync"
inline constexpr std::uint8_t launch = 4;            ///< a kernel launch of the launch statistics
inline constexpr std::uint8_t launch_copy = 8;       ///< `cudaMemcpyAsync` or `cudaMemsetAsync`
inline constexpr std::uint8_t queued = 16;           ///< a call of the queue length's list
inline constexpr std::uint8_t idle_cat = 32;         ///< a category of the idle time breakdown
inline constexpr std::uint8_t gpu_annotation = 64;   ///< category `gpu_user_annotation`
inline constexpr std::uint8_t cpu_annotation = 128;  ///< category `user_annotation`
}  // namespace flag

namespace detail {
[[nodiscard]] inline std::uint8_t name_flags(std::string_view n) noexcept {
  static constexpr std::string_view queued[] = {"cudaLaunchKernel",
                                                "cudaLaunchKernelExC",
                                                "cuLaunchKernel",
                                                "cuLaunchKernelEx",
                                                "cudaMemcpyAsync",
                                                "cudaMemsetAsync",
                                                "runFunction - job_prep_and_submit_for_execution",
                                                "hipLaunchKernel",
                                                "hipExtModuleLaunchKernel",
                                                "hipMemsetAsync",
                                                "hipMemcpyAsync",
                                                "hipMemcpyWithStream"};
  std::uint8_t f = 0;
  if (n.starts_with("ProfilerStep")) f |= flag::step;
  if (n == "Event Sync" || n == "Context Sync") f |= flag::sync;
  if (n == "cudaLaunchKernel" || n == "cudaLaunchKernelExC" ||
      n == "runFunction - job_prep_and_submit_for_execution")
    f |= flag::launch;
  if (n == "cudaMemcpyAsync" || n == "cudaMemsetAsync") f |= flag::launch_copy;
  for (std::string_view q : queued)
    if (n == q) f |= flag::queued;
  return f;
}
[[nodiscard]] inline std::uint8_t category_flags(std::string_view c) noexcept {
  if (c == "kernel" || c == "Kernel" || c == "gpu_memset" || c == "Memset" || c == "gpu_memcpy" ||
      c == "Memcpy" || c == "mtia_ccp_events")
    return flag::idle_cat;
  if (c == "gpu_user_annotation") return flag::gpu_annotation;
  if (c == "user_annotation") return flag::cpu_annotation;
  return 0;
}
}  // namespace detail

struct row {  // (members ordered so that none pads: 88 bytes a row)
  event_index event = no_event;
  kernel_class cls = kernel_class::computation;  ///< HTA's class of the name
  std::uint8_t flags = 0;                        ///< `flag` bits
  bool gpu = false;
  std::string_view name, cat;    ///< the event's (views into the table)
  std::int64_t ts = 0, end = 0;  ///< microseconds; `end < ts` can happen (see above)
  std::int64_t stream = -1, correlation = -1;
  std::int64_t partner = -1;  ///< a row index of the frame, or -1
  double memory_bw = 0;
};

struct frame {
  tracemodel::detail::scratch_vector<row> rows;  ///< (a large array: memory.hpp)
  frame() = default;
  bool rounded = false;   ///< the times were rounded (some start was fractional)
  bool any_step = false;  ///< a `ProfilerStep` row exists
  std::int64_t last_step = std::numeric_limits<std::int64_t>::max();  ///< its latest start

  template <class Schema>
  frame(const basic_event_table<Schema>& t, bool drop_last_step) : frame(t) {
    if (drop_last_step) *this = std::move(*this).without_last_step();
  }

  /// The frame, all steps kept.
  template <class Schema>
  explicit frame(const basic_event_table<Schema>& t) {
    const std::int64_t base = t.info.base_time_ns;
    // pandas makes `ts` a float column (and HTA rounds) when any start is fractional.
    for (const auto& e : t.events)
      if ((e.start_ns - base) % 1000 != 0) {
        rounded = true;
        break;
      }
    const name_id stream_key = key_id(t, "stream"), corr_key = key_id(t, "correlation"),
                  bw_key = key_id(t, "memory bandwidth (GB/s)");
    // A name's class and flags, and a category's flags, worked out once: names by their id in
    // the table's strings (the default names of kinds without one by their text), categories
    // by their text in a few slots (a trace has a handful).
    struct name_info {
      kernel_class cls;
      std::uint8_t flags;
      bool known = false;
    };
    std::vector<name_info> by_id(t.strings.size());
    std::unordered_map<std::string_view, name_info, tracemodel::detail::same_view,
                       tracemodel::detail::same_view>
        other_names;
    std::vector<std::pair<std::string_view, std::uint8_t>> cats;
    auto info_of = [&](const auto& e, std::string_view name) -> const name_info& {
      const std::uint32_t id = e.visit([](const auto& x) -> std::uint32_t {
        if constexpr (requires { x.name; }) {
          if constexpr (std::is_same_v<decltype(x.name), name_id>)
            return static_cast<std::uint32_t>(x.name);
        }
        return 0;
      });
      name_info& n = id != 0 && id < by_id.size() ? by_id[id] : other_names[name];
      if (!n.known) n = {kernel_class_of(name), detail::name_flags(name), true};
      return n;
    };
    auto cat_flags = [&](std::string_view cat) {
      for (const auto& [c, f] : cats)
        if (c.data() == cat.data() && c.size() == cat.size()) return f;
      const std::uint8_t f = detail::category_flags(cat);
      if (cats.size() < 32) cats.emplace_back(cat, f);  // (more: worked out each time)
      return f;
    };
    rows.reserve(t.size());
    // HTA's frame is in file order: the table's when the reader kept it (read_options).
    tracemodel::detail::scratch_vector<event_index> by_file(t.size());
    for (event_index i = 0; i < t.size(); ++i)
      by_file[t.info.file_order.empty() ? i : t.info.file_order[i]] = i;
    for (const event_index i : by_file) {
      const auto& e = t.events[i];
      const std::int64_t end_ns = e.end_ns();
      if (e.instant_scope != 0 || end_ns == no_end_ns || e.kind() == event_kind::allocation ||
          e.kind() == event_kind::out_of_memory)
        continue;
      const std::string_view cat = t.category(e);
      if (cat == "Trace") continue;
      row& r = rows.emplace_back();
      r.event = i;
      r.name = t.name(e);
      r.cat = cat;
      const name_info& n = info_of(e, r.name);
      r.cls = n.cls;
      r.flags = n.flags | cat_flags(cat);
      if (rounded) {
        const double ts = detail::micros_as_python(e.start_ns - base);
        const double dur = detail::micros_as_python(end_ns - e.start_ns);
        r.ts = static_cast<std::int64_t>(std::ceil(ts));
        r.end = static_cast<std::int64_t>(std::floor(ts + dur));
      } else {
        r.ts = (e.start_ns - base) / 1000;
        r.end = r.ts + (end_ns - e.start_ns) / 1000;
      }
      if (const auto* d = e.template get_if<event_kind::device_activity>()) {
        r.stream = d->stream;
        if (d->correlation_id != 0) r.correlation = static_cast<std::int64_t>(d->correlation_id);
      }
      for (const attribute& a : t.attrs_of(e)) {
        if (a.key == bw_key) {
          r.memory_bw = a.type == attr_type::floating  ? a.f
                        : a.type == attr_type::integer ? static_cast<double>(a.i)
                                                       : 0.0;
          continue;
        }
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
      r.gpu = (r.stream >= 0 && r.correlation >= 0) || (r.flags & flag::sync) != 0;
      if ((r.flags & flag::step) != 0 && (!any_step || r.ts > last_step)) {
        last_step = r.ts;
        any_step = true;
      }
    }
    // Partners: the last row of the other side with the same correlation id.
    std::size_t correlated[2] = {0, 0};
    for (const row& r : rows)
      if (r.correlation != -1) ++correlated[r.gpu];
    tracemodel::detail::flat_map<std::int64_t> last[2] = {
        tracemodel::detail::flat_map<std::int64_t>(correlated[0]),
        tracemodel::detail::flat_map<std::int64_t>(correlated[1])};
    for (std::size_t k = 0; k < rows.size(); ++k) {
      const row& r = rows[k];
      if (r.correlation == -1) continue;
      last[r.gpu].insert_or_assign(static_cast<std::uint64_t>(r.correlation),
                                   static_cast<std::int64_t>(k));
    }
    for (row& r : rows) {
      if (r.correlation == -1) continue;
      if (const std::int64_t* k = last[!r.gpu].find(static_cast<std::uint64_t>(r.correlation)))
        r.partner = *k;
    }
  }

  /// HTA's filter applied (see the header comment), in this frame's memory: the filtered rows
  /// take the place of all of them (a copy of the kept GPU rows aside), so that dropping the
  /// last step makes no second frame.
  [[nodiscard]] frame without_last_step() && {
    frame f;
    f.rounded = rounded;
    f.any_step = any_step;
    f.last_step = last_step;
    // HTA's filter: CPU rows before the last step, and the GPU rows launched by one of them.
    tracemodel::detail::scratch_vector<std::int64_t> kept;
    kept.reserve(static_cast<std::size_t>(std::count_if(
        rows.begin(), rows.end(), [&](const row& r) { return !r.gpu && r.ts < last_step; })));
    for (const row& r : rows)
      if (!r.gpu && r.ts < last_step) kept.push_back(r.correlation);
    std::sort(kept.begin(), kept.end());
    tracemodel::detail::scratch_vector<unsigned char> keep(rows.size());
    std::size_t gpu = 0, cpu = 0;
    for (std::size_t k = 0; k < rows.size(); ++k) {
      const row& r = rows[k];
      keep[k] =
          r.gpu ? std::binary_search(kept.begin(), kept.end(), r.correlation) : r.ts < last_step;
      if (keep[k]) ++(r.gpu ? gpu : cpu);
    }
    // The filtered frame lists the GPU rows first, then the others, each in their order.
    tracemodel::detail::scratch_vector<std::int64_t> new_index(rows.size(), -1);
    tracemodel::detail::scratch_vector<row> gpu_rows;
    gpu_rows.reserve(gpu);
    std::size_t next_cpu = 0;
    for (std::size_t k = 0; k < rows.size(); ++k) {
      if (!keep[k]) continue;
      if (rows[k].gpu) {
        new_index[k] = static_cast<std::int64_t>(gpu_rows.size());
        gpu_rows.push_back(rows[k]);
      } else {
        new_index[k] = static_cast<std::int64_t>(gpu + next_cpu);
        rows[next_cpu++] = rows[k];  // (never ahead of k)
      }
    }
    rows.resize(gpu + cpu);
    std::move_backward(rows.begin(), rows.begin() + static_cast<std::ptrdiff_t>(cpu), rows.end());
    std::copy(gpu_rows.begin(), gpu_rows.end(), rows.begin());
    f.rows = std::move(rows);
    rows.clear();
    for (row& r : f.rows)
      if (r.partner != -1) r.partner = new_index[static_cast<std::size_t>(r.partner)];
    return f;
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
[[nodiscard]] std::vector<std::string> step_names(const basic_event_table<Schema>& t) {
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

}  // namespace hta
TRACEMODEL_END_NAMESPACE
