// tracemodel/collect — every policy concept of recording, and the checks a record queue makes.
//
// A record queue takes its policies as one struct (`record_queue<Schema, Features, Policies>`,
// `default_record_policies` in collect/record_queue.hpp):
//
//   struct my_policies : tracemodel::default_record_policies {
//     using value_traits = my_runtime::value_traits;   // what an op input is
//   };
//
//   clock         `static approx_time now() noexcept` and `static constexpr bool ticks_are_ns`
//   id_source     `static std::uint64_t take(std::uint64_t n)`: n fresh correlation ids
//                 (storage/id_source.hpp)
//   value_traits  what the runtime's values are (below); `no_value_traits` when no inputs are
//                 recorded
//   op_hooks      `static constexpr bool enabled`, `on_begin(correlation_id, scope)`,
//                 `on_end(scope)`: called at every op's begin and end when enabled
//
// The queue checks them with one `static_assert` per missing piece (tests/compile_fail/).
#pragma once

#include <concepts>
#include <cstdint>
#include <span>
#include <string_view>
#include <type_traits>

#include "tracemodel/config.hpp"
#include "tracemodel/model/event.hpp"
#include "tracemodel/model/types.hpp"
#include "tracemodel/storage/id_source.hpp"

TRACEMODEL_BEGIN_NAMESPACE

using approx_time = std::uint64_t;

/// The hot path's clock: monotonic per thread.
template <class C>
concept approx_clock = requires {
  { C::now() } -> std::same_as<approx_time>;
  { C::ticks_are_ns } -> std::convertible_to<bool>;
};

/// What a value-traits policy tells about one tensor.
struct tensor_info {
  std::uint64_t impl = 0;
  std::uint64_t storage = 0;
  std::int8_t device_type = 0;
  std::int8_t device_index = -1;
  std::uint8_t dtype = 0;
  std::uint8_t layout = strided_layout;
  std::span<const std::int64_t> sizes{};
  std::span<const std::int64_t> strides{};
};

/// What a runtime's value `V` is, for the input encoder (collect/encoder.hpp):
///   kind(v)                tensor (defined), undefined_tensor, tensor_list, scalar,
///                          scalar_list or other
///   tensor(v)              for kind() == tensor
///   scalar(v)              for kind() == scalar
///   for_each_element(v, f) for lists: calls f(const V&) per element
///   dtype_name(code)       the name of a dtype code ("float", ...)
template <class T, class V>
concept value_traits = requires(const V& v, void (*f)(const V&), std::uint8_t code) {
  { T::kind(v) } -> std::same_as<input_kind>;
  { T::tensor(v) } -> std::same_as<tensor_info>;
  { T::scalar(v) } -> std::same_as<scalar_value>;
  T::for_each_element(v, f);
  { T::dtype_name(code) } -> std::convertible_to<std::string_view>;
};

/// Called at every op's begin and end (the CUPTI adapter pushes external correlation ids there).
template <class H>
concept op_hooks_policy = requires(std::uint64_t id, op_scope scope) {
  { H::enabled } -> std::convertible_to<bool>;
  H::on_begin(id, scope);
  H::on_end(scope);
};

/// A record queue's policies (see the header comment).
template <class P>
concept record_policies = requires {
  typename P::clock;
  typename P::id_source;
  typename P::value_traits;
  typename P::op_hooks;
}
&&approx_clock<typename P::clock>&& id_source<typename P::id_source>&&
    op_hooks_policy<typename P::op_hooks>;

namespace detail {

template <class P>
consteval bool check_record_policies() {
  constexpr bool clock = requires { typename P::clock; };
  constexpr bool ids = requires { typename P::id_source; };
  constexpr bool traits = requires { typename P::value_traits; };
  constexpr bool hooks = requires { typename P::op_hooks; };
  static_assert(clock,
                "tracemodel record policies: needs `using clock = ...` (default_clock, or "
                "a type with `static approx_time now() noexcept` and `static constexpr "
                "bool ticks_are_ns`); derive from default_record_policies to keep the "
                "defaults");
  static_assert(ids,
                "tracemodel record policies: needs `using id_source = ...` "
                "(process_id_source, or a type with `static std::uint64_t "
                "take(std::uint64_t)`)");
  static_assert(traits,
                "tracemodel record policies: needs `using value_traits = ...` "
                "(no_value_traits when no inputs are recorded)");
  static_assert(hooks, "tracemodel record policies: needs `using op_hooks = ...` (no_op_hooks)");
  if constexpr (clock)
    static_assert(approx_clock<typename P::clock>,
                  "tracemodel record policies: clock needs `static approx_time now() noexcept` "
                  "and `static constexpr bool ticks_are_ns`");
  if constexpr (ids)
    static_assert(id_source<typename P::id_source>,
                  "tracemodel record policies: id_source needs `static std::uint64_t "
                  "take(std::uint64_t n)`");
  if constexpr (hooks)
    static_assert(op_hooks_policy<typename P::op_hooks>,
                  "tracemodel record policies: op_hooks needs `static constexpr bool enabled`, "
                  "`static void on_begin(std::uint64_t, op_scope)` and `static void "
                  "on_end(op_scope)`");
  return record_policies<P>;
}

template <class T, class V>
consteval bool check_value_traits() {
  static_assert(
      requires(const V& v) {
        { T::kind(v) } -> std::same_as<input_kind>;
      },
      "tracemodel value traits: needs `static input_kind kind(const V&)`");
  static_assert(
      requires(const V& v) {
        { T::tensor(v) } -> std::same_as<tensor_info>;
      },
      "tracemodel value traits: needs `static tensor_info tensor(const V&)`");
  static_assert(
      requires(const V& v) {
        { T::scalar(v) } -> std::same_as<scalar_value>;
      },
      "tracemodel value traits: needs `static scalar_value scalar(const V&)`");
  static_assert(
      requires(const V& v, void (*f)(const V&)) { T::for_each_element(v, f); },
      "tracemodel value traits: needs `template <class F> static void "
      "for_each_element(const V&, F&&)` (calls F per element of a list)");
  static_assert(
      requires(std::uint8_t code) {
        { T::dtype_name(code) } -> std::convertible_to<std::string_view>;
      },
      "tracemodel value traits: needs `static std::string_view dtype_name(std::uint8_t)`");
  return value_traits<T, V>;
}

}  // namespace detail
TRACEMODEL_END_NAMESPACE
