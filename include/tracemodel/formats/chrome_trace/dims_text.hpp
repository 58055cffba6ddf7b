// tracemodel/formats/chrome_trace — `Input Dims` / `Input Strides` read from their JSON text
// (`[[2,3],[4]]`, lists of tensors nested): the direct path reads them from a trace's text, the
// Perfetto reader from the interned string its writer keeps them in.
#pragma once

#include <cstddef>
#include <cstdint>

#include "tracemodel/config.hpp"
#include "tracemodel/formats/chrome_trace/records.hpp"
#include "tracemodel/formats/json_scan.hpp"

TRACEMODEL_BEGIN_NAMESPACE
namespace detail::chrome_trace {

/// `Input Dims` / `Input Strides` when they are arrays of entries that hold integers or
/// entries, 64 levels at most: the position after the array, or 0 with nothing added.
inline std::size_t read_dims_text(const char* s, std::size_t len, std::size_t p, batch& out) {
  const std::size_t dims0 = out.dims.size(), ints0 = out.ints.size();
  auto bail = [&] {
    out.dims.resize(dims0);
    out.ints.resize(ints0);
    return std::size_t{0};
  };
  if (p >= len || s[p] != '[') return 0;
  ++p;
  std::uint32_t open[66];  // the entry open at each depth (depth 1: the outer array)
  int depth = 1;
  bool expect_value = true, allow_close = true;
  while (true) {
    while (p < len && is_json_space(s[p])) ++p;
    if (p >= len) return bail();
    const char c = s[p];
    if (c == ']') {
      if (!allow_close) return bail();
      ++p;
      if (--depth == 0) return p;
      expect_value = false;
      continue;
    }
    if (!expect_value) {
      if (c != ',') return bail();
      ++p;
      expect_value = true;
      allow_close = false;
      continue;
    }
    if (c == '[') {  // an entry
      if (depth >= 65) return bail();
      if (depth >= 2) {
        dims_entry& parent = out.dims[open[depth]];
        if (!parent.list && parent.count > 0) return bail();
        parent.list = true;
        ++parent.count;
      }
      open[++depth] = static_cast<std::uint32_t>(out.dims.size());
      out.dims.push_back({false, 0, static_cast<std::uint32_t>(out.ints.size())});
      ++p;
      allow_close = true;
      continue;
    }
    if (depth < 2 || out.dims[open[depth]].list) return bail();
    // An integer: -?(0|[1-9][0-9]*), within int64, not followed by a fraction or exponent.
    std::size_t q = p;
    const bool neg = s[q] == '-';
    if (neg) ++q;
    if (q >= len || s[q] < '0' || s[q] > '9') return bail();
    if (s[q] == '0' && q + 1 < len && s[q + 1] >= '0' && s[q + 1] <= '9') return bail();
    std::uint64_t v = 0;
    int digits = 0;
    for (; q < len && s[q] >= '0' && s[q] <= '9'; ++q, ++digits)
      v = v * 10 + static_cast<std::uint64_t>(s[q] - '0');
    if (digits > 18 || (q < len && (s[q] == '.' || s[q] == 'e' || s[q] == 'E'))) return bail();
    out.ints.push_back(neg ? -static_cast<std::int64_t>(v) : static_cast<std::int64_t>(v));
    ++out.dims[open[depth]].count;
    p = q;
    expect_value = false;
    allow_close = true;
  }
}

}  // namespace detail::chrome_trace
TRACEMODEL_END_NAMESPACE
