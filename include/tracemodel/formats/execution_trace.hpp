// tracemodel/formats — PyTorch execution traces (ExecutionGraphObserver / ExecutionTraceObserver).
//
//   tracemodel::execution_trace_file et = tracemodel::read_execution_trace_file("et.json.gz");
//
// An execution trace is `{"schema": "1.0.1", "pid": …, …, "nodes": [ … ]}`; each node has an
// `id`, a `name`, a `parent` (or control dependencies, `ctrl_deps`, in newer schemas), the
// RecordFunction handle `rf_id`, `seq_id`, `fw_parent`, `fw_tid`, `tid`, `scope`,
// `op_schema`, inputs and outputs with their shapes and types, and, in newer versions, attrs.
// The process and thread annotation nodes ("[pytorch|profiler|execution_graph|thread]",
// "...execution_trace|process]") are marked `synthetic`. The nodes are the model's
// (model/execution_trace.hpp); beside them, each node's JSON is kept (minified) so that a writer
// can add fields and leave the rest as PyTorch wrote it.
//
// Errors follow the Chrome-trace reader's rules: `input_error` naming the problem (and the
// byte offset where simdjson reports one), for empty, truncated (gzip too), malformed or
// wrong-typed input; never a partial result.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tracemodel/config.hpp"
#include "tracemodel/formats/chrome_trace/parse.hpp"
#include "tracemodel/formats/trace_text.hpp"
#include "tracemodel/model/execution_trace.hpp"

TRACEMODEL_BEGIN_NAMESPACE

/// An execution trace as its file wrote it: the model's nodes, and what a writer needs to write
/// them back.
struct execution_trace_file : execution_trace {
  std::vector<std::string> node_json;  ///< each node as written (minified), by node
  /// Each node's `"inputs":…,"input_shapes":…` and the rest of its six I/O keys, by node.
  std::vector<std::string> io_json;
  std::string header_json;  ///< the top-level keys other than `nodes`, as `"k":v,"k":v`
};

/// Parses an execution trace from JSON text.
TRACEMODEL_READER_API execution_trace_file read_execution_trace_string(std::string_view text);
/// Reads an execution trace file (.json or .json.gz).
TRACEMODEL_READER_API execution_trace_file read_execution_trace_file(const std::string& path);

TRACEMODEL_END_NAMESPACE

// The definitions: compiled where the reader is (formats/chrome_trace/parse.hpp).
#if TRACEMODEL_READER_DEFINITIONS
#include <simdjson.h>

#include "tracemodel/detail/assert.hpp"
#include "tracemodel/formats/json_escape.hpp"

TRACEMODEL_BEGIN_NAMESPACE

namespace detail {
/// A node's fields: at its top level (schema 1.0) or, in newer traces (1.1, Chakra's), in its
/// `attrs` list of {"name", "type", "value"} entries.
struct et_fields {
  simdjson::dom::object o;
  simdjson::dom::array attrs{};
  bool has_attrs = false;
  explicit et_fields(simdjson::dom::object obj) : o(obj) {
    simdjson::dom::element a;
    has_attrs = !o["attrs"].get(a) && !a.get_array().get(attrs);
  }
  /// True when `key` is there; its value in `out`.
  bool get(std::string_view key, simdjson::dom::element& out) const {
    if (!o[key].get(out)) return true;
    if (!has_attrs) return false;
    for (simdjson::dom::element a : attrs) {
      simdjson::dom::object entry;
      std::string_view name;
      if (a.get_object().get(entry) || entry["name"].get_string().get(name) || name != key)
        continue;
      return !entry["value"].get(out);
    }
    return false;
  }
};

inline std::int64_t et_int(const et_fields& o, std::string_view key, std::int64_t fallback,
                           std::size_t node) {
  simdjson::dom::element e;
  if (!o.get(key, e)) return fallback;
  if (e.is_int64()) return e.get_int64().value_unsafe();
  if (e.is_uint64()) return static_cast<std::int64_t>(e.get_uint64().value_unsafe());
  if (e.is_null()) return fallback;
  throw input_error("execution trace: node " + std::to_string(node) + ": \"" + std::string(key) +
                    "\" is not an integer");
}
inline std::string et_string(const et_fields& o, std::string_view key, std::size_t node,
                             bool required) {
  simdjson::dom::element e;
  if (!o.get(key, e)) {
    if (required)
      throw input_error("execution trace: node " + std::to_string(node) + " has no \"" +
                        std::string(key) + "\"");
    return {};
  }
  std::string_view s;
  if (e.get_string().get(s))
    throw input_error("execution trace: node " + std::to_string(node) + ": \"" + std::string(key) +
                      "\" is not a string");
  return std::string(s);
}
}  // namespace detail

