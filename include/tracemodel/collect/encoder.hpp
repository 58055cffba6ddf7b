// tracemodel/collect — the input/output encoder.
//
// Op inputs are recorded as one stream of 8-byte words instead of one object per value. Every
// value starts with a header word whose low byte is its tag:
//   tensor              header (tag, dtype, layout, device type and index, stride flags, rank),
//                       impl address, storage address, sizes[rank], strides[rank] (strided
//                       layouts only, and not when they are the canonical contiguous strides)
//   undefined tensor    header
//   tensor-list begin   header, the elements, a terminator
//   scalar-list begin   header, the elements, a terminator
//   scalar              header (with the scalar's type), the value
//   other               header
// and every op ends with a terminator. This is PyTorch's tag stream, packed tensor metadata and
// flat size/stride stream, interleaved per value: one bounds check and one contiguous write per
// value instead of four streams to advance (four streams cost more than twice as much:
// docs/performance-journal.md). Lists are encoded element by
// element and may nest.
//
// What a value is comes from the runtime, through a value-traits policy (`value_traits<T, V>`
// in collect/concepts.hpp: kind, tensor, scalar, for_each_element, dtype_name).
//
// Layout code 0 (`strided_layout`) means strided: only strided tensors record strides, and only
// when the traits give one stride per dimension. The encoder never throws in the middle of an
// op (that would leave the stream out of step): a value it cannot record is recorded as less.
#pragma once

#include <concepts>
#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>
#include <vector>

#include "tracemodel/collect/concepts.hpp"
#include "tracemodel/config.hpp"
#include "tracemodel/detail/assert.hpp"
#include "tracemodel/model/event.hpp"
#include "tracemodel/storage/append_only_list.hpp"

TRACEMODEL_BEGIN_NAMESPACE

/// The tags of the encoded stream.
enum class io_tag : std::uint8_t {
  tensor,
  undefined_tensor,
  tensor_list_begin,
  scalar,
  scalar_list_begin,
  other,
  terminator,
};

/// The header word of an encoded value.
struct io_header {
  static constexpr std::uint64_t no_strides = std::uint64_t{1} << 40;  ///< none recorded
  static constexpr std::uint64_t contiguous = std::uint64_t{1} << 41;  ///< canonical strides
  static constexpr unsigned rank_shift = 42;
  static constexpr std::uint64_t max_rank = (std::uint64_t{1} << 22) - 1;

  static constexpr std::uint64_t make(io_tag tag) noexcept {
    return static_cast<std::uint8_t>(tag);
  }
  static constexpr std::uint64_t tensor(const tensor_info& t, std::uint64_t rank,
                                        std::uint64_t flags) noexcept {
    return static_cast<std::uint64_t>(io_tag::tensor) | std::uint64_t{t.dtype} << 8 |
           std::uint64_t{t.layout} << 16 |
           std::uint64_t{static_cast<std::uint8_t>(t.device_type)} << 24 |
           std::uint64_t{static_cast<std::uint8_t>(t.device_index)} << 32 | flags |
           rank << rank_shift;
  }
  static constexpr io_tag tag(std::uint64_t w) noexcept { return static_cast<io_tag>(w & 0xff); }
  static constexpr std::uint8_t byte(std::uint64_t w, unsigned i) noexcept {
    return static_cast<std::uint8_t>(w >> (8 * i));
  }
  static constexpr std::uint32_t rank(std::uint64_t w) noexcept {
    return static_cast<std::uint32_t>(w >> rank_shift);
  }
};

/// The strides of a contiguous (row-major) tensor: 1 for the last dimension, and for the
/// others the next stride times the next size (sizes of 0 count as 1, as PyTorch does).
/// Returns true if `strides` are exactly those.
inline bool has_contiguous_strides(std::span<const std::int64_t> sizes,
                                   std::span<const std::int64_t> strides) noexcept {
  std::int64_t expected = 1;
  for (std::size_t i = sizes.size(); i-- > 0;) {
    if (strides[i] != expected) return false;
    expected *= sizes[i] > 1 ? sizes[i] : 1;
  }
  return true;
}

namespace detail {
/// Encodes values into `Words`: any word store with `emplace_back(word)` and
/// `append_contiguous(n)` (a pointer to `n` words, or null when they do not fit).
struct io_writer {
  template <class Traits, class V, class Words>
  static void push(Words& out, std::span<const V> values) {
    for (const V& v : values) push_value<Traits>(out, v);
    out.emplace_back(io_header::make(io_tag::terminator));
  }

