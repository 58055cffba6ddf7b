// tracemodel/formats — a rank's results as bytes: what the process that read a rank (a
// cluster's worker) sends the one that gathers the ranks, read back exactly (every number to
// the bit), so that a report gathered from parts equals the one made in one process.
//
//   std::string bytes = tracemodel::encode_part(part, "gpu");      // where the rank was read
//   auto part = tracemodel::decode_part<tracemodel::gpu_rank_part>(bytes, "gpu");  // elsewhere
//
// A struct is encoded member by member, in the order `part_members<T>::of` lists them (a tuple
// of pointers to members); integers as zigzag varints, doubles as their 8 bytes, strings and
// lists with their length first. Bytes that are not a whole part of the kind asked for (cut
// short, another kind, another version, a count larger than the bytes left) throw input_error.
#pragma once

#include <array>
#include <bit>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "tracemodel/algo/trace_diff.hpp"
#include "tracemodel/config.hpp"
#include "tracemodel/formats/gpu_report.hpp"

TRACEMODEL_BEGIN_NAMESPACE

/// One rank's totals per name for a trace diff (algo/trace_diff.hpp), and with them, when asked,
/// its part of the device-time report: what a worker sends for `tracemodel diff`.
struct diff_rank_part {
  std::string file;
  std::int64_t rank = 0;
  step_totals totals;
  anomaly_counts repairs;
  std::optional<gpu_rank_part> gpu;
};

/// The members of `T` that its encoding holds: `static constexpr auto of = std::tuple{&T::a,
/// ...};`. Specialize it for a struct of your own to send it as part of a rank's results.
template <class T>
struct part_members;

namespace detail {

template <class T>
concept has_part_members = requires {
  part_members<T>::of;
};
template <class T>
struct is_vector : std::false_type {};
template <class T, class A>
struct is_vector<std::vector<T, A>> : std::true_type {};
template <class T>
struct is_map : std::false_type {};
template <class K, class V, class C, class A>
struct is_map<std::map<K, V, C, A>> : std::true_type {};
template <class T>
struct is_optional : std::false_type {};
template <class T>
struct is_optional<std::optional<T>> : std::true_type {};
template <class T>
struct is_pair : std::false_type {};
template <class A, class B>
struct is_pair<std::pair<A, B>> : std::true_type {};
template <class T>
struct is_array : std::false_type {};
template <class T, std::size_t N>
struct is_array<std::array<T, N>> : std::true_type {};

inline constexpr std::string_view part_magic = "tmpart1\n";

struct part_writer {
  std::string out;
  void varint(std::uint64_t v) {
    while (v >= 0x80) {
      out.push_back(static_cast<char>((v & 0x7f) | 0x80));
      v >>= 7;
    }
    out.push_back(static_cast<char>(v));
  }
  template <class T>
  void put(const T& x) {
    if constexpr (std::is_same_v<T, bool>) {
      out.push_back(x ? '\1' : '\0');
    } else if constexpr (std::is_enum_v<T>) {
      put(static_cast<std::underlying_type_t<T>>(x));
    } else if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
      const auto v = static_cast<std::int64_t>(x);  // zigzag
      varint((static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63));
    } else if constexpr (std::is_integral_v<T>) {
      varint(static_cast<std::uint64_t>(x));
    } else if constexpr (std::is_same_v<T, double>) {
      const auto bits = std::bit_cast<std::uint64_t>(x);
      for (int k = 0; k < 8; ++k) out.push_back(static_cast<char>((bits >> (8 * k)) & 0xff));
    } else if constexpr (std::is_same_v<T, std::string>) {
      varint(x.size());
      out += x;
    } else if constexpr (is_optional<T>::value) {
      put(x.has_value());
      if (x) put(*x);
    } else if constexpr (is_pair<T>::value) {
      put(x.first);
      put(x.second);
    } else if constexpr (is_array<T>::value) {
      for (const auto& e : x) put(e);
    } else if constexpr (is_vector<T>::value || is_map<T>::value) {
      varint(x.size());
      for (const auto& e : x) put(e);
    } else {
      static_assert(has_part_members<T>, "give the struct a part_members specialization");
      std::apply([&](auto... m) { (put(x.*m), ...); }, part_members<T>::of);
    }
  }
};

