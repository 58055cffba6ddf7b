// tracemodel/formats/chrome_trace — an op's inputs from the args of its record: `Input Dims`,
// `Input type`, `Input Strides` and `Concrete Inputs`, read together into the table's input
// entries (tensors with their sizes and strides, lists of them to any depth, scalars, scalar
// lists). Does not depend on the table's schema.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tracemodel/config.hpp"
#include "tracemodel/formats/chrome_trace/parse.hpp"
#include "tracemodel/formats/chrome_trace/records.hpp"
#include "tracemodel/formats/json_scan.hpp"
#include "tracemodel/model/table.hpp"

TRACEMODEL_BEGIN_NAMESPACE
namespace detail::chrome_trace {

/// Appends the inputs of op records to a table's input entries, its integers and its strings.
class input_builder {
 public:
  input_builder(string_table& strings, table_vector<input_value>& inputs,
                table_vector<std::int64_t>& ints) noexcept
      : strings_(strings), inputs_(inputs), ints_(ints) {}

  /// The inputs of the op record `f` of batch `b`, appended to the table's inputs.
  index_range build(const fields& f, const batch_view& b) {
    if (!f.dims.present && f.types.count == 0) return {};
    auto view = [&b](const dims_range& r) {
      return dims_view{std::span(b.dims).subspan(r.first, r.count), b.ints.data(), r.present};
    };
    dims_ = view(f.dims);
    strides_ = view(f.strides);
    types_ = std::span(b.strings).subspan(f.types.first, f.types.count);
    concrete_ = std::span(b.strings).subspan(f.concrete.first, f.concrete.count);
    const auto first = static_cast<std::uint32_t>(inputs_.size());
    std::size_t d = 0, s = 0;  // positions in dims_.entries and strides_.entries
    const std::size_t tops = std::max(count_top(dims_), types_.size());
    for (std::size_t k = 0; k < tops; ++k) {
      const std::string_view type = k < types_.size() ? std::string_view(types_[k]) : "";
      const dims_entry* de = d < dims_.entries.size() ? &dims_.entries[d] : nullptr;
      const dims_entry* se =
          strides_.present && s < strides_.entries.size() ? &strides_.entries[s] : nullptr;
      const std::string_view concrete = k < concrete_.size() ? std::string_view(concrete_[k]) : "";
      if (type == "Scalar") {
        input_value& v = inputs_.emplace_back();
        v.kind = input_kind::scalar;
        v.dtype = strings_.intern("Scalar");
        v.scalar = parse_scalar(concrete);
      } else if (type == "ScalarList") {
        add_scalar_list(concrete);
      } else if (type == "TensorList" || (de != nullptr && de->list)) {
        add_tensor_list(de, d, se, s);
      } else if (type.empty() && (de == nullptr || de->count == 0)) {
        inputs_.emplace_back().kind = input_kind::other;
      } else {
        add_tensor(strings_.intern(type), de, se);
      }
      d = skip_entry(dims_, d);
      if (strides_.present) s = skip_entry(strides_, s);
    }
    return {first, static_cast<std::uint32_t>(inputs_.size() - first)};
  }

 private:
  static std::size_t count_top(const dims_view& p) {
    std::size_t n = 0;
    for (std::size_t i = 0; i < p.entries.size(); i = skip_entry(p, i)) ++n;
    return n;
  }
  /// The position after the entry at `i` and its elements.
  static std::size_t skip_entry(const dims_view& p, std::size_t i) {
    if (i >= p.entries.size()) return i;
    std::size_t pending = 1;
    while (pending > 0 && i < p.entries.size()) {
      pending += p.entries[i].list ? p.entries[i].count : 0;
      --pending;
      ++i;
    }
    return i;
  }

  void add_tensor(name_id dtype, const dims_entry* de, const dims_entry* se) {
    input_value& v = inputs_.emplace_back();
    v.kind = input_kind::tensor;
    v.dtype = dtype;
    v.dims = static_cast<std::uint32_t>(ints_.size());
    if (de != nullptr && !de->list) {
      v.rank = de->count;
      for (std::uint32_t k = 0; k < de->count; ++k) ints_.push_back(dims_.ints[de->first + k]);
    }
    if (se != nullptr && !se->list && se->count == v.rank) {
      v.has_strides = true;
      for (std::uint32_t k = 0; k < se->count; ++k) ints_.push_back(strides_.ints[se->first + k]);
    }
  }

  void add_tensor_list(const dims_entry* de, std::size_t d, const dims_entry* se, std::size_t s) {
    // Iteratively over the nested lists of dims (and, in step, of strides).
    const std::size_t list_at = inputs_.size();
    input_value& l = inputs_.emplace_back();
    l.kind = input_kind::tensor_list;
    if (de == nullptr || !de->list) return;
    struct open_list {
      std::size_t at;
      std::uint32_t left;
    };
    std::vector<open_list> stack{{list_at, de->count}};
    inputs_[list_at].rank = de->count;
    std::size_t di = d + 1, si = se != nullptr && se->list ? s + 1 : strides_.entries.size();
    while (!stack.empty()) {
      if (stack.back().left == 0) {
        const std::size_t at = stack.back().at;
        inputs_[at].subtree = static_cast<std::uint32_t>(inputs_.size() - at);
        stack.pop_back();
        continue;
      }
      --stack.back().left;
      const dims_entry& c = dims_.entries[di];
      const dims_entry* cs = si < strides_.entries.size() ? &strides_.entries[si] : nullptr;
      if (c.list) {
        const std::size_t at = inputs_.size();
        input_value& inner = inputs_.emplace_back();
        inner.kind = input_kind::tensor_list;
        inner.rank = c.count;
        stack.push_back({at, c.count});
      } else {
        add_tensor(empty_name, &c, cs);
      }
      ++di;
      if (cs != nullptr) ++si;
    }
  }

  void add_scalar_list(std::string_view text) {
    const std::size_t at = inputs_.size();
    input_value& l = inputs_.emplace_back();
    l.kind = input_kind::scalar_list;
    if (text.size() >= 2 && text.front() == '[' && text.back() == ']') {
      text = text.substr(1, text.size() - 2);
      std::uint32_t n = 0;
      while (!text.empty()) {
        const std::size_t c = text.find(',');
        std::string_view item = text.substr(0, c);
        while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
        input_value& v = inputs_.emplace_back();
        v.kind = input_kind::scalar;
        v.dtype = strings_.intern("Scalar");
        v.scalar = parse_scalar(item);
        ++n;
        if (c == std::string_view::npos) break;
        text.remove_prefix(c + 1);
      }
      inputs_[at].rank = n;
    }
    inputs_[at].subtree = static_cast<std::uint32_t>(inputs_.size() - at);
  }

  static scalar_value parse_scalar(std::string_view s) {
    if (s == "True") return scalar_value::boolean(true);
    if (s == "False") return scalar_value::boolean(false);
    std::int64_t i = 0;
    if (parse_int64(s, i)) return scalar_value::integer(i);
    if (s.empty() || s == "None") return {};
    double d = 0;
    const std::string tmp(s);
    char* end = nullptr;
    d = std::strtod(tmp.c_str(), &end);
    if (end != nullptr && *end == '\0') return scalar_value::floating(d);
    return {};
  }

  string_table& strings_;
  table_vector<input_value>& inputs_;
  table_vector<std::int64_t>& ints_;
  // The lists of the op being built.
  dims_view dims_, strides_;
  std::span<const std::string_view> types_, concrete_;
};

}  // namespace detail::chrome_trace
TRACEMODEL_END_NAMESPACE
