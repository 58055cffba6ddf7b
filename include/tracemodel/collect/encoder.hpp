// tracemodel/collect — the input/output encoder.
//
// Op inputs are recorded as four flat streams instead of one object per value:
//   tags     one byte per value: tensor, undefined tensor, tensor-list begin ... terminator,
//            scalar, scalar-list begin ... terminator, other; and a terminator per op;
//   metadata one packed 24-byte record per defined tensor (impl and storage addresses, device
//            type and index, dtype, layout, rank);
//   ints     sizes of every tensor, then its strides (strided layout only);
//   scalars  one 16-byte value per scalar.
// Lists are encoded element by element and may nest.
//
// What a value is comes from the runtime, through a value-traits policy:
//
//   concept value_traits<T, V>:
//     static input_kind kind(const V&)            tensor (defined), undefined_tensor,
//                                                 tensor_list, scalar, scalar_list or other
//     static tensor_info tensor(const V&)         for kind() == tensor
//     static scalar_value scalar(const V&)        for kind() == scalar
//     static void for_each_element(const V&, F)   for lists: calls F(const V&) per element
//     static std::string_view dtype_name(std::uint8_t)   name of a dtype code ("float", ...)
//
// Layout code 0 (`strided_layout`) means strided: only strided tensors record strides, and only
// when the traits give one stride per dimension. The encoder never throws in the middle of an
// op (that would leave the streams out of step): a value it cannot record is recorded as less.
#pragma once

#include <concepts>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "tracemodel/config.hpp"
#include "tracemodel/detail/assert.hpp"
#include "tracemodel/model/event.hpp"
#include "tracemodel/storage/append_only_list.hpp"

TRACEMODEL_BEGIN_NAMESPACE

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

template <class T, class V>
concept value_traits = requires(const V& v, void (*f)(const V&), std::uint8_t code) {
  { T::kind(v) } -> std::same_as<input_kind>;
  { T::tensor(v) } -> std::same_as<tensor_info>;
  { T::scalar(v) } -> std::same_as<scalar_value>;
  T::for_each_element(v, f);
  { T::dtype_name(code) } -> std::convertible_to<std::string_view>;
};

/// The tags of the tag stream.
enum class io_tag : std::uint8_t {
  tensor,
  undefined_tensor,
  tensor_list_begin,
  scalar,
  scalar_list_begin,
  other,
  terminator,
};

/// Packed metadata of one defined tensor (24 bytes).
struct packed_tensor {
  std::uint64_t impl;
  std::uint64_t storage;
  std::int8_t device_type;
  std::int8_t device_index;
  std::uint8_t dtype;
  std::uint8_t layout;
  std::uint32_t rank;  ///< high bit set: no strides recorded
  static constexpr std::uint32_t no_strides = 0x80000000u;
};
static_assert(sizeof(packed_tensor) == 24);

class io_encoder {
 public:
  /// Encodes the values of one op and its terminator.
  template <class Traits, class V>
  void push(std::span<const V> values) {
    static_assert(value_traits<Traits, V>,
                  "tracemodel::io_encoder::push<Traits>(values): Traits must model "
                  "value_traits<Traits, V> (collect/encoder.hpp)");
    for (const V& v : values) push_value<Traits>(v);
    tags_.emplace_back(io_tag::terminator);
  }
  /// An op without inputs.
  void push_empty() { tags_.emplace_back(io_tag::terminator); }

  void clear() noexcept {
    tags_.clear();
    tensors_.clear();
    ints_.clear();
    scalars_.clear();
  }
  [[nodiscard]] std::size_t tag_count() const noexcept { return tags_.size(); }

  /// Decodes the streams op by op, in the order they were pushed. For each op, `next` appends
  /// the op's values to `out` (lists followed by their elements, depth first) and sizes and
  /// strides to `ints`, and returns the number of entries appended. `dtype_id(code)` maps a
  /// dtype code to the stored dtype name. If a stream runs out early (which only a bug can
  /// cause) the decoder stops and `ok()` turns false; it never reads past a stream.
  class decoder {
   public:
    explicit decoder(const io_encoder& e)
        : tag_(e.tags_.begin()),
          tensor_(e.tensors_.begin()),
          int_(e.ints_.begin()),
          scalar_(e.scalars_.begin()) {}