struct part_reader {
  std::string_view in;
  std::size_t at = 0;
  [[noreturn]] void fail(const char* what) const {
    throw input_error(std::string("rank part: ") + what, at);
  }
  std::uint64_t varint() {
    std::uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (at >= in.size()) fail("cut short");
      const auto b = static_cast<unsigned char>(in[at++]);
      v |= static_cast<std::uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
    }
    fail("a number longer than 64 bits");
  }
  /// A count of elements of at least one byte each: never more than the bytes left.
  std::size_t count() {
    const std::uint64_t n = varint();
    if (n > in.size() - at) fail("a count larger than the bytes left");
    return static_cast<std::size_t>(n);
  }
  template <class T>
  void get(T& x) {
    if constexpr (std::is_same_v<T, bool>) {
      if (at >= in.size()) fail("cut short");
      const char c = in[at++];
      if (c != '\0' && c != '\1') fail("a truth value that is neither 0 nor 1");
      x = c == '\1';
    } else if constexpr (std::is_enum_v<T>) {
      std::underlying_type_t<T> v{};
      get(v);
      x = static_cast<T>(v);
    } else if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
      const std::uint64_t z = varint();
      const auto v = static_cast<std::int64_t>((z >> 1) ^ (~(z & 1) + 1));
      if (v < static_cast<std::int64_t>(std::numeric_limits<T>::min()) ||
          v > static_cast<std::int64_t>(std::numeric_limits<T>::max()))
        fail("a number out of its type's range");
      x = static_cast<T>(v);
    } else if constexpr (std::is_integral_v<T>) {
      const std::uint64_t v = varint();
      if (v > static_cast<std::uint64_t>(std::numeric_limits<T>::max()))
        fail("a number out of its type's range");
      x = static_cast<T>(v);
    } else if constexpr (std::is_same_v<T, double>) {
      if (in.size() - at < 8) fail("cut short");
      std::uint64_t bits = 0;
      for (int k = 0; k < 8; ++k)
        bits |= static_cast<std::uint64_t>(
                    static_cast<unsigned char>(in[at + static_cast<std::size_t>(k)]))
                << (8 * k);
      at += 8;
      x = std::bit_cast<double>(bits);
    } else if constexpr (std::is_same_v<T, std::string>) {
      const std::size_t n = count();
      x.assign(in.substr(at, n));
      at += n;
    } else if constexpr (is_optional<T>::value) {
      bool has = false;
      get(has);
      if (has)
        get(x.emplace());
      else
        x.reset();
    } else if constexpr (is_pair<T>::value) {
      get(x.first);
      get(x.second);
    } else if constexpr (is_array<T>::value) {
      for (auto& e : x) get(e);
    } else if constexpr (is_vector<T>::value) {
      const std::size_t n = count();
      x.clear();
      x.reserve(n);
      for (std::size_t k = 0; k < n; ++k) get(x.emplace_back());
    } else if constexpr (is_map<T>::value) {
      const std::size_t n = count();
      x.clear();
      for (std::size_t k = 0; k < n; ++k) {
        std::pair<typename T::key_type, typename T::mapped_type> e;
        get(e);
        x.insert_or_assign(std::move(e.first), std::move(e.second));
      }
    } else {
      static_assert(has_part_members<T>, "give the struct a part_members specialization");
      std::apply([&](auto... m) { (get(x.*m), ...); }, part_members<T>::of);
    }
  }
};

}  // namespace detail

/// `x` as bytes, marked as a part of kind `kind` (a short name of what it holds).
template <class T>
[[nodiscard]] std::string encode_part(const T& x, std::string_view kind) {
  detail::part_writer w;
  w.out.append(detail::part_magic);
  w.put(std::string(kind));
  w.put(x);
  return std::move(w.out);
}

/// The `T` that `encode_part(x, kind)` made these bytes of; input_error when they are not one.
template <class T>
[[nodiscard]] T decode_part(std::string_view bytes, std::string_view kind) {
  detail::part_reader r{bytes};
  if (bytes.substr(0, detail::part_magic.size()) != detail::part_magic)
    r.fail("not a tracemodel rank part (or of another version)");
  r.at = detail::part_magic.size();
  std::string k;
  r.get(k);
  if (k != kind) throw input_error("rank part: a part of " + k + ", not of " + std::string(kind));
  T x{};
  r.get(x);
  if (r.at != bytes.size()) r.fail("bytes after the part's end");
  return x;
}

