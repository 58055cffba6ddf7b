// A critical path rendered (critical_path.hpp).
#include "critical_path.hpp"

#include <array>
#include <cstdio>

#include <tracemodel/algo/critical_path.hpp>
#include <tracemodel/hta/critical_path.hpp>

#include "../input.hpp"

namespace tracemodel_cli {

namespace {
double us(std::int64_t ns) { return static_cast<double>(ns) / 1000.0; }
std::array<std::size_t, 5> edge_types(const tmod::critical_path& cp) {
  std::array<std::size_t, 5> types{};
  for (const tmod::cp_edge& e : cp.edges) ++types[static_cast<std::size_t>(e.type)];
  return types;
}
}  // namespace

tmod::critical_path critical_path_for(const tmod::event_table& t, const critical_path_request& r) {
  if (r.hta)
    return tmod::hta::critical_path_of(t, {.annotation = r.annotation, .instance = r.instance});
  return tmod::critical_path_of(t, {.annotation = r.annotation, .instance = r.instance});
}

void write_critical_path_json(const tmod::event_table& t, const tmod::critical_path& cp,
                              const critical_path_request& r) {
  const auto types = edge_types(cp);
  const auto top = tmod::top_events(cp, r.top);
  json_to_stdout([&](tmod::json_output& out) {
    out.raw("{\"policy\":").string(r.hta ? "hta" : "exact").raw(",\"unit\":\"us\",");
    write_repairs(out, t.anomalies);
    out.raw(",\"annotation\":").string(r.annotation).raw(",\"instance_id\":");
    out.unsigned_integer(r.instance).raw(",\"success\":").raw(cp.acyclic ? "true" : "false");
    out.raw(",\"nodes\":").unsigned_integer(cp.nodes.size());
    out.raw(",\"edges\":").unsigned_integer(cp.edges.size()).raw(",\"edge_types\":{");
    bool first = true;
    for (std::size_t k = 0; k < 5; ++k) {
      if (types[k] == 0) continue;
      out.raw(first ? "" : ",").string(tmod::cp_edge_type_names[k]).ch(':');
      out.unsigned_integer(types[k]);
      first = false;
    }
    out.raw("},\"critical_path_events\":").unsigned_integer(cp.events.size());
    out.raw(",\"critical_path_length_us\":").floating(us(cp.length)).raw(",\"bound_by_us\":{");
    first = true;
    for (const auto& [cause, ns] : cp.bound_by) {
      out.raw(first ? "" : ",").string(cause).ch(':').floating(us(ns));
      first = false;
    }
    out.raw("},\"top_events\":[");
    for (std::size_t k = 0; k < top.size(); ++k) {
      const auto& e = t.events[top[k].first];
      out.raw(k ? ",\n" : "\n").raw("{\"name\":").string(t.name(e)).raw(",\"ts_ns\":");
      out.integer(e.start_ns).raw(",\"on_path_us\":").floating(us(top[k].second)).ch('}');
    }
    out.raw("]}\n");
  });
}

void print_critical_path(const tmod::event_table& t, const tmod::critical_path& cp,
                         const critical_path_request& r) {
  const auto types = edge_types(cp);
  const auto top = tmod::top_events(cp, r.top);
  std::printf("critical path (%s rules) of %s\n", r.hta ? "HTA's" : "exact",
              r.annotation.empty() ? "the whole trace"
                                   : (r.annotation + " #" + std::to_string(r.instance)).c_str());
  if (cp.window)
    std::printf("  window %lld to %lld ns\n", static_cast<long long>(cp.window->first),
                static_cast<long long>(cp.window->second));
  std::printf(
      "  %zu nodes, %zu edges: %zu operator, %zu dependency, %zu launch, %zu kernel to "
      "kernel, %zu sync%s\n",
      cp.nodes.size(), cp.edges.size(), types[0], types[1], types[2], types[3], types[4],
      cp.acyclic ? "" : " (a cycle: its nodes are left out)");
  std::printf("  length %.3f us over %zu events\n", us(cp.length), cp.events.size());
  for (const auto& [cause, ns] : cp.bound_by)
    if (!cause.empty())
      std::printf(
          "  %-28s %14.3f us %6.2f%%\n", cause.c_str(), us(ns),
          cp.length > 0 ? 100.0 * static_cast<double>(ns) / static_cast<double>(cp.length) : 0.0);
  std::printf("\ntop contributors\n");
  for (const auto& [i, ns] : top) {
    std::string name(t.name(i));
    if (name.size() > 70) name = name.substr(0, 67) + "...";
    std::printf("  %14.3f us  %s\n", us(ns), name.c_str());
  }
}

}  // namespace tracemodel_cli
