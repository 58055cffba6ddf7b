// tracemodel/formats — how payload fields become the `args` of a Chrome-trace event.
//
// Writers and readers walk payloads through their Boost.Hana reflection (model/reflect.hpp);
// `export_args<Payload>` only says which field is written under which key, and when:
//
//   template <> struct tracemodel::export_args<extra_fields<my_kind>> {
//     static constexpr field_arg fields[] = {{"bytes_freed", "Bytes freed"}};
//   };
//
// Without a specialization every reflected field is written under its own name, except the
// fields the event record itself carries (`name`, `end_ns`, `category`, `activity`, flow
// fields). Keys PyTorch and Kineto use are kept for the default kinds.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <type_traits>

#include "tracemodel/config.hpp"
#include "tracemodel/model/fields.hpp"
#include "tracemodel/model/reflect.hpp"

TRACEMODEL_BEGIN_NAMESPACE

/// When a field is written.
enum class arg_rule : std::uint8_t {
  always,
  nonnegative,   ///< only when >= 0 (-1 means "none")
  positive,      ///< only when > 0 (0 means "none")
  if_sequenced,  ///< only when the payload's sequence_number >= 0
};

struct field_arg {
  std::string_view field;  ///< the reflected member
  std::string_view key;    ///< the args key
  arg_rule rule = arg_rule::always;
};

/// Fields the event record carries itself: never written as args by default.
constexpr bool is_record_field(std::string_view f) noexcept {
  return f == "name" || f == "end_ns" || f == "category" || f == "activity" || f == "flow_type" ||
         f == "flow_start" || f == "flow_id";
}

/// Which fields of a payload are written as args (specialize for your payloads).
template <class Payload>
struct export_args {
  static constexpr bool by_field_name = true;  // all reflected fields, under their own names
};

template <>
struct export_args<extra_fields<event_kind::op>> {
  static constexpr field_arg fields[] = {
      {"correlation_id", "External id", arg_rule::positive},
      {"sequence_number", "Sequence number", arg_rule::nonnegative},
      {"fwd_thread_id", "Fwd thread id", arg_rule::if_sequenced},
      {"debug_handle", "Debug handle", arg_rule::nonnegative},
  };
};
template <>
struct export_args<extra_fields<event_kind::backend>> {
  static constexpr field_arg fields[] = {
      {"backend", "Backend"},
      {"debug_handle", "Debug handle", arg_rule::nonnegative},
  };
};
template <>
struct export_args<extra_fields<event_kind::allocation>> {
  static constexpr field_arg fields[] = {
      {"device_type", "Device Type"},
      {"device_index", "Device Id"},
      {"ptr", "Addr"},
      {"alloc_size", "Bytes"},
      {"total_allocated", "Total Allocated"},
      {"total_reserved", "Total Reserved"},
      {"tensor_id", "Tensor id", arg_rule::positive},
  };
};
template <>
struct export_args<extra_fields<event_kind::out_of_memory>> {
  static constexpr field_arg fields[] = {
      {"device_type", "Device Type"},
      {"device_index", "Device Id"},
      {"alloc_size", "Bytes"},
      {"total_allocated", "Total Allocated"},
      {"total_reserved", "Total Reserved"},
  };
};
template <>
struct export_args<extra_fields<event_kind::script_call>> {
  static constexpr field_arg fields[] = {
      {"script_id", "Python id", arg_rule::nonnegative},
      {"script_parent_id", "Python parent id", arg_rule::nonnegative},
      {"module_id", "Python module id", arg_rule::nonnegative},
  };
};
template <>
struct export_args<extra_fields<event_kind::native_call>> {
  static constexpr field_arg fields[] = {
      {"script_id", "Python id", arg_rule::nonnegative},
      {"script_parent_id", "Python parent id", arg_rule::nonnegative},
  };
};
template <>
struct export_args<extra_fields<event_kind::device_activity>> {
  static constexpr field_arg fields[] = {
      {"external_id", "External id", arg_rule::positive},
      {"device", "device", arg_rule::nonnegative},
      {"stream", "stream", arg_rule::nonnegative},
      {"correlation_id", "correlation", arg_rule::positive},
      {"bytes", "bytes", arg_rule::positive},
  };
};

namespace detail {
template <class P>
concept has_field_table = requires {
  P::fields;
};

/// The spec of a field of payload P, or nullptr when it is not written as an arg.
template <class P>
constexpr const field_arg* field_spec(std::string_view field) noexcept {
  if constexpr (has_field_table<export_args<P>>) {
    for (const field_arg& f : export_args<P>::fields)
      if (f.field == field) return &f;
    return nullptr;
  } else {
    return nullptr;
  }
}

/// Whether a numeric value passes a rule.
template <class V>
constexpr bool passes(arg_rule r, const V& v, bool sequenced) noexcept {
  switch (r) {
    case arg_rule::always:
      return true;
    case arg_rule::nonnegative:
      if constexpr (std::is_signed_v<V>)
        return v >= 0;
      else
        return true;
    case arg_rule::positive:
      return v > 0;
    case arg_rule::if_sequenced:
      return sequenced;
  }
  return true;
}
}  // namespace detail

TRACEMODEL_END_NAMESPACE
