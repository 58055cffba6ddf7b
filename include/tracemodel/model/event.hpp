// tracemodel/model — the event record.
//
// One record per event: start time (ns since the Unix epoch), thread and process keys, the
// variant of payloads, a range of extra attributes, and tree links as 32-bit indices (filled by
// `algo::build_tree`). `end_ns()`, `correlation_id()`, `end_tid()` and `kind()` are computed by
// visiting the payload; `name()` needs the table's strings and lives on the table.
#pragma once

#include <cstdint>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>

#include "tracemodel/config.hpp"
#include "tracemodel/model/fields.hpp"
#include "tracemodel/model/schema.hpp"
#include "tracemodel/model/types.hpp"

TRACEMODEL_BEGIN_NAMESPACE

/// What an input (or output) of an op is.
enum class input_kind : std::uint8_t {
  tensor,
  undefined_tensor,
  tensor_list,
  scalar,
  scalar_list,
  other,
};
inline constexpr std::string_view input_kind_names[] = {"tensor", "undefined_tensor", "tensor_list",
                                                        "scalar", "scalar_list",      "other"};

/// A scalar argument value.
struct scalar_value {
  enum class type : std::uint8_t { none, integer, floating, boolean };
  type kind = type::none;
  union {
    std::int64_t i;
    double f;
    bool b;
  };
  constexpr scalar_value() noexcept : i(0) {}
  static constexpr scalar_value integer(std::int64_t v) noexcept {
    scalar_value s;
    s.kind = type::integer;
    s.i = v;
    return s;
  }
  static constexpr scalar_value floating(double v) noexcept {
    scalar_value s;
    s.kind = type::floating;
    s.f = v;
    return s;
  }
  static constexpr scalar_value boolean(bool v) noexcept {
    scalar_value s;
    s.kind = type::boolean;
    s.i = 0;
    s.b = v;
    return s;
  }
  friend constexpr bool operator==(const scalar_value& a, const scalar_value& b) noexcept {
    if (a.kind != b.kind) return false;
    switch (a.kind) {
      case type::none:
        return true;
      case type::integer:
        return a.i == b.i;
      case type::floating:
        return a.f == b.f;
      case type::boolean:
        return a.b == b.b;
    }
    return false;
  }
};

/// One decoded input of an op, stored in the event table's `inputs`. A list is followed by its
/// elements (depth first); `subtree` counts the entries of a value including itself, so the
/// next sibling of entry i is entry i + subtree.
struct input_value {
  input_kind kind = input_kind::other;
  std::uint8_t layout = 0;  ///< the runtime's layout code; `strided_layout` has strides
  std::int8_t device_type = 0;
  std::int8_t device_index = -1;
  std::uint32_t rank = 0;     ///< tensor: number of dims; list: number of direct elements
  std::uint32_t subtree = 1;  ///< entries in this value's subtree, itself included
  std::uint32_t dims = 0;     ///< tensor: offset in `ints` of sizes[rank], then strides[rank]
  name_id dtype{};            ///< dtype name ("float", ...), "Scalar" for scalars
  bool has_strides = false;
  std::uint64_t impl = 0;       ///< address of the tensor's implementation object
  std::uint64_t storage = 0;    ///< address of the tensor's storage data
  std::uint64_t tensor_id = 0;  ///< filled by `tensor_identities`; 0: none
  scalar_value scalar{};
};
inline constexpr std::uint8_t strided_layout = 0;

/// An extra attribute of an event (call stack, module hierarchy, a key of a trace file's
/// `args` that the model has no field for, ...).
struct attribute {
  name_id key{};
  attr_type type = attr_type::integer;
  union {
    std::int64_t i;
    std::uint64_t u;
    double f;
    bool b;
    name_id s;
    index_range list;
  };
  constexpr attribute() noexcept : i(0) {}
};

template <class Schema>
struct basic_event {
  using schema_type = Schema;
  using fields_type = typename Schema::fields_variant;
  using kind_type = typename Schema::kind_type;

  // Provided, so that a new event (`emplace_back()`) gets its members' initializers alone:
  // value-initializing an aggregate clears all of it first, which GCC does with `rep stos`.
  constexpr basic_event() noexcept {
  }  // NOLINT(modernize-use-equals-default): `= default` would clear

