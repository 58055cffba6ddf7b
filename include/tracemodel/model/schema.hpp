// tracemodel/model — schemas: which kinds an event table (and a record queue) knows.
//
//   using my_schema = tracemodel::schema<event_kind::op, event_kind::allocation, gc_pause>;
//
// The payload variant of a schema holds exactly the `extra_fields` of its kinds, so a kind that
// is not in the schema costs nothing: neither bytes per event nor storage in a record queue.
#pragma once

#include <array>
#include <cstddef>
#include <string_view>
#include <type_traits>
#include <variant>

#include "tracemodel/config.hpp"
#include "tracemodel/model/fields.hpp"

TRACEMODEL_BEGIN_NAMESPACE

namespace detail {
template <auto First, auto...>
struct first_kind {
  using type = decltype(First);
};

/// True when kinds A and B are the same enumerator of the same enum type.
template <auto A, auto B>
inline constexpr bool same_kind = [] {
  if constexpr (std::is_same_v<decltype(A), decltype(B)>)
    return A == B;
  else
    return false;
}();

template <auto K>
concept has_kind_payload = requires {
  { extra_fields<K>::kind_name } -> std::convertible_to<std::string_view>;
};
}  // namespace detail

template <auto... Kinds>
struct schema {
  static_assert(sizeof...(Kinds) > 0, "tracemodel::schema<Kinds...>: needs at least one kind");
  using kind_type = typename detail::first_kind<Kinds...>::type;
  static_assert((std::is_same_v<decltype(Kinds), kind_type> && ...),
                "tracemodel::schema<Kinds...>: all kinds must be of one enum type");
  static_assert(std::is_enum_v<kind_type>, "tracemodel::schema<Kinds...>: kinds are enumerators");
  static_assert((detail::has_kind_payload<Kinds> && ...),
                "tracemodel::schema<Kinds...>: every kind needs a specialization of "
                "tracemodel::extra_fields<Kind> with a `static constexpr std::string_view "
                "kind_name`");

  static constexpr std::size_t size = sizeof...(Kinds);
  static constexpr std::array<kind_type, size> kinds{Kinds...};
  using fields_variant = std::variant<extra_fields<Kinds>...>;

  template <auto K>
  static constexpr bool contains = (detail::same_kind<K, Kinds> || ...);

  template <auto K>
  static constexpr std::size_t index_of = [] {
    static_assert(contains<K>, "tracemodel::schema::index_of<K>: K is not in the schema");
    constexpr bool hits[] = {detail::same_kind<K, Kinds>...};
    std::size_t i = 0;
    while (i < size && !hits[i]) ++i;
    return i;
  }();

  static constexpr std::array<std::string_view, size> kind_names{extra_fields<Kinds>::kind_name...};

 private:
  static constexpr bool unique = [] {
    for (std::size_t i = 0; i < size; ++i)
      for (std::size_t j = i + 1; j < size; ++j)
        if (kinds[i] == kinds[j]) return false;
    return true;
  }();
  static_assert(unique, "tracemodel::schema<Kinds...>: a kind appears twice");
};

template <class S>
concept event_schema = requires {
  typename S::kind_type;
  typename S::fields_variant;
  { S::size } -> std::convertible_to<std::size_t>;
};

/// PyTorch's event types, one to one.
using default_schema =
    schema<event_kind::op, event_kind::backend, event_kind::allocation, event_kind::out_of_memory,
           event_kind::script_call, event_kind::native_call, event_kind::device_activity>;

TRACEMODEL_END_NAMESPACE
