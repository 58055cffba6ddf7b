// A trace read from a file and analysed (the tree, the links), as Python's Trace holds it.
#pragma once

#include <map>
#include <string>
#include <utility>

#include <tracemodel/model/table.hpp>

namespace tracemodel_py {

struct trace {
  explicit trace(std::string path);
  std::string path;
  tracemodel::event_table table;
  std::map<std::pair<tracemodel::process_key, tracemodel::thread_key>, std::string> thread_names;
  /// The thread's name from the trace's metadata, else its id as text.
  [[nodiscard]] std::string thread_text(tracemodel::process_key pid,
                                        tracemodel::thread_key tid) const;

 private:
  void name_threads();  // (from the table's metadata, once)
};

}  // namespace tracemodel_py
