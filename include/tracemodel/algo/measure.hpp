// tracemodel/algo — what every measure shares: the one container of its rows.
//
// The algorithms come in two families (docs/analysis.md):
//  - passes change the table and return a small stats struct (`link_forward_backward`,
//    `link_device_activities`, `build_tree`, `analyze`, `assign_tensor_ids`);
//  - measures read the table and return a typed result: `X(const table&, const X_options&)`,
//    options that are a plain struct of that measure (defaults: the exact rules, times in
//    nanoseconds), rows in a `row_list`.
// A measure that several analyses of one table share the work of also takes the shared part
// (`device_view`, device_time.hpp) in place of the table. Results that gather measures name
// their unit in their type (`nanoseconds` here; other rules' layers have their own).
#pragma once

#include <cstdint>
#include <string_view>

#include "tracemodel/config.hpp"
#include "tracemodel/model/table.hpp"

TRACEMODEL_BEGIN_NAMESPACE

/// The rows of a measure's result: a vector whose large arrays come from the array memory
/// (memory.hpp), the same type for every measure so that renderers, pages and bindings take any.
template <class Row>
using row_list = table_vector<Row>;

/// The unit of every time of the measures of algo/.
struct nanoseconds {
  static constexpr std::string_view name = "ns";
  static constexpr std::int64_t in_ns = 1;
};

TRACEMODEL_END_NAMESPACE
