// tracemodel._core: the module, its errors, and a read trace with its events as columns.
#include <sys/stat.h>

#include <map>
#include <string>
#include <tuple>
#include <utility>

#include <tracemodel/algo/analyze.hpp>
#include <tracemodel/algo/key_averages.hpp>
#include <tracemodel/formats/chrome_trace_writer.hpp>
#include <tracemodel/formats/perfetto_writer.hpp>
#include <tracemodel/formats/trace_file.hpp>

#include "binding.hpp"
#include "trace.hpp"

namespace tracemodel_py {

py::dict repairs_dict(const tmod::anomaly_counts& a) {
  py::dict d;
  for (std::size_t k = 0; k < a.n.size(); ++k)
    if (a.n[k] != 0) d[py::str(std::string(tmod::anomaly_names[k]))] = a.n[k];
  return d;
}

trace::trace(std::string p) : path(std::move(p)) {
  about_file(path, [&] {
    const py::gil_scoped_release unlocked;  // (reading and analysing touch no Python object)
    table = tmod::read_trace_file(path);
    tmod::analyze(table);
    return 0;
  });
  name_threads();
}

std::string trace::thread_text(tmod::process_key pid, tmod::thread_key tid) const {
  const auto it = thread_names.find({pid, tid});
  if (it != thread_names.end()) return it->second;
  return tmod::event_table::is_string_key(tid) ? std::string(table.key_label(tid))
                                               : std::to_string(static_cast<std::int64_t>(tid));
}

namespace {
/// The "name" of a metadata record's arguments as a file wrote them ({"name": "main"}).
std::string name_arg(std::string_view args) {
  const std::size_t k = args.find("\"name\"");
  if (k == std::string_view::npos) return {};
  std::size_t i = args.find(':', k);
  if (i == std::string_view::npos) return {};
  i = args.find('"', i);
  if (i == std::string_view::npos) return {};
  std::string out;
  for (++i; i < args.size() && args[i] != '"'; ++i) {
    if (args[i] == '\\' && i + 1 < args.size()) ++i;
    out += args[i];
  }
  return out;
}
}  // namespace

void trace::name_threads() {
  for (const tmod::metadata_record& r : table.info.records) {
    if (table.strings.view(r.name) != "thread_name") continue;
    std::string name = r.value != tmod::name_id{} ? std::string(table.strings.view(r.value))
                                                  : name_arg(table.strings.view(r.args));
    if (!name.empty()) thread_names[{r.pid, r.tid}] = std::move(name);
  }
}

namespace {

/// A key as a number column holds it: the number, or -1 for a key that stands for a string.
std::int64_t key_number(std::uint64_t k) {
  return tmod::event_table::is_string_key(k) ? -1 : static_cast<std::int64_t>(k);
}

std::uint32_t name_id_of(const event& e) {
  return e.visit([](const auto& x) -> std::uint32_t {
    if constexpr (requires { x.name; }) {
      if constexpr (std::is_same_v<decltype(x.name), tmod::name_id>)
        return static_cast<std::uint32_t>(x.name);
    }
    return 0;
  });
}

/// One row per event, in the table's order (the row's place is the event's index). The texts
/// are coded through caches (names by their id, categories by the few texts a table has, kinds
/// by their place in the schema, threads by the last one seen), so that an event costs no hash
/// of its texts.
py::dict event_columns(const trace& tr) {
  const tmod::event_table& t = tr.table;
  const std::size_t n = t.size();
  text_column name(t.strings.size()), cat, thread, shapes;
  number_column<std::int32_t> kind(n);
  number_column<std::int64_t> pid(n), tid(n), ts(n), dur(n), parent(n), corr(n), stream(n), dev(n),
      external(n);
  name.reserve(n);
  cat.reserve(n);
  thread.reserve(n);
  shapes.reserve(n);
  {
    const py::gil_scoped_release unlocked;
    std::vector<std::tuple<const char*, std::size_t, std::int32_t>> cats;  // (few)
    std::map<std::pair<tmod::process_key, tmod::thread_key>, std::int32_t> threads;
    std::pair<tmod::process_key, tmod::thread_key> last_thread{};
    std::int32_t last_code = -1;
    for (std::size_t k = 0; k < n; ++k) {
      const event& e = t.events[k];
      name.push(name_id_of(e), t.name(e));
      const std::string_view c = t.category(e);
      std::int32_t cc = -1;
      for (const auto& [p, size, code] : cats)
        if (p == c.data() && size == c.size()) cc = code;
      if (cc < 0) {
        cc = cat.code_of(c);
        if (cats.size() < 64) cats.emplace_back(c.data(), c.size(), cc);
      }
      cat.push_code(cc);
      kind.data[k] = static_cast<std::int32_t>(e.fields.index());
      const std::pair key{e.pid, e.tid};
      if (key != last_thread || last_code < 0) {
        auto [it, added] = threads.try_emplace(key, 0);
        if (added) it->second = thread.code_of(tr.thread_text(e.pid, e.tid));
        last_thread = key;
        last_code = it->second;
      }
      thread.push_code(last_code);
      pid.data[k] = key_number(static_cast<std::uint64_t>(e.pid));
      tid.data[k] = key_number(e.tid);
      ts.data[k] = e.start_ns;
      dur.data[k] = e.duration_ns();
      parent.data[k] = e.parent == tmod::no_event ? -1 : static_cast<std::int64_t>(e.parent);
      const std::uint64_t cid = e.correlation_id();
      corr.data[k] = cid == 0 ? -1 : static_cast<std::int64_t>(cid);
      stream.data[k] = -1;
      dev.data[k] = -1;
      external.data[k] = -1;
      if (const auto* d = e.get_if<tmod::event_kind::device_activity>()) {
        stream.data[k] = d->stream;
        dev.data[k] = d->device;
        if (d->external_id != 0) external.data[k] = static_cast<std::int64_t>(d->external_id);
      }
      if (t.inputs_of(e).empty())
        shapes.push_missing();
      else
        shapes.push(tmod::input_shapes_text(t, e));
    }
  }
  py::list kinds;
  for (const std::string_view k : tmod::default_schema::kind_names)
    kinds.append(py::str(std::string(k)));
  py::dict d;
  d["name"] = name.take();
  d["category"] = cat.take();
  d["kind"] = py::make_tuple(kind.array, kinds);
  d["thread"] = thread.take();
  d["pid"] = pid.array;
  d["tid"] = tid.array;
  d["ts"] = ts.array;
  d["dur"] = dur.array;
  d["parent"] = parent.array;
  d["correlation"] = corr.array;
  d["external_id"] = external.array;
  d["stream"] = stream.array;
  d["device"] = dev.array;
  d["input_shapes"] = shapes.take();
  return d;
}

/// The links of the table: forward op to backward op, launch to device activity.
py::dict link_columns(const trace& tr) {
  const tmod::event_table& t = tr.table;
  std::vector<std::int64_t> from, to, id;
  text_column kind;
  for (const tmod::flow_link& l : t.links) {
    from.push_back(l.from);
    to.push_back(l.to);
    id.push_back(static_cast<std::int64_t>(l.id));
    kind.push(l.kind == tmod::flow_kind::fwd_bwd ? "forward_backward" : "launch");
  }
  py::dict d;
  d["source"] = numbers<std::int64_t>(from);
  d["target"] = numbers<std::int64_t>(to);
  d["kind"] = kind.take();
  d["id"] = numbers<std::int64_t>(id);
  return d;
}

/// The call tree in depth-first order: each event after its parent, children in time order.
py::dict tree_columns(const trace& tr) {
  const tmod::event_table& t = tr.table;
  std::vector<std::int64_t> event, depth;
  std::vector<std::pair<tmod::event_index, std::int64_t>> stack;
  for (tmod::event_index k = 0; k < t.size(); ++k) {
    if (t.events[k].parent != tmod::no_event) continue;
    stack.emplace_back(k, 0);
    while (!stack.empty()) {
      const auto [i, d] = stack.back();
      stack.pop_back();
      event.push_back(i);
      depth.push_back(d);
      const auto children = t.children_of(i);
      for (auto c = children.rbegin(); c != children.rend(); ++c) stack.emplace_back(*c, d + 1);
    }
  }
  py::dict out;
  out["event"] = numbers<std::int64_t>(event);
  out["depth"] = numbers<std::int64_t>(depth);
  return out;
}

void write_trace(const trace& tr, const std::string& path) {
  const bool perfetto = path.ends_with(".pftrace") || path.ends_with(".pftrace.gz");
  about_file(path, [&] {
    const py::gil_scoped_release unlocked;
    if (perfetto)
      tmod::write_perfetto_trace_file(tr.table, path);
    else
      tmod::write_chrome_trace_file(tr.table, path);
    return 0;
  });
}

}  // namespace

void bind_trace(py::module_& m) {
  py::class_<trace>(m, "Trace")
      .def(py::init<std::string>(), py::arg("path"))
      .def_readonly("path", &trace::path)
      .def("__len__", [](const trace& t) { return t.table.size(); })
      .def("event_columns", &event_columns)
      .def("link_columns", &link_columns)
      .def("tree_columns", &tree_columns)
      .def("repairs", [](const trace& t) { return repairs_dict(t.table.anomalies); })
      .def("write", &write_trace, py::arg("path"));
}

}  // namespace tracemodel_py

PYBIND11_MODULE(_core, m) {
  namespace py = pybind11;
  m.doc() = "tracemodel's C++ core (the tracemodel package wraps it)";
  // The errors: a bad trace becomes tracemodel.TraceError (defined in Python).
  // (kept for the interpreter's life: a reference, never released at exit)
  static const py::handle trace_error_type =
      py::object(py::module_::import("tracemodel._errors").attr("TraceError")).release();
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const tracemodel_py::trace_error& e) {
      const py::object err = trace_error_type(e.message, e.path, e.offset);
      PyErr_SetObject(trace_error_type.ptr(), err.ptr());
    } catch (const tracemodel::input_error& e) {
      const py::object err = trace_error_type(e.what(), py::none(), -1);
      PyErr_SetObject(trace_error_type.ptr(), err.ptr());
    } catch (const tracemodel::usage_error& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    }
  });
  tracemodel_py::bind_trace(m);
  tracemodel_py::bind_analyses(m);
  tracemodel_py::bind_hta(m);
  tracemodel_py::bind_cluster(m);
}
