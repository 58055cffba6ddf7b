// tracemodel/formats — the enhanced execution trace: an execution trace joined with its
// host/device trace (algo/et_link.hpp), written as Chakra's `_plus.json` layout.
//
//   auto r = tracemodel::link_execution_trace(et, host);
//   std::string plus = tracemodel::enhanced_execution_trace(et, host, r);
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "tracemodel/algo/et_link.hpp"
#include "tracemodel/config.hpp"
#include "tracemodel/formats/execution_trace.hpp"
#include "tracemodel/formats/json_escape.hpp"
#include "tracemodel/model/execution_trace.hpp"
#include "tracemodel/model/table.hpp"

TRACEMODEL_BEGIN_NAMESPACE
namespace detail {

/// ns as microseconds with the digits a Chrome trace writes: integer µs, or three decimals.
inline void append_us(std::string& s, std::int64_t ns) {
  const bool neg = ns < 0;
  const std::uint64_t a =
      neg ? static_cast<std::uint64_t>(-(ns + 1)) + 1 : static_cast<std::uint64_t>(ns);
  if (neg) s += '-';
  s += std::to_string(a / 1000);
  if (const std::uint64_t frac = a % 1000; frac != 0) {
    char buf[8];
    std::snprintf(buf, sizeof buf, ".%03u", static_cast<unsigned>(frac));
    std::string f(buf);
    while (f.back() == '0') f.pop_back();
    s += f;
  }
}
}  // namespace detail

/// The execution trace with `ts` and `dur` (µs, relative to the host trace's
/// `baseTimeNanoseconds`, as the host trace states them) on every matched node, and one child
/// node per attached device op, with fresh ids above the largest id, the host node's inputs and
/// outputs, `cat`, `stream`, `ts` and `dur` (Chakra's `_plus.json` layout).
template <class Schema>
std::string enhanced_execution_trace(const execution_trace_file& et,
                                     const basic_event_table<Schema>& t, const et_link_result& r) {
  // One allocation: the output is mostly the input's nodes plus one node per device op.
  std::size_t size = et.header_json.size() + 64;
  for (const std::string& n : et.node_json) size += n.size() + 48;
  for (const et_device_op& d : r.device_ops)
    size += et.io_json[d.node].size() + t.name(d.device).size() + 256;
  std::string s;
  s.reserve(size);
  s += '{';
  s += et.header_json;
  if (!et.header_json.empty()) s += ',';
  s += "\"nodes\":[";
  const std::int64_t base = t.info.base_time_ns;
  std::int64_t next_id = 0;
  for (const et_node& n : et.nodes) next_id = std::max(next_id, n.id);
  auto times = [&](event_index i) {
    s += ",\"ts\":";
    detail::append_us(s, t.events[i].start_ns - base);
    s += ",\"dur\":";
    detail::append_us(s, std::max<std::int64_t>(0, t.events[i].duration_ns()));
  };
  for (std::size_t k = 0; k < et.nodes.size(); ++k) {
    const std::string& json = et.node_json[k];
    if (k) s += ',';
    s += '\n';
    if (r.node_host[k] == no_event || json.empty() || json.back() != '}') {
      s += json;
      continue;
    }
    s.append(json, 0, json.size() - 1);
    times(r.node_host[k]);
    s += '}';
  }
  for (const et_device_op& d : r.device_ops) {
    const et_node& host = et.nodes[d.node];
    const auto& f = t.events[d.device].template get<event_kind::device_activity>();
    s += ",\n{\"name\":\"";
    detail::append_json_escaped(s, t.name(d.device));
    s += "\",\"id\":";
    s += std::to_string(++next_id);
    s += ",\"parent\":";
    s += std::to_string(host.id);
    s += ",\"rf_id\":-1,\"fw_parent\":0,\"seq_id\":-1,\"scope\":0,\"tid\":";
    s += std::to_string(f.stream);
    s += ",\"fw_tid\":0,\"op_schema\":\"\"";
    if (const std::string& io = et.io_json[d.node]; !io.empty()) {
      s += ',';
      s += io;
    }
    s += ",\"cat\":\"";
    s += to_string(f.activity);
    s += "\",\"stream\":";
    s += std::to_string(f.stream);
    times(d.device);
    s += ",\"attached_by\":\"";
    s += attach_by_names[static_cast<std::size_t>(d.how)];
    s += "\"}";
  }
  s += "\n]}\n";
  return s;
}

TRACEMODEL_END_NAMESPACE