  std::int64_t start_ns = 0;
  thread_key tid = 0;
  process_key pid = 0;
  index_range attrs{};            ///< entries of the table's `attrs`
  event_index parent = no_event;  ///< set by the tree builder or a linker (children: the table's)
  parent_link link = parent_link::none;  ///< what set `parent`
  /// Trace-file detail: 0 for a complete event; 't', 'p' or 'g' for an instant event record
  /// (Chrome's `ph:"i"` with that scope). Allocations are written as thread instants anyway.
  char instant_scope = 0;
  fields_type fields{};

  [[nodiscard]] constexpr kind_type kind() const noexcept { return Schema::kinds[fields.index()]; }
  template <auto K>
  [[nodiscard]] constexpr bool is() const noexcept {
    if constexpr (Schema::template contains<K>)
      return fields.index() == Schema::template index_of<K>;
    else
      return false;
  }
  template <auto K>
  [[nodiscard]] constexpr extra_fields<K>* get_if() noexcept {
    if constexpr (Schema::template contains<K>)
      return std::get_if<Schema::template index_of<K>>(&fields);
    else
      return nullptr;
  }
  template <auto K>
  [[nodiscard]] constexpr const extra_fields<K>* get_if() const noexcept {
    if constexpr (Schema::template contains<K>)
      return std::get_if<Schema::template index_of<K>>(&fields);
    else
      return nullptr;
  }
  template <auto K>
  [[nodiscard]] constexpr extra_fields<K>& get() {
    return std::get<Schema::template index_of<K>>(fields);
  }
  template <auto K>
  [[nodiscard]] constexpr const extra_fields<K>& get() const {
    return std::get<Schema::template index_of<K>>(fields);
  }

  /// The fields of kind `K` for an event just made: its default fields when they are that kind
  /// already (not constructed a second time), else a default `K` emplaced. (On an event whose
  /// fields were set, use `fields.emplace`: these keep fields of kind `K` as they are.)
  template <auto K>
  constexpr extra_fields<K>& new_fields() {
    constexpr std::size_t i = Schema::template index_of<K>;
    if (fields.index() == i) return *std::get_if<i>(&fields);
    return fields.template emplace<i>();
  }

  template <class F>
  constexpr decltype(auto) visit(F&& f) {
    return std::visit(std::forward<F>(f), fields);
  }
  template <class F>
  constexpr decltype(auto) visit(F&& f) const {
    return std::visit(std::forward<F>(f), fields);
  }

  /// End time in ns: the payload's `end_ns` if it has one, else the start (instant event).
  /// An op that never ended reports `no_end_ns` until the tree builder lends it one.
  [[nodiscard]] constexpr std::int64_t end_ns() const noexcept {
    // A chain of compares, not std::visit: every pass over a table asks this of every event,
    // and a jump table's indirect branch mispredicts on interleaved kinds.
    return end_ns_of(std::make_index_sequence<std::variant_size_v<fields_type>>{});
  }
  [[nodiscard]] constexpr std::int64_t duration_ns() const noexcept {
    const std::int64_t e = end_ns();
    return e == no_end_ns ? 0 : e - start_ns;
  }
  [[nodiscard]] constexpr std::uint64_t correlation_id() const noexcept {
    return visit([](const auto& f) -> std::uint64_t {
      if constexpr (requires { f.correlation_id; })
        return f.correlation_id;
      else
        return 0;
    });
  }
  [[nodiscard]] constexpr std::uint64_t end_tid() const noexcept {
    return visit([this](const auto& f) -> std::uint64_t {
      if constexpr (requires { f.end_tid; })
        return f.end_tid != 0 ? f.end_tid : tid;
      else
        return tid;
    });
  }
  /// Instant events have an end that is not after their start; they are never parents.
  [[nodiscard]] constexpr bool is_instant() const noexcept {
    const std::int64_t e = end_ns();
    return e != no_end_ns && e <= start_ns;
  }

 private:
  template <std::size_t... I>
  [[nodiscard]] constexpr std::int64_t end_ns_of(std::index_sequence<I...>) const noexcept {
    std::int64_t end = start_ns;
    const std::size_t k = fields.index();
    (void)((k == I && (end = end_of(*std::get_if<I>(&fields)), true)) || ...);
    return end;
  }
  template <class F>
  [[nodiscard]] constexpr std::int64_t end_of(const F& f) const noexcept {
    if constexpr (requires { f.end_ns; })
      return f.end_ns;
    else
      return start_ns;
  }
};

TRACEMODEL_END_NAMESPACE