// The members of the device-time report's rows, in the order they are sent.
template <>
struct part_members<temporal_breakdown_row> {
  using T = temporal_breakdown_row;
  static constexpr auto of =
      std::tuple{&T::idle,      &T::compute,      &T::non_compute,      &T::kernel_time,
                 &T::idle_pctg, &T::compute_pctg, &T::non_compute_pctg, &T::any};
};
template <>
struct part_members<interval_stats> {
  using T = interval_stats;
  static constexpr auto of =
      std::tuple{&T::count, &T::mean, &T::std, &T::min, &T::q25, &T::q50, &T::q75, &T::max};
};
template <>
struct part_members<idle_row> {
  using T = idle_row;
  static constexpr auto of =
      std::tuple{&T::device, &T::stream, &T::category, &T::idle_time, &T::ratio, &T::stats};
};
template <>
struct part_members<kernel_row> {
  using T = kernel_row;
  static constexpr auto of =
      std::tuple{&T::name, &T::cls, &T::count, &T::sum, &T::min, &T::max, &T::mean, &T::std};
};
template <>
struct part_members<launch_row> {
  using T = launch_row;
  static constexpr auto of =
      std::tuple{&T::correlation,  &T::cpu_duration,    &T::gpu_duration, &T::launch_delay,
                 &T::short_kernel, &T::runtime_outlier, &T::delay_outlier};
};
template <>
struct part_members<queue_step> {
  static constexpr auto of = std::tuple{&queue_step::ts, &queue_step::length};
};
template <>
struct part_members<stream_queue> {
  using T = stream_queue;
  static constexpr auto of =
      std::tuple{&T::device, &T::stream, &T::steps, &T::summary, &T::time_full};
};
template <>
struct part_members<bandwidth_step> {
  static constexpr auto of = std::tuple{&bandwidth_step::ts, &bandwidth_step::gbps};
};
template <>
struct part_members<memory_bandwidth_series> {
  using T = memory_bandwidth_series;
  static constexpr auto of = std::tuple{&T::kind, &T::steps, &T::summary};
};
template <>
struct part_members<timed_event> {
  static constexpr auto of =
      std::tuple{&timed_event::key, &timed_event::start, &timed_event::duration};
};
template <>
struct part_members<rank_timeline> {
  static constexpr auto of = std::tuple{&rank_timeline::steps, &rank_timeline::collectives};
};
template <>
struct part_members<anomaly_counts> {
  static constexpr auto of = std::tuple{&anomaly_counts::n};
};
template <>
struct part_members<gpu_rank> {
  using T = gpu_rank;
  static constexpr auto of = std::tuple{&T::rank,
                                        &T::temporal,
                                        &T::overlap,
                                        &T::idle,
                                        &T::kernels,
                                        &T::launches,
                                        &T::queues,
                                        &T::bandwidth,
                                        &T::gpu_annotations,
                                        &T::has_gpu_annotations,
                                        &T::timeline,
                                        &T::class_sets,
                                        &T::class_sets_seen,
                                        &T::repairs};
};

template <>
struct part_members<kernel_type_row> {
  using T = kernel_type_row;
  static constexpr auto of = std::tuple{&T::kernel_type, &T::sum, &T::percentage};
};
template <>
struct part_members<spread_row> {
  using T = spread_row;
  static constexpr auto of =
      std::tuple{&T::key,          &T::ranks,        &T::first_start, &T::start_spread,
                 &T::min_duration, &T::max_duration, &T::last_rank};
};
template <>
struct part_members<straggler_row> {
  using T = straggler_row;
  static constexpr auto of = std::tuple{&T::rank, &T::last, &T::mean_lag};
};
template <>
struct part_members<rank_spread> {
  using T = rank_spread;
  static constexpr auto of = std::tuple{&T::steps, &T::collectives, &T::stragglers};
};
/// (A whole report too: two reports are equal when their encodings are.)
template <class Unit>
struct part_members<basic_gpu_report<Unit>> {
  using T = basic_gpu_report<Unit>;
  static constexpr auto of = std::tuple{&T::ranks, &T::kernel_types, &T::spread, &T::repairs};
};
template <>
struct part_members<gpu_rank_part> {
  using T = gpu_rank_part;
  static constexpr auto of = std::tuple{&T::file, &T::result, &T::steps, &T::all_steps};
};

template <>
struct part_members<op_total> {
  static constexpr auto of = std::tuple{&op_total::count, &op_total::duration};
};
template <>
struct part_members<op_totals> {
  static constexpr auto of = std::tuple{&op_totals::by_name};
};
template <>
struct part_members<step_totals> {
  static constexpr auto of = std::tuple{&step_totals::steps, &step_totals::all};
};
template <>
struct part_members<diff_rank_part> {
  using T = diff_rank_part;
  static constexpr auto of = std::tuple{&T::file, &T::rank, &T::totals, &T::repairs, &T::gpu};
};

TRACEMODEL_END_NAMESPACE