  template <class Traits, class V, class Words>
  TRACEMODEL_ALWAYS_INLINE static void push_value(Words& out, const V& v) {
    switch (Traits::kind(v)) {
      case input_kind::tensor:
        push_tensor(out, Traits::tensor(v));
        break;
      case input_kind::scalar: {
        const scalar_value sv = Traits::scalar(v);
        std::uint64_t bits = 0;
        std::memcpy(&bits, &sv.i, sizeof bits);
        std::uint64_t* w = out.append_contiguous(2);
        if (w == nullptr) [[unlikely]] {  // a bounded store that is full (it says so)
          out.emplace_back(io_header::make(io_tag::other));
          break;
        }
        w[0] = io_header::make(io_tag::scalar) | std::uint64_t{static_cast<std::uint8_t>(sv.kind)}
                                                     << 8;
        w[1] = bits;
        break;
      }
      case input_kind::undefined_tensor:
        out.emplace_back(io_header::make(io_tag::undefined_tensor));
        break;
      case input_kind::tensor_list:
        push_list<Traits>(out, v, io_tag::tensor_list_begin);
        break;
      case input_kind::scalar_list:
        push_list<Traits>(out, v, io_tag::scalar_list_begin);
        break;
      case input_kind::other:
        out.emplace_back(io_header::make(io_tag::other));
        break;
    }
  }

  template <class Traits, class V, class Words>
  TRACEMODEL_NOINLINE static void push_list(Words& out, const V& v, io_tag begin) {
    out.emplace_back(io_header::make(begin));
    Traits::for_each_element(v, [&out](const V& e) { push_value<Traits>(out, e); });
    out.emplace_back(io_header::make(io_tag::terminator));
  }

  template <class Words>
  TRACEMODEL_ALWAYS_INLINE static void push_tensor(Words& out, const tensor_info& t) {
    const std::size_t rank = t.sizes.size();
    if (rank > io_header::max_rank) [[unlikely]] {  // absurd rank: not worth recording
      out.emplace_back(io_header::make(io_tag::other));
      return;
    }
    // Strides only for strided layouts, and only when the traits gave one per dimension;
    // canonical contiguous strides are not stored (the decoder recomputes them exactly).
    const bool strided = t.layout == strided_layout && t.strides.size() == rank;
    const bool contiguous = strided && has_contiguous_strides(t.sizes, t.strides);
    const bool store_strides = strided && !contiguous;
    const std::size_t n = 3 + (store_strides ? 2 * rank : rank);
    const std::uint64_t flags =
        (strided ? 0 : io_header::no_strides) | (contiguous ? io_header::contiguous : 0);
    std::uint64_t* w = out.append_contiguous(n);
    if (w == nullptr) [[unlikely]] {  // more dims than a block holds: record less
      out.emplace_back(io_header::make(io_tag::other));
      return;
    }
    w[0] = io_header::tensor(t, rank, flags);
    w[1] = t.impl;
    w[2] = t.storage;
    for (std::size_t i = 0; i < rank; ++i) w[3 + i] = static_cast<std::uint64_t>(t.sizes[i]);
    if (store_strides)
      for (std::size_t i = 0; i < rank; ++i)
        w[3 + rank + i] = static_cast<std::uint64_t>(t.strides[i]);
  }
};
}  // namespace detail

/// Decodes a stream of encoded words op by op, in the order they were pushed. For each op, `next`
/// appends the op's values to `out` (lists followed by their elements, depth first) and sizes and
/// strides to `ints`, and returns the number of entries appended. `dtype_id(code)` maps a
/// dtype code to the stored dtype name. If the stream runs out early (which only a bug can
/// cause) the decoder stops and `ok()` turns false; it never reads past the stream.
template <class It>
class io_decoder {
 public:
  io_decoder(It begin, It end) : it_(begin), end_(end) {}

