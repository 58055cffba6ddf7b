#include <doctest/doctest.h>

#include <string>
#include <vector>

#include <tracemodel/collect/encoder.hpp>
#include <tracemodel/model/strings.hpp>

#include "test_values.hpp"

using namespace tracemodel;
using tmtest::value;

namespace {

/// Decodes all ops of an encoder into readable text, one line per op.
std::vector<std::string> decode_all(const io_encoder& enc, std::size_t ops) {
  string_table strings;
  std::vector<input_value> out;
  std::vector<std::int64_t> ints;
  io_encoder::decoder d(enc);
  const name_id scalar = strings.intern("Scalar");
  std::vector<std::string> lines;
  for (std::size_t op = 0; op < ops; ++op) {
    const std::size_t first = out.size();
    const std::uint32_t n = d.next(out, ints, scalar, [&](std::uint8_t code) {
      return strings.intern(tmtest::value_traits::dtype_name(code));
    });
    std::string line;
    for (std::size_t i = first; i < first + n; ++i) {
      const input_value& v = out[i];
      line += std::string(input_kind_names[static_cast<int>(v.kind)]);
      line += "(";
      switch (v.kind) {
        case input_kind::tensor: {
          line += std::string(strings.view(v.dtype)) + " [";
          for (std::uint32_t k = 0; k < v.rank; ++k)
            line += (k ? "," : "") + std::to_string(ints[v.dims + k]);
          line += "]";
          if (v.has_strides) {
            line += " strides [";
            for (std::uint32_t k = 0; k < v.rank; ++k)
              line += (k ? "," : "") + std::to_string(ints[v.dims + v.rank + k]);
            line += "]";
          }
          line += " layout " + std::to_string(v.layout) + " impl " + std::to_string(v.impl);
          break;
        }
        case input_kind::scalar:
          switch (v.scalar.kind) {
            case scalar_value::type::integer:
              line += "int " + std::to_string(v.scalar.i);
              break;
            case scalar_value::type::floating:
              line += "double " + std::to_string(v.scalar.f);
              break;
            case scalar_value::type::boolean:
              line += v.scalar.b ? "true" : "false";
              break;
            case scalar_value::type::none:
              line += "none";
              break;
          }
          line += " " + std::string(strings.view(v.dtype));
          break;
        case input_kind::tensor_list:
        case input_kind::scalar_list:
          line += "n=" + std::to_string(v.rank) + " subtree=" + std::to_string(v.subtree);
          break;
        default:
          break;
      }
      line += ") ";
    }
    lines.push_back(line);
  }
  REQUIRE(d.ok());
  return lines;
}

}  // namespace

TEST_SUITE("collect") {
  TEST_CASE("io_encoder: every tag decodes back to the exact shapes, strides, dtypes, scalars") {
    io_encoder enc;
    using T = tmtest::value_traits;
    // op 0: no inputs
    enc.push<T, value>({});
    // op 1: strided tensor, undefined tensor, three scalars, other
    std::vector<value> op1{value::tensor({2, 3}, {3, 1}, 0, 0x1000, 0x2000),
                           value::undefined(),
                           value::scalar_of(scalar_value::integer(-7)),
                           value::scalar_of(scalar_value::floating(2.5)),
                           value::scalar_of(scalar_value::boolean(true)),
                           value::other()};
    enc.push<T>(std::span<const value>(op1));
    // op 2: nested tensor list [t, [t, undefined], t] and a scalar list
    std::vector<value> op2{
        value::list(
            input_kind::tensor_list,
            {value::tensor({4}, {1}, 1, 0x10),
             value::list(input_kind::tensor_list,
                         {value::tensor({1, 1, 2}, {2, 2, 1}, 2, 0x20), value::undefined()}),
             value::tensor({}, {}, 3, 0x30)}),
        value::list(input_kind::scalar_list, {value::scalar_of(scalar_value::integer(1)),
                                              value::scalar_of(scalar_value::integer(2))})};
    enc.push<T>(std::span<const value>(op2));
    // op 3: a non-strided tensor records no strides; an empty list; contiguous strides with
    // size-0 and size-1 dims (stored implicitly) and non-contiguous ones (stored)
    std::vector<value> op3{value::sparse({5, 6}, 0), value::list(input_kind::tensor_list, {}),
                           value::tensor({3, 0, 1, 4}, {4, 4, 4, 1}, 0),
                           value::tensor({3, 4}, {1, 3}, 0)};
    enc.push<T>(std::span<const value>(op3));
    // op 4: no inputs again (framing survives)
    enc.push_empty();

    const auto lines = decode_all(enc, 5);
    REQUIRE(lines.size() == 5);
    CHECK(lines[0] == "");
    CHECK(lines[1] ==
          "tensor(float [2,3] strides [3,1] layout 0 impl 4096) undefined_tensor() "
          "scalar(int -7 Scalar) scalar(double 2.500000 Scalar) scalar(true Scalar) other() ");
    CHECK(lines[2] ==
          "tensor_list(n=3 subtree=6) tensor(double [4] strides [1] layout 0 impl 16) "
          "tensor_list(n=2 subtree=3) tensor(long int [1,1,2] strides [2,2,1] layout 0 impl 32) "
          "undefined_tensor() tensor(c10::Half [] strides [] layout 0 impl 48) "
          "scalar_list(n=2 subtree=3) scalar(int 1 Scalar) scalar(int 2 Scalar) ");
    CHECK(lines[3] ==
          "tensor(float [5,6] layout 1 impl 0) tensor_list(n=0 subtree=1) "
          "tensor(float [3,0,1,4] strides [4,4,4,1] layout 0 impl 0) "
          "tensor(float [3,4] strides [1,3] layout 0 impl 0) ");
    CHECK(lines[4] == "");
  }

  TEST_CASE("io_encoder: a decoder past the last op reports the truncation instead of reading on") {
    io_encoder enc;
    std::vector<value> op{value::tensor({2}, {1}, 0)};
    enc.push<tmtest::value_traits>(std::span<const value>(op));
    io_encoder::decoder d(enc);
    std::vector<input_value> out;
    std::vector<std::int64_t> ints;
    auto id = [](std::uint8_t) { return empty_name; };
    CHECK(d.next(out, ints, empty_name, id) == 1);
    CHECK(d.ok());
    CHECK(d.next(out, ints, empty_name, id) == 0);  // nothing left
    CHECK_FALSE(d.ok());
    CHECK(out.size() == 1);
  }

  TEST_CASE("io_encoder: strides of another rank than sizes are dropped, framing kept") {
    io_encoder enc;
    std::vector<value> bad{value::tensor({2, 3}, {1}, 0),
                           value::scalar_of(scalar_value::integer(9))};
    enc.push<tmtest::value_traits>(std::span<const value>(bad));
    enc.push_empty();
    const auto lines = decode_all(enc, 2);
    CHECK(lines[0] == "tensor(float [2,3] layout 0 impl 0) scalar(int 9 Scalar) ");
    CHECK(lines[1] == "");
  }
}
