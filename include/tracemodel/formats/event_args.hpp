// tracemodel/formats — what every writer writes as an event's args, whatever its format: the
// payload's fields through their reflection and `export_args` (formats/args.hpp), and an op's
// inputs as PyTorch names them (`Input Dims`, `Input type`, `Input Strides`, `Concrete Inputs`).
// The Chrome JSON writer and the Perfetto writer encode the same args, so that a trace read from
// either format builds the same table.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include <fmt/format.h>

#include "tracemodel/config.hpp"
#include "tracemodel/formats/args.hpp"
#include "tracemodel/model/reflect.hpp"
#include "tracemodel/model/table.hpp"

TRACEMODEL_BEGIN_NAMESPACE
namespace detail {

/// Calls `out(key, value)` for each field of payload `f` that is written as an arg, in the order
/// of its `export_args` table (else of its reflection): `value` is the field itself (bool,
/// integer, floating point, name_id, text or enum); rules that leave a field out are applied.
template <class P, class Out>
void for_each_payload_arg(const P& f, Out&& out) {
  bool sequenced = false;
  if constexpr (requires { f.sequence_number; }) sequenced = f.sequence_number >= 0;
  auto emit = [&](std::string_view key, arg_rule rule, const auto& v) {
    using T = std::remove_cvref_t<decltype(v)>;
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      if (!passes(rule, v, sequenced)) return;
    }
    out(key, v);
  };
  if constexpr (reflectable<P>) {
    if constexpr (has_field_table<export_args<P>>) {
      // In the order of the table, not of the struct; fields found at compile time.
      constexpr auto& specs = export_args<P>::fields;
      [&]<std::size_t... S>(std::index_sequence<S...>) {
        (
            [&] {
              constexpr field_arg spec = export_args<P>::fields[S];
              constexpr std::size_t i = field_index<P>(spec.field);
              static_assert(i < field_count<P>,
                            "export_args names a field the payload does not reflect");
              emit(spec.key, spec.rule, field_at<i>(f));
            }(),
            ...);
      }
      (std::make_index_sequence<std::size(specs)>{});
    } else {
      for_each_field(f, [&](std::string_view field, const auto& v) {
        if (!is_record_field(field)) emit(field, arg_rule::always, v);
      });
    }
  }
}

/// Which of the optional input args an op's inputs have.
struct input_args {
  bool strides = false;  ///< `Input Strides`: a tensor has strides
  bool scalars = false;  ///< `Concrete Inputs`: a scalar has a value
};
inline input_args input_args_of(std::span<const input_value> ins) noexcept {
  input_args r;
  for (const input_value& v : ins) {
    r.strides = r.strides || (v.kind == input_kind::tensor && v.has_strides);
    r.scalars =
        r.scalars || (v.kind == input_kind::scalar && v.scalar.kind != scalar_value::type::none);
  }
  return r;
}

/// A top-level input's `Input type` entry.
template <class Table>
std::string_view input_type_text(const Table& t, const input_value& v) noexcept {
  switch (v.kind) {
    case input_kind::tensor:
      return t.strings.view(v.dtype);
    case input_kind::scalar:
      return "Scalar";
    case input_kind::tensor_list:
      return "TensorList";
    case input_kind::scalar_list:
      return "ScalarList";
    default:
      return "";
  }
}

/// A scalar as PyTorch prints it in `Concrete Inputs`.
inline std::string scalar_text(const scalar_value& s) {
  switch (s.kind) {
    case scalar_value::type::integer:
      return std::to_string(s.i);
    case scalar_value::type::floating:
      return fmt::format("{}", s.f);
    case scalar_value::type::boolean:
      return s.b ? "True" : "False";
    case scalar_value::type::none:
      return "None";
  }
  return "";
}

/// The `Concrete Inputs` entry of the top-level input at `i`.
inline std::string concrete_text(std::span<const input_value> ins, std::size_t i) {
  const input_value& v = ins[i];
  if (v.kind == input_kind::scalar)
    return v.scalar.kind == scalar_value::type::none ? "" : scalar_text(v.scalar);
  if (v.kind != input_kind::scalar_list) return "";
  std::string s = "[";
  for (std::uint32_t k = 1; k < v.subtree; ++k)
    s += (k > 1 ? ", " : "") + scalar_text(ins[i + k].scalar);
  return s + "]";
}

/// The separator PyTorch joins a list attribute with ("Call stack": ";", "Module Hierarchy":
/// "."), or nullptr for a list written as an array.
constexpr const char* joined_list_separator(std::string_view key) noexcept {
  return key == "Module Hierarchy" ? "." : key == "Call stack" ? ";" : nullptr;
}

}  // namespace detail
TRACEMODEL_END_NAMESPACE
