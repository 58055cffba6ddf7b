// tracemodel/model — a PyTorch execution trace in memory: its nodes, as the join with a
// host/device trace reads them (formats/execution_trace.hpp reads them, with what a writer needs).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tracemodel/config.hpp"

TRACEMODEL_BEGIN_NAMESPACE

struct et_node {
  std::int64_t id = 0;
  std::string name;
  std::int64_t parent = -1;  ///< `parent`, else the first of `ctrl_deps`; -1 for none
  std::int64_t rf_id = -1;
  std::int64_t seq_id = -1;
  std::int64_t fw_parent = -1;
  std::int64_t fw_tid = 0;
  std::int64_t tid = 0;
  std::int64_t scope = -1;
  std::string op_schema;
  bool synthetic = false;  ///< a process or thread annotation node
};

struct execution_trace {
  std::string schema;
  std::int64_t pid = 0;
  std::vector<et_node> nodes;
};

TRACEMODEL_END_NAMESPACE