TRACEMODEL_READER_API execution_trace_file read_execution_trace_string(std::string_view text) {
  if (text.find_first_not_of(" \t\r\n") == std::string_view::npos)
    throw input_error("execution trace: empty input", 0);
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  const simdjson::padded_string padded(text);
  if (const auto err = parser.parse(padded).get(root))
    throw input_error(std::string("execution trace: invalid JSON: ") +
                      simdjson::error_message(err));
  simdjson::dom::object top;
  if (root.get_object().get(top))
    throw input_error("execution trace: the top level is not an object", 0);
  execution_trace_file et;
  simdjson::dom::array nodes;
  bool have_nodes = false;
  for (auto [key, value] : top) {
    if (key == "nodes") {
      if (value.get_array().get(nodes))
        throw input_error("execution trace: \"nodes\" is not an array");
      have_nodes = true;
      continue;
    }
    if (key == "schema") {
      std::string_view s;
      if (value.get_string().get(s))
        throw input_error("execution trace: \"schema\" is not a string");
      et.schema = std::string(s);
    } else if (key == "pid" && value.is_int64()) {
      et.pid = value.get_int64().value_unsafe();
    }
    if (!et.header_json.empty()) et.header_json += ',';
    et.header_json += '"';
    detail::append_json_escaped(et.header_json, key);
    et.header_json += "\":";
    et.header_json += simdjson::minify(value);
  }
  if (!have_nodes)
    throw input_error("execution trace: no \"nodes\" array (not an execution trace)", 0);
  et.nodes.reserve(nodes.size());
  et.node_json.reserve(nodes.size());
  et.io_json.reserve(nodes.size());
  std::size_t k = 0;
  for (simdjson::dom::element e : nodes) {
    simdjson::dom::object o;
    if (e.get_object().get(o))
      throw input_error("execution trace: node " + std::to_string(k) + " is not an object");
    const detail::et_fields f(o);
    et_node n;
    simdjson::dom::element id;
    if (o["id"].get(id) || !id.is_int64())
      throw input_error("execution trace: node " + std::to_string(k) + " has no integer \"id\"");
    n.id = id.get_int64().value_unsafe();
    n.name = detail::et_string(f, "name", k, true);
    n.parent = detail::et_int(f, "parent", -1, k);
    simdjson::dom::element deps;
    if (n.parent < 0 && !o["ctrl_deps"].get(deps)) {
      simdjson::dom::array list;
      if (deps.is_int64()) {
        n.parent = deps.get_int64().value_unsafe();
      } else if (!deps.get_array().get(list)) {
        for (simdjson::dom::element d : list)
          if (d.is_int64()) {
            n.parent = d.get_int64().value_unsafe();
            break;
          }
      }
    }
    n.rf_id = detail::et_int(f, "rf_id", -1, k);
    n.seq_id = detail::et_int(f, "seq_id", -1, k);
    n.fw_parent = detail::et_int(f, "fw_parent", -1, k);
    n.fw_tid = detail::et_int(f, "fw_tid", 0, k);
    n.tid = detail::et_int(f, "tid", 0, k);
    n.scope = detail::et_int(f, "scope", -1, k);
    n.op_schema = detail::et_string(f, "op_schema", k, false);
    n.synthetic = n.name.starts_with("[pytorch|profiler|execution_") &&
                  (n.name.ends_with("|process]") || n.name.ends_with("|thread]"));
    et.node_json.push_back(simdjson::minify(e));
    std::string& io_json = et.io_json.emplace_back();
    for (std::string_view io :
         {"inputs", "input_shapes", "input_types", "outputs", "output_shapes", "output_types"}) {
      simdjson::dom::element v;
      if (o[io].get(v)) continue;
      if (!io_json.empty()) io_json += ',';
      io_json += '"';
      io_json += io;
      io_json += "\":";
      io_json += simdjson::minify(v);
    }
    et.nodes.push_back(std::move(n));
    ++k;
  }
  return et;
}

TRACEMODEL_READER_API execution_trace_file read_execution_trace_file(const std::string& path) {
  const trace_text text = load_trace_text(path);
  return read_execution_trace_string(std::string_view(text.data(), text.size()));
}

TRACEMODEL_END_NAMESPACE
#endif  // TRACEMODEL_READER_DEFINITIONS
