// tracemodel tree: the call tree of each thread.
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <tracemodel/algo/key_averages.hpp>
#include <tracemodel/algo/walk.hpp>

#include "../input.hpp"
#include "../program.hpp"

namespace tracemodel_cli {
namespace tree_command {  // (named: the parts compile in batches)

/// `tree --json`: every event with its parent, streamed.
void write_events(const tmod::event_table& t) {
  json_to_stdout([&](tmod::json_output& out) {
    out.ch('{');
    write_repairs(out, t.anomalies);
    out.raw(",\"events\":[");
    for (std::size_t i = 0; i < t.size(); ++i) {
      const auto& e = t.events[i];
      const std::int64_t end = e.end_ns();
      out.raw(i ? ",\n" : "\n").raw("{\"id\":").unsigned_integer(i).raw(",\"name\":");
      out.string(t.name(e)).raw(",\"kind\":");
      out.string(tmod::default_schema::kind_names[e.fields.index()]).raw(",\"tid\":");
      write_tid(out, t, e.tid);
      out.raw(",\"ts_ns\":").integer(e.start_ns).raw(",\"dur_ns\":");
      out.integer(end == tmod::no_end_ns || end < e.start_ns ? 0 : end - e.start_ns);
      out.raw(",\"parent\":");
      if (e.parent == tmod::no_event)
        out.raw("null");
      else
        out.unsigned_integer(e.parent);
      out.ch('}');
    }
    out.raw("\n]}\n");
  });
}

/// The text: roots grouped by thread, in order of first appearance, `depth` levels.
void print_tree(const tmod::event_table& t, std::optional<std::uint32_t> depth) {
  std::map<std::pair<std::int64_t, std::uint64_t>, std::vector<tmod::event_index>> by_thread;
  std::vector<std::pair<std::int64_t, std::uint64_t>> order;
  for (tmod::event_index r : tmod::roots(t)) {
    const auto key = std::make_pair(t.events[r].pid, t.events[r].tid);
    auto [it, inserted] = by_thread.try_emplace(key);
    if (inserted) order.push_back(key);
    it->second.push_back(r);
  }
  for (const auto& key : order) {
    std::printf("thread %s/%s\n", tid_text(t, static_cast<std::uint64_t>(key.first)).c_str(),
                tid_text(t, key.second).c_str());
    tmod::walk_preorder(t, by_thread[key], [&](tmod::event_index i, std::uint32_t level) {
      if (depth && level >= *depth) return false;
      const auto& e = t.events[i];
      std::printf("%*s%s  %s\n", static_cast<int>(2 * level + 2), "",
                  std::string(t.name(e)).c_str(), tmod::format_duration(e.duration_ns()).c_str());
      return true;
    });
  }
}

int run(arguments& a) {
  std::optional<std::uint32_t> depth;
  a.value("--depth", [&](const std::string& v) {
    depth = static_cast<std::uint32_t>(parse_count("--depth", v));
  });
  a.most_traces = 1;
  a.parse();
  return with_trace(a.one_trace(), reading::exact, true, [&](tmod::event_table& t) {
    if (a.json)
      write_events(t);
    else
      print_tree(t, depth);
    return 0;
  });
}

const registrar tree{{"tree",
                      "  tree    the call tree of each thread\n"
                      "            --depth N                      levels to show (default: all)\n",
                      20, run}};

}  // namespace tree_command
}  // namespace tracemodel_cli