  template <class Values, class Ints, class DtypeId>
  std::uint32_t next(Values& out, Ints& ints, name_id scalar_dtype, DtypeId&& dtype_id) {
    const std::size_t first = out.size();
    open_.clear();
    std::uint64_t w = 0;
    while (read(w)) {
      const io_tag t = io_header::tag(w);
      if (t == io_tag::terminator) {
        if (open_.empty()) return finish(out, first);  // end of the op
        const std::size_t l = open_.back();
        open_.pop_back();
        out[l].subtree = static_cast<std::uint32_t>(out.size() - l);
        continue;
      }
      if (!open_.empty()) ++out[open_.back()].rank;
      input_value& v = out.emplace_back();
      switch (t) {
        case io_tag::tensor:
          decode_tensor(w, v, ints, dtype_id);
          break;
        case io_tag::undefined_tensor:
          v.kind = input_kind::undefined_tensor;
          break;
        case io_tag::tensor_list_begin:
          v.kind = input_kind::tensor_list;
          open_.push_back(out.size() - 1);
          break;
        case io_tag::scalar_list_begin:
          v.kind = input_kind::scalar_list;
          open_.push_back(out.size() - 1);
          break;
        case io_tag::scalar: {
          v.kind = input_kind::scalar;
          v.dtype = scalar_dtype;
          std::uint64_t bits = 0;
          if (read(bits)) {
            v.scalar.kind = static_cast<scalar_value::type>(io_header::byte(w, 1));
            // (a boolean is its low byte, 0 or 1, whatever the words: they may come from a file)
            if (v.scalar.kind == scalar_value::type::boolean) bits = (bits & 0xff) != 0 ? 1 : 0;
            std::memcpy(&v.scalar.i, &bits, sizeof bits);
          }
          break;
        }
        case io_tag::other:
          v.kind = input_kind::other;
          break;
        case io_tag::terminator:
          break;
      }
      if (!ok_) break;
    }
    ok_ = false;  // the stream ended inside an op
    return finish(out, first);
  }
  [[nodiscard]] bool ok() const noexcept { return ok_; }

 private:
  bool read(std::uint64_t& w) {
    if (it_ == end_) {
      ok_ = false;
      return false;
    }
    w = *it_;
    ++it_;
    return true;
  }
  template <class Ints, class DtypeId>
  void decode_tensor(std::uint64_t w, input_value& v, Ints& ints, DtypeId& dtype_id) {
    v.kind = input_kind::tensor;
    v.dtype = dtype_id(io_header::byte(w, 1));
    v.layout = io_header::byte(w, 2);
    v.device_type = static_cast<std::int8_t>(io_header::byte(w, 3));
    v.device_index = static_cast<std::int8_t>(io_header::byte(w, 4));
    v.rank = io_header::rank(w);
    v.has_strides = (w & io_header::no_strides) == 0;
    const bool implied = (w & io_header::contiguous) != 0;
    read(v.impl);
    read(v.storage);
    v.dims = static_cast<std::uint32_t>(ints.size());
    const std::uint32_t n = v.has_strides && !implied ? 2 * v.rank : v.rank;
    for (std::uint32_t i = 0; i < n; ++i) {
      std::uint64_t d = 0;
      read(d);
      ints.push_back(static_cast<std::int64_t>(d));
    }
    if (v.has_strides && implied) {  // recompute the canonical contiguous strides
      ints.resize(ints.size() + v.rank);
      std::int64_t stride = 1;
      for (std::uint32_t i = v.rank; i-- > 0;) {
        ints[v.dims + v.rank + i] = stride;
        const std::int64_t size = ints[v.dims + i];
        stride *= size > 1 ? size : 1;
      }
    }
  }
  template <class Values>
  std::uint32_t finish(Values& out, std::size_t first) {
    // Lists left open by a truncated stream still get a consistent subtree size.
    for (auto it = open_.rbegin(); it != open_.rend(); ++it)
      out[*it].subtree = static_cast<std::uint32_t>(out.size() - *it);
    open_.clear();
    return static_cast<std::uint32_t>(out.size() - first);
  }
  It it_, end_;
  std::vector<std::size_t> open_;
  bool ok_ = true;
};

class io_encoder {
 public:
  /// Encodes the values of one op and its terminator.
  template <class Traits, class V>
  void push(std::span<const V> values) {
    if constexpr (detail::check_value_traits<Traits, V>()) {
      append_only_list<std::uint64_t>::cursor out(words_);
      detail::io_writer::push<Traits>(out, values);
      out.commit();
    }
  }
  /// An op without inputs.
  void push_empty() { words_.emplace_back(io_header::make(io_tag::terminator)); }

  void clear() noexcept { words_.clear(); }
  /// Words in the stream (for tests and memory reports).
  [[nodiscard]] std::size_t word_count() const noexcept { return words_.size(); }

  /// Decodes the stream (io_decoder).
  class decoder : public io_decoder<append_only_list<std::uint64_t>::const_iterator> {
   public:
    explicit decoder(const io_encoder& e)
        : io_decoder<append_only_list<std::uint64_t>::const_iterator>(e.words_.begin(), {}) {}
  };

 private:
  append_only_list<std::uint64_t> words_;
};

TRACEMODEL_END_NAMESPACE
