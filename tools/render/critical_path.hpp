// A critical path (algo/critical_path_graph.hpp) rendered: `critical-path`'s text and its
// `--json` object.
#pragma once

#include <cstddef>
#include <string>

#include <tracemodel/algo/critical_path_graph.hpp>
#include <tracemodel/model/table.hpp>

namespace tracemodel_cli {

namespace tmod = tracemodel;

/// What the path was asked for, as the renderings name it.
struct critical_path_request {
  bool hta = false;
  std::string annotation{};  ///< empty: the whole trace
  std::size_t instance = 0;
  std::size_t top = 10;  ///< events shown
};

/// The critical path `r` asks for: by the exact rules, or by HTA's (hta/critical_path.hpp).
[[nodiscard]] tmod::critical_path critical_path_for(const tmod::event_table& t,
                                                    const critical_path_request& r);

void print_critical_path(const tmod::event_table& t, const tmod::critical_path& cp,
                         const critical_path_request& r);
void write_critical_path_json(const tmod::event_table& t, const tmod::critical_path& cp,
                              const critical_path_request& r);

}  // namespace tracemodel_cli
