// tracemodel/model — Boost.Hana reflection of the payloads.
//
// Exporters, printers and tests walk payload fields through this header instead of writing
// per-field code. It is kept apart from `model/fields.hpp` so that the recording path does not
// pay for Hana. A user kind is made reflectable the same way:
//
//   BOOST_HANA_ADAPT_STRUCT(tracemodel::extra_fields<gc_pause>, name, end_ns, bytes_freed);
//
// (at global scope), or with BOOST_HANA_DEFINE_STRUCT inside the payload.
#pragma once

#include <boost/hana/accessors.hpp>
#include <boost/hana/adapt_struct.hpp>
#include <boost/hana/at.hpp>
#include <boost/hana/core/to.hpp>
#include <boost/hana/first.hpp>
#include <boost/hana/for_each.hpp>
#include <boost/hana/length.hpp>
#include <boost/hana/second.hpp>
#include <boost/hana/string.hpp>

#include <cstddef>
#include <string_view>
#include <type_traits>
#include <utility>

#include "tracemodel/config.hpp"
#include "tracemodel/model/fields.hpp"

BOOST_HANA_ADAPT_STRUCT(tracemodel::extra_fields<tracemodel::event_kind::op>, name, scope, flags,
                        depth, sequence_number, fwd_thread_id, correlation_id, end_ns, end_tid,
                        debug_handle, inputs);
BOOST_HANA_ADAPT_STRUCT(tracemodel::extra_fields<tracemodel::event_kind::backend>, name, backend,
                        scope, end_ns, debug_handle);
BOOST_HANA_ADAPT_STRUCT(tracemodel::extra_fields<tracemodel::event_kind::allocation>, ptr,
                        alloc_size, total_allocated, total_reserved, device_type, device_index,
                        tensor_id);
BOOST_HANA_ADAPT_STRUCT(tracemodel::extra_fields<tracemodel::event_kind::out_of_memory>, alloc_size,
                        total_allocated, total_reserved, device_type, device_index);
BOOST_HANA_ADAPT_STRUCT(tracemodel::extra_fields<tracemodel::event_kind::script_call>, name, end_ns,
                        script_id, script_parent_id, module_id);
BOOST_HANA_ADAPT_STRUCT(tracemodel::extra_fields<tracemodel::event_kind::native_call>, name, end_ns,
                        script_id, script_parent_id);
BOOST_HANA_ADAPT_STRUCT(tracemodel::extra_fields<tracemodel::event_kind::device_activity>, name,
                        category, activity, flow_type, flow_start, device, end_ns, correlation_id,
                        external_id, flow_id, stream, bytes);

TRACEMODEL_BEGIN_NAMESPACE

/// A payload that Boost.Hana can walk.
template <class T>
concept reflectable = boost::hana::Struct<T>::value;

/// Number of reflected fields of a payload.
template <reflectable T>
inline constexpr std::size_t field_count =
    decltype(boost::hana::length(boost::hana::accessors<T>()))::value;

/// Calls `f(std::string_view field_name, field_value)` for every reflected field, in order.
template <class T, class F>
requires reflectable<std::remove_cvref_t<T>>
constexpr void for_each_field(T&& payload, F&& f) {
  boost::hana::for_each(boost::hana::accessors<std::remove_cvref_t<T>>(), [&](auto pair) {
    f(std::string_view(boost::hana::to<const char*>(boost::hana::first(pair))),
      boost::hana::second(pair)(payload));
  });
}

/// The position of the reflected field called `name`, or `field_count<T>` when there is none.
template <reflectable T>
constexpr std::size_t field_index(std::string_view name) {
  std::size_t i = 0, found = field_count<T>;
  boost::hana::for_each(boost::hana::accessors<T>(), [&](auto pair) {
    if (found == field_count<T> &&
        std::string_view(boost::hana::to<const char*>(boost::hana::first(pair))) == name)
      found = i;
    ++i;
  });
  return found;
}

/// The value of the I-th reflected field.
template <std::size_t I, class T>
requires reflectable<std::remove_cvref_t<T>>
constexpr decltype(auto) field_at(T&& payload) {
  using U = std::remove_cvref_t<T>;
  static_assert(I < field_count<U>, "no such reflected field");
  return boost::hana::second(boost::hana::at_c<I>(boost::hana::accessors<U>()))(payload);
}

namespace detail {
struct any_field {
  template <class T>
  constexpr operator T() const noexcept;  // never defined: only for unevaluated checks
};
/// Number of data members of an aggregate (the largest N such that T{any_field x N} works).
template <class T, class... A>
constexpr std::size_t aggregate_arity() {
  if constexpr (requires { T{A{}..., any_field{}}; })
    return aggregate_arity<T, A..., any_field>();
  else
    return sizeof...(A);
}
}  // namespace detail

/// True when every data member of the payload is reflected (a member added to a payload and
/// forgotten in its adaptation is a compile error where this is checked).
template <reflectable T>
inline constexpr bool fully_reflected = field_count<T> == detail::aggregate_arity<T>();

static_assert(fully_reflected<extra_fields<event_kind::op>>);
static_assert(fully_reflected<extra_fields<event_kind::backend>>);
static_assert(fully_reflected<extra_fields<event_kind::allocation>>);
static_assert(fully_reflected<extra_fields<event_kind::out_of_memory>>);
static_assert(fully_reflected<extra_fields<event_kind::script_call>>);
static_assert(fully_reflected<extra_fields<event_kind::native_call>>);
static_assert(fully_reflected<extra_fields<event_kind::device_activity>>);

TRACEMODEL_END_NAMESPACE
