// tracemodel._core: the analyses of one trace (key averages, patterns, critical path, diff).
#include <optional>
#include <string>
#include <tuple>

#include <tracemodel/algo/critical_path.hpp>
#include <tracemodel/algo/kernel_class.hpp>
#include <tracemodel/algo/key_averages.hpp>
#include <tracemodel/algo/patterns.hpp>
#include <tracemodel/algo/pytorch_patterns.hpp>
#include <tracemodel/algo/trace_diff.hpp>
#include <tracemodel/formats/device_properties.hpp>
#include <tracemodel/hta/critical_path.hpp>

#include "binding.hpp"
#include "trace.hpp"

namespace tracemodel_py {

py::dict critical_path_dict(const tmod::critical_path& cp, std::int64_t per_unit,
                            std::span<const std::int64_t> ids) {
  const auto id = [ids](tmod::event_index e) -> std::int64_t {
    if (e == tmod::no_event) return -1;
    return ids.empty() ? static_cast<std::int64_t>(e) : ids[e];
  };
  std::vector<std::int64_t> from, to, weight, charged;
  std::vector<bool> critical(cp.edges.size());
  std::vector<std::string_view> edge_cause(cp.edges.size());  // (path edges only)
  text_column type, bound_by_edge;
  for (std::size_t k = 0; k < cp.path.size(); ++k) {
    critical[cp.path[k]] = true;
    if (k < cp.path_causes.size()) edge_cause[cp.path[k]] = tmod::cp_causes[cp.path_causes[k]];
  }
  for (const tmod::cp_edge& e : cp.edges) {
    from.push_back(id(cp.nodes[e.from].event));
    to.push_back(id(cp.nodes[e.to].event));
    weight.push_back(e.weight / per_unit);
    charged.push_back(id(e.charged));
    type.push(tmod::cp_edge_type_names[static_cast<std::size_t>(e.type)]);
    bound_by_edge.push(edge_cause[static_cast<std::size_t>(&e - cp.edges.data())]);
  }
  py::dict edges;
  edges["source"] = numbers<std::int64_t>(from);
  edges["target"] = numbers<std::int64_t>(to);
  edges["weight"] = numbers<std::int64_t>(weight);
  edges["type"] = type.take();
  edges["event"] = numbers<std::int64_t>(charged);
  edges["critical"] = numbers<bool>(critical);
  edges["bound_by"] = bound_by_edge.take();
  const auto in_unit = [per_unit](std::int64_t ns) {
    return static_cast<double>(ns) / static_cast<double>(per_unit);
  };
  py::dict bound_by;
  for (const auto& [cause, ns] : cp.bound_by) bound_by[py::str(cause)] = in_unit(ns);
  py::dict d;
  d["edges"] = edges;
  d["nodes"] = cp.nodes.size();
  d["path"] = numbers<std::int64_t>(cp.path);
  std::vector<std::int64_t> events;
  for (const tmod::event_index e : cp.events) events.push_back(id(e));
  d["events"] = numbers<std::int64_t>(events);
  d["length"] = in_unit(cp.length);
  d["bound_by"] = bound_by;
  d["acyclic"] = cp.acyclic;
  return d;
}

namespace {

template <class E>
E choose(const std::string& v, std::initializer_list<std::pair<const char*, E>> options,
         const char* what) {
  std::string names;
  for (const auto& [n, e] : options) {
    if (v == n) return e;
    names += (names.empty() ? "" : ", ") + std::string(n);
  }
  throw tmod::usage_error(std::string(what) + ": '" + v + "' is not one of " + names);
}

py::dict key_average_columns(const trace& tr, const std::string& group, const std::string& sort) {
  tmod::key_average_options o;
  o.group = choose<tmod::group_by>(group,
                                   {{"name", tmod::group_by::name},
                                    {"shapes", tmod::group_by::shapes},
                                    {"stack", tmod::group_by::stack}},
                                   "group_by");
  o.sort = choose<tmod::sort_by>(sort,
                                 {{"total", tmod::sort_by::total},
                                  {"self", tmod::sort_by::self},
                                  {"count", tmod::sort_by::count},
                                  {"device_total", tmod::sort_by::device_total},
                                  {"self_device", tmod::sort_by::self_device}},
                                 "sort_by");
  const auto rows = tmod::key_averages(tr.table, o);
  text_column name, detail;
  std::vector<std::int64_t> count, total, self, dev_total, self_dev, cpu_mem, self_cpu_mem, dev_mem,
      self_dev_mem;
  std::vector<bool> on_device;
  for (const auto& r : rows) {
    name.push(r.name);
    detail.push(r.detail);
    count.push_back(static_cast<std::int64_t>(r.count));
    total.push_back(r.total_ns);
    self.push_back(r.self_ns);
    dev_total.push_back(r.device_total_ns);
    self_dev.push_back(r.self_device_ns);
    cpu_mem.push_back(r.cpu_memory_bytes);
    self_cpu_mem.push_back(r.self_cpu_memory_bytes);
    dev_mem.push_back(r.device_memory_bytes);
    self_dev_mem.push_back(r.self_device_memory_bytes);
    on_device.push_back(r.device_activities);
  }
  py::dict d;
  d["name"] = name.take();
  if (o.group != tmod::group_by::name)
    d[o.group == tmod::group_by::shapes ? "input_shapes" : "stack"] = detail.take();
  d["count"] = numbers<std::int64_t>(count);
  d["total_ns"] = numbers<std::int64_t>(total);
  d["self_ns"] = numbers<std::int64_t>(self);
  d["device_total_ns"] = numbers<std::int64_t>(dev_total);
  d["self_device_ns"] = numbers<std::int64_t>(self_dev);
  d["cpu_memory_bytes"] = numbers<std::int64_t>(cpu_mem);
  d["self_cpu_memory_bytes"] = numbers<std::int64_t>(self_cpu_mem);
  d["device_memory_bytes"] = numbers<std::int64_t>(dev_mem);
  d["self_device_memory_bytes"] = numbers<std::int64_t>(self_dev_mem);
  d["on_device"] = numbers<bool>(on_device);
  return d;
}

/// PyTorch's patterns: (columns of the matches, [(pattern, description, skipped, reports)]).
py::tuple pattern_results(const trace& tr, const std::string& framework_prefix) {
  const tmod::event_table& t = tr.table;
  tmod::pattern_context ctx = tmod::context_of(t, tmod::device_properties(t));
  ctx.framework_prefix = framework_prefix;
  const tmod::tree_view view(t);
  auto builtin = tmod::pytorch_patterns();
  const auto results =
      std::apply([&](auto&... p) { return tmod::find_patterns(view, ctx, p...); }, builtin);
  text_column pattern, name, location;
  std::vector<std::int64_t> event;
  py::list summary;
  for (const tmod::pattern_result& r : results) {
    for (std::size_t k = 0; k < r.matches.size(); ++k) {
      pattern.push(r.name);
      event.push_back(r.matches[k]);
      name.push(t.name(r.matches[k]));
      location.push(tmod::location_of(view, r, k));
    }
    py::list reports;
    for (const std::string& s : r.reports) reports.append(s);
    summary.append(py::make_tuple(r.name, r.description,
                                  r.skipped ? py::object(py::str(*r.skipped)) : py::none(),
                                  r.matches.size(), reports));
  }
  py::dict d;
  d["pattern"] = pattern.take();
  d["event"] = numbers<std::int64_t>(event);
  d["name"] = name.take();
  d["location"] = location.take();
  return py::make_tuple(d, summary);
}

py::dict critical_path_result(const trace& tr, const std::string& annotation, std::size_t instance,
                              bool hta) {
  const tmod::event_table& t = tr.table;
  const tmod::critical_path cp = [&] {
    const py::gil_scoped_release unlocked;
    return hta ? tmod::hta::critical_path_of(t, {.annotation = annotation, .instance = instance})
               : tmod::critical_path_of(t, {.annotation = annotation, .instance = instance});
  }();
  py::dict d = critical_path_dict(cp, 1, {});
  d["window"] = cp.window ? py::object(py::make_tuple(cp.window->first, cp.window->second))
                          : py::object(py::none());
  return d;
}

py::dict diff_columns(const trace& control, const trace& test, std::optional<std::int64_t> c_step,
                      std::optional<std::int64_t> t_step, const std::string& device,
                      bool short_names) {
  tmod::diff_selection a;
  a.device = choose<tmod::diff_device>(device,
                                       {{"cpu", tmod::diff_device::cpu},
                                        {"gpu", tmod::diff_device::gpu},
                                        {"all", tmod::diff_device::all}},
                                       "device");
  a.short_names = short_names;
  tmod::diff_selection b = a;
  a.iteration = c_step;
  b.iteration = t_step;
  const auto rows =
      tmod::compare_totals(tmod::op_totals_of(control.table, a), tmod::op_totals_of(test.table, b));
  text_column name;
  std::vector<std::int64_t> cc, cd, tc, td, dc, dd;
  for (const tmod::diff_row& r : rows) {
    name.push(r.name);
    cc.push_back(static_cast<std::int64_t>(r.control_counts));
    cd.push_back(r.control_total_duration);
    tc.push_back(static_cast<std::int64_t>(r.test_counts));
    td.push_back(r.test_total_duration);
    dc.push_back(r.diff_counts);
    dd.push_back(r.diff_duration);
  }
  py::dict d;
  d["name"] = name.take();
  d["control_counts"] = numbers<std::int64_t>(cc);
  d["control_total_duration"] = numbers<std::int64_t>(cd);
  d["test_counts"] = numbers<std::int64_t>(tc);
  d["test_total_duration"] = numbers<std::int64_t>(td);
  d["diff_counts"] = numbers<std::int64_t>(dc);
  d["diff_duration"] = numbers<std::int64_t>(dd);
  return d;
}

}  // namespace

void bind_analyses(py::module_& m) {
  m.def(
      "short_name", [](std::string_view n) { return tmod::short_kernel_name(n); }, py::arg("name"));
  m.def("key_averages", &key_average_columns, py::arg("trace"), py::arg("group_by"),
        py::arg("sort_by"));
  m.def("patterns", &pattern_results, py::arg("trace"), py::arg("framework_prefix"));
  m.def("critical_path", &critical_path_result, py::arg("trace"), py::arg("annotation"),
        py::arg("instance"), py::arg("hta"));
  m.def("diff", &diff_columns, py::arg("control"), py::arg("test"), py::arg("control_iteration"),
        py::arg("test_iteration"), py::arg("device"), py::arg("short_names"));
}

}  // namespace tracemodel_py
