// tracemodel/collect — a sink for a live queue's parts (collect/live_queue.hpp) that gathers them
// into one table.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <unordered_map>

#include "tracemodel/config.hpp"
#include "tracemodel/model/table.hpp"

TRACEMODEL_BEGIN_NAMESPACE

/// A sink that gathers a live queue's parts into one table, in start order (what `materialize`
/// would have given for the same ops): for the analyses that need every op at once. An op handed
/// out open by a cut and again later (ended, or open at a later cut) is kept once: the later.
struct table_sink {
  event_table table;

  void operator()(event_table&& part) {
    replace_copies(part);
    if (table.events.empty() && table.attrs.empty() && table.inputs.empty()) {
      const anomaly_counts before = table.anomalies;
      table = std::move(part);
      table.anomalies += before;
      note_copies(table, 0);
      return;
    }
    table.anomalies += part.anomalies;
    const std::size_t old = table.events.size();
    for (const auto& e : part.events) {
      auto& c = table.events.emplace_back(e);
      c.attrs = {};
      if (auto* f = c.template get_if<event_kind::op>()) {
        f->name = table.strings.intern(part.strings.view(f->name));
        f->inputs = copy_inputs(part, f->inputs);
      } else if (auto* d = c.template get_if<event_kind::device_activity>()) {
        d->name = table.strings.intern(part.strings.view(d->name));
      }
      for (const attribute& a : part.attrs_of(e)) {
        attribute& to = table.add_attr(c, part.strings.view(a.key), a.type);
        const name_id key = to.key;
        to = a;
        to.key = key;
        if (a.type == attr_type::string) to.s = table.strings.intern(part.strings.view(a.s));
        if (a.type == attr_type::int_list) {
          const auto first = static_cast<std::uint32_t>(table.ints.size());
          for (std::uint32_t k = 0; k < a.list.size; ++k)
            table.ints.push_back(part.ints[a.list.first + k]);
          to.list = {first, a.list.size};
        }
        if (a.type == attr_type::string_list) {
          const auto first = static_cast<std::uint32_t>(table.name_lists.size());
          for (const name_id n : part.string_list(a))
            table.name_lists.push_back(table.strings.intern(part.strings.view(n)));
          to.list = {first, a.list.size};
        }
      }
    }
    note_copies(table, old);
    auto by_start = [](const auto& a, const auto& b) { return a.start_ns < b.start_ns; };
    const auto middle = table.events.begin() + static_cast<std::ptrdiff_t>(old);
    if (!std::is_sorted(middle, table.events.end(), by_start))
      std::stable_sort(middle, table.events.end(), by_start);
    std::inplace_merge(table.events.begin(), middle, table.events.end(), by_start);
  }

 private:
  /// The copies held of ops that the part hands out again are removed (with their count).
  void replace_copies(const event_table& part) {
    if (copies_.empty()) return;
    std::unordered_map<std::uint64_t, bool> again;
    for (const auto& e : part.events)
      if (const auto* f = e.template get_if<event_kind::op>(); f != nullptr)
        if (copies_.count(f->correlation_id) != 0) again.emplace(f->correlation_id, true);
    if (again.empty()) return;
    std::erase_if(table.events, [&](const auto& e) {
      const auto* f = e.template get_if<event_kind::op>();
      return f != nullptr && f->unfinished() && again.count(f->correlation_id) != 0;
    });
    for (const auto& [id, _] : again) copies_.erase(id);
    table.anomalies.n[static_cast<std::size_t>(anomaly::unfinished_op)] -= again.size();
  }
  void note_copies(const event_table& t, std::size_t from) {
    for (std::size_t k = from; k < t.events.size(); ++k)
      if (const auto* f = t.events[k].template get_if<event_kind::op>();
          f != nullptr && f->unfinished())
        copies_.emplace(f->correlation_id, true);
  }
  index_range copy_inputs(const event_table& part, index_range r) {
    const auto first = static_cast<std::uint32_t>(table.inputs.size());
    for (std::uint32_t k = 0; k < r.size; ++k) {
      input_value v = part.inputs[r.first + k];
      v.dtype = table.strings.intern(part.strings.view(v.dtype));
      if (v.kind == input_kind::tensor) {
        const std::uint32_t n = v.has_strides ? 2 * v.rank : v.rank;
        const auto dims = static_cast<std::uint32_t>(table.ints.size());
        for (std::uint32_t j = 0; j < n; ++j) table.ints.push_back(part.ints[v.dims + j]);
        v.dims = dims;
      }
      table.inputs.push_back(v);
    }
    return {first, r.size};
  }
  std::unordered_map<std::uint64_t, bool> copies_;  ///< ops held as open copies, by id
};

TRACEMODEL_END_NAMESPACE