    template <class DtypeId>
    std::uint32_t next(std::vector<input_value>& out, std::vector<std::int64_t>& ints,
                       name_id scalar_dtype, DtypeId&& dtype_id) {
      const std::size_t first = out.size();
      // Open lists: index of the list entry in `out`.
      std::vector<std::size_t>& open = open_;
      open.clear();
      while (true) {
        if (tag_ == end_tag_) {
          ok_ = false;
          break;
        }
        const io_tag t = *tag_;
        ++tag_;
        if (t == io_tag::terminator) {
          if (open.empty()) break;  // end of the op
          const std::size_t l = open.back();
          open.pop_back();
          out[l].subtree = static_cast<std::uint32_t>(out.size() - l);
          continue;
        }
        if (!open.empty()) ++out[open.back()].rank;
        input_value& v = out.emplace_back();
        switch (t) {
          case io_tag::tensor: {
            if (tensor_ == end_tensor_) {
              ok_ = false;
              out.pop_back();
              return finish(out, first);
            }
            const packed_tensor& m = *tensor_;
            ++tensor_;
            v.kind = input_kind::tensor;
            v.impl = m.impl;
            v.storage = m.storage;
            v.device_type = m.device_type;
            v.device_index = m.device_index;
            v.layout = m.layout;
            v.rank = m.rank & ~packed_tensor::no_strides;
            v.dtype = dtype_id(m.dtype);
            v.has_strides = (m.rank & packed_tensor::no_strides) == 0;
            v.dims = static_cast<std::uint32_t>(ints.size());
            const std::uint32_t n = v.has_strides ? 2 * v.rank : v.rank;
            for (std::uint32_t i = 0; i < n; ++i) {
              if (int_ == end_int_) {
                ok_ = false;
                ints.push_back(0);
                continue;
              }
              ints.push_back(*int_);
              ++int_;
            }
            break;
          }
          case io_tag::undefined_tensor: v.kind = input_kind::undefined_tensor; break;
          case io_tag::tensor_list_begin:
            v.kind = input_kind::tensor_list;
            open.push_back(out.size() - 1);
            break;
          case io_tag::scalar_list_begin:
            v.kind = input_kind::scalar_list;
            open.push_back(out.size() - 1);
            break;
          case io_tag::scalar:
            v.kind = input_kind::scalar;
            v.dtype = scalar_dtype;
            if (scalar_ == end_scalar_) {
              ok_ = false;
            } else {
              v.scalar = *scalar_;
              ++scalar_;
            }
            break;
          case io_tag::other: v.kind = input_kind::other; break;
          case io_tag::terminator: break;
        }
      }
      return finish(out, first);
    }
    [[nodiscard]] bool ok() const noexcept { return ok_; }

   private:
    std::uint32_t finish(std::vector<input_value>& out, std::size_t first) {
      // Lists left open by a truncated stream still get a consistent subtree size.
      for (auto it = open_.rbegin(); it != open_.rend(); ++it)
        out[*it].subtree = static_cast<std::uint32_t>(out.size() - *it);
      open_.clear();
      return static_cast<std::uint32_t>(out.size() - first);
    }
    append_only_list<io_tag>::const_iterator tag_, end_tag_{};
    append_only_list<packed_tensor>::const_iterator tensor_, end_tensor_{};
    append_only_list<std::int64_t>::const_iterator int_, end_int_{};
    append_only_list<scalar_value>::const_iterator scalar_, end_scalar_{};
    std::vector<std::size_t> open_;
    bool ok_ = true;
  };

 private:
  template <class Traits, class V>
  void push_value(const V& v) {
    switch (Traits::kind(v)) {
      case input_kind::tensor: {
        const tensor_info t = Traits::tensor(v);
        const std::size_t rank = t.sizes.size();
        if (rank >= packed_tensor::no_strides) {  // absurd rank: not worth recording
          tags_.emplace_back(io_tag::other);
          break;
        }
        // Strides only for strided layouts, and only when the traits gave one per dimension.
        const bool strided = t.layout == strided_layout && t.strides.size() == rank;
        tags_.emplace_back(io_tag::tensor);
        tensors_.emplace_back(packed_tensor{
            t.impl, t.storage, t.device_type, t.device_index, t.dtype, t.layout,
            static_cast<std::uint32_t>(rank) | (strided ? 0u : packed_tensor::no_strides)});
        ints_.append(t.sizes.data(), rank);
        if (strided) ints_.append(t.strides.data(), rank);
        break;
      }
      case input_kind::undefined_tensor: tags_.emplace_back(io_tag::undefined_tensor); break;
      case input_kind::tensor_list:
        tags_.emplace_back(io_tag::tensor_list_begin);
        Traits::for_each_element(v, [this](const V& e) { push_value<Traits>(e); });
        tags_.emplace_back(io_tag::terminator);
        break;
      case input_kind::scalar_list:
        tags_.emplace_back(io_tag::scalar_list_begin);
        Traits::for_each_element(v, [this](const V& e) { push_value<Traits>(e); });
        tags_.emplace_back(io_tag::terminator);
        break;
      case input_kind::scalar:
        tags_.emplace_back(io_tag::scalar);
        scalars_.emplace_back(Traits::scalar(v));
        break;
      case input_kind::other: tags_.emplace_back(io_tag::other); break;
    }
  }

  append_only_list<io_tag> tags_;
  append_only_list<packed_tensor> tensors_;
  append_only_list<std::int64_t> ints_;
  append_only_list<scalar_value> scalars_;
};

TRACEMODEL_END_NAMESPACE
