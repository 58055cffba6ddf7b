// Test support: the event tree of a PyTorch 1.13 oracle as an event table (oracle order, parents
// removed), with PyTorch's parents on the side.
#pragma once

#include <string>
#include <vector>

#include <tracemodel/model/table.hpp>

#include "json.hpp"

namespace tmtest {

inline const char* const oracle_workloads[] = {
    "adamw_zero_grad", "conv_bn_infer",    "dataloader_sync", "for_loop_indexing", "memory_profile",
    "mlp_train",       "nested_scopes_64", "script_module",   "threads_fork"};

struct oracle_tree {
  tracemodel::event_table table;
  std::vector<tracemodel::event_index> parents;  ///< PyTorch's
};

inline oracle_tree load_oracle_tree(const json_doc& doc) {
  using namespace tracemodel;
  oracle_tree out;
  event_table& t = out.table;
  for (simdjson::dom::element n : simdjson::dom::array(doc.root["event_tree"]["nodes"])) {
    auto& e = t.events.emplace_back();
    e.start_ns = int64_t(n["start_ns"]);
    e.tid = uint64_t(n["tid"]);
    e.pid = 1;
    const std::string_view tag = n["tag"];
    const std::string_view name = n["name"];
    const std::int64_t end = int64_t(n["end_ns"]);
    if (tag == "TorchOp") {
      auto& f = e.fields.emplace<default_schema::index_of<event_kind::op>>();
      f.name = t.strings.intern(name);
      f.end_ns = end;
      f.correlation_id = uint64_t(n["correlation_id"]);
      f.fwd_thread_id = uint64_t(n["torch_op"]["fwd_tid"]);
      f.sequence_number = int64_t(n["torch_op"]["sequence_number"]);
    } else if (tag == "PyCall") {
      auto& f = e.fields.emplace<default_schema::index_of<event_kind::script_call>>();
      f.name = t.strings.intern(name);
      f.end_ns = end;
    } else if (tag == "PyCCall") {
      auto& f = e.fields.emplace<default_schema::index_of<event_kind::native_call>>();
      f.name = t.strings.intern(name);
      f.end_ns = end;
    } else {
      e.fields.emplace<default_schema::index_of<event_kind::allocation>>();
    }
    simdjson::dom::element p = n["parent"];
    out.parents.push_back(p.is_null() ? no_event : static_cast<event_index>(uint64_t(p)));
  }
  return out;
}

}  // namespace tmtest
