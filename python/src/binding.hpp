// The Python module's parts (tracemodel._core): columns made from the C++ arrays, the errors
// Python users expect, and the three groups of bindings.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <deque>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <tracemodel/algo/critical_path_graph.hpp>
#include <tracemodel/algo/describe.hpp>
#include <tracemodel/algo/kernel_breakdown.hpp>
#include <tracemodel/detail/assert.hpp>
#include <tracemodel/model/table.hpp>

namespace tracemodel_py {

namespace py = pybind11;
namespace tmod = tracemodel;
using event = tmod::event_table::event_type;

/// A trace's text as a str: bytes that are not UTF-8 (a recording's names, which nothing
/// checks; the readers repair a file's) kept as surrogate escapes, so that distinct texts stay
/// distinct and nothing raises.
inline py::str text(std::string_view s) {
  PyObject* o =
      PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), "surrogateescape");
  if (o == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::str>(o);
}

/// A NumPy array of `n` numbers to fill (made with the GIL held; filled with it released).
template <class T>
struct number_column {
  explicit number_column(std::size_t n)
      : array(static_cast<py::ssize_t>(n)), data(array.mutable_data()) {}
  py::array_t<T> array;
  T* data;
};

/// A column of numbers: a NumPy array that owns a copy of `v`.
template <class T, class V>
py::array_t<T> numbers(const V& v) {
  py::array_t<T> a(static_cast<py::ssize_t>(v.size()));
  T* out = a.mutable_data();
  for (std::size_t k = 0; k < v.size(); ++k) out[k] = static_cast<T>(v[k]);
  return a;
}

/// A text column as codes into one table of distinct texts (a pandas categorical's parts).
/// Texts that have an id in a table's strings are looked up by id (`push(id, text)`), others
/// by their text.
class text_column {
 public:
  explicit text_column(std::size_t ids = 0) : by_id_(ids, -1) {}
  void reserve(std::size_t n) { codes_.reserve(n); }
  void push(std::string_view s) { codes_.push_back(code_of(s)); }
  void push(std::uint32_t id, std::string_view s) {
    if (id == 0 || id >= by_id_.size()) return push(s);
    std::int32_t& c = by_id_[id];
    if (c < 0) c = code_of(s);
    codes_.push_back(c);
  }
  void push_missing() { codes_.push_back(-1); }
  /// A code taken from `code_of` before (for callers that cache codes).
  void push_code(std::int32_t c) { codes_.push_back(c); }
  /// (codes, texts): pandas.Categorical.from_codes(codes, texts).
  [[nodiscard]] py::tuple take() const {
    py::list texts;
    for (const std::string& s : texts_) texts.append(text(s));
    return py::make_tuple(numbers<std::int32_t>(codes_), texts);
  }

  /// The code of `s`, added to the table of texts when new.
  std::int32_t code_of(std::string_view s) {
    auto it = index_.find(s);
    if (it == index_.end()) {
      texts_.emplace_back(s);  // (a deque: the key views the kept text, which never moves)
      it = index_.emplace(texts_.back(), static_cast<std::int32_t>(texts_.size() - 1)).first;
    }
    return it->second;
  }

 private:
  std::vector<std::int32_t> codes_, by_id_;
  std::deque<std::string> texts_;
  std::unordered_map<std::string_view, std::int32_t> index_;
};

/// Columns of pandas' describe() (count, mean, std, min, 25%, 50%, 75%, max).
struct stats_columns {
  std::vector<double> count, mean, std, min, q25, q50, q75, max;
  void push(const tmod::interval_stats& s) {
    count.push_back(static_cast<double>(s.count));
    mean.push_back(s.mean);
    std.push_back(s.std);
    min.push_back(s.min);
    q25.push_back(s.q25);
    q50.push_back(s.q50);
    q75.push_back(s.q75);
    max.push_back(s.max);
  }
  void into(py::dict& d) const {
    d["count"] = numbers<double>(count);
    d["mean"] = numbers<double>(mean);
    d["std"] = numbers<double>(std);
    d["min"] = numbers<double>(min);
    d["25%"] = numbers<double>(q25);
    d["50%"] = numbers<double>(q50);
    d["75%"] = numbers<double>(q75);
    d["max"] = numbers<double>(max);
  }
};

/// Rows of names with their statistics (kernels or annotations), with a rank column.
struct name_rows {
  std::vector<std::int64_t> rank;
  std::vector<double> sum, max, min, mean, std;
  text_column name, type;
  double unit = 1;
  void push(std::int64_t rk, const tmod::kernel_row& k, bool typed) {
    rank.push_back(rk);
    name.push(k.name);
    if (typed) type.push(tmod::to_string(k.cls));
    sum.push_back(static_cast<double>(k.sum) * unit);
    max.push_back(static_cast<double>(k.max) * unit);
    min.push_back(static_cast<double>(k.min) * unit);
    mean.push_back(k.mean * unit);
    std.push_back(k.std * unit);
  }
  py::dict take(bool typed) {
    py::dict d;
    d["name"] = name.take();
    d["sum (us)"] = numbers<double>(sum);
    d["max (us)"] = numbers<double>(max);
    d["min (us)"] = numbers<double>(min);
    d["stddev"] = numbers<double>(std);
    d["mean (us)"] = numbers<double>(mean);
    if (typed) d["kernel_type"] = type.take();
    d["rank"] = numbers<std::int64_t>(rank);
    return d;
  }
};

/// A bad trace: becomes `tracemodel.TraceError` (a ValueError) with the file and byte offset.
struct trace_error {
  std::string message, path;
  std::int64_t offset = -1;
};

/// Runs `fn`, turning the library's input errors about `path` into `trace_error` (which names
/// the file: a message that starts with it, as the readers of a run's ranks write them, loses
/// that start).
template <class Fn>
auto about_file(const std::string& path, Fn fn) {
  try {
    return fn();
  } catch (const tmod::input_error& e) {
    const std::int64_t off =
        e.offset() == tmod::input_error::npos ? -1 : static_cast<std::int64_t>(e.offset());
    std::string_view what = e.what();
    if (!path.empty() && what.starts_with(path) && what.substr(path.size()).starts_with(": "))
      what.remove_prefix(path.size() + 2);
    throw trace_error{std::string(what), path, off};
  }
}

/// A critical path's edges (source and target events, weight, type, the event charged, on the
/// path or not), its path, events, length and causes, times in ns / `per_unit`, events by their
/// `ids` (empty: their index in the table).
py::dict critical_path_dict(const tmod::critical_path& cp, std::int64_t per_unit,
                            std::span<const std::int64_t> ids);

/// Repairs as {kind: count}.
py::dict repairs_dict(const tmod::anomaly_counts& a);

void bind_trace(py::module_& m);
void bind_analyses(py::module_& m);
void bind_hta(py::module_& m);
void bind_cluster(py::module_& m);

}  // namespace tracemodel_py
