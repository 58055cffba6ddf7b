// A tiny value type for tests: what a runtime's "IValue" might look like, and its traits.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include <tracemodel/collect/encoder.hpp>

namespace tmtest {

struct value {
  tracemodel::input_kind kind = tracemodel::input_kind::other;
  std::vector<std::int64_t> sizes, strides;
  std::uint8_t dtype = 0;
  std::uint8_t layout = 0;
  std::int8_t device_type = 0, device_index = -1;
  std::uint64_t impl = 0, storage = 0;
  tracemodel::scalar_value scalar{};
  std::vector<value> elements;

  static value tensor(std::vector<std::int64_t> sizes, std::vector<std::int64_t> strides,
                      std::uint8_t dtype, std::uint64_t impl = 0, std::uint64_t storage = 0) {
    value v;
    v.kind = tracemodel::input_kind::tensor;
    v.sizes = std::move(sizes);
    v.strides = std::move(strides);
    v.dtype = dtype;
    v.impl = impl;
    v.storage = storage;
    return v;
  }
  static value sparse(std::vector<std::int64_t> sizes, std::uint8_t dtype) {
    value v = tensor(std::move(sizes), {}, dtype);
    v.layout = 1;
    return v;
  }
  static value undefined() {
    value v;
    v.kind = tracemodel::input_kind::undefined_tensor;
    return v;
  }
  static value scalar_of(tracemodel::scalar_value s) {
    value v;
    v.kind = tracemodel::input_kind::scalar;
    v.scalar = s;
    return v;
  }
  static value list(tracemodel::input_kind k, std::vector<value> elems) {
    value v;
    v.kind = k;
    v.elements = std::move(elems);
    return v;
  }
  static value other() { return {}; }
};

struct value_traits {
  static tracemodel::input_kind kind(const value& v) { return v.kind; }
  static tracemodel::tensor_info tensor(const value& v) {
    return {v.impl,  v.storage, v.device_type, v.device_index,
            v.dtype, v.layout,  v.sizes,       v.strides};
  }
  static tracemodel::scalar_value scalar(const value& v) { return v.scalar; }
  template <class F>
  static void for_each_element(const value& v, F&& f) {
    for (const value& e : v.elements) f(e);
  }
  static std::string_view dtype_name(std::uint8_t code) {
    constexpr std::string_view names[] = {"float", "double", "long int", "c10::Half"};
    return code < 4 ? names[code] : "unknown";
  }
};
static_assert(tracemodel::value_traits<value_traits, value>);

}  // namespace tmtest
