// tracemodel/formats — the Chrome-trace (Kineto flavour) writer: the JSON encoder of the export
// view (formats/export_view.hpp).
//
//   tracemodel::write_chrome_trace_file(table, "trace.json");     // or "trace.json.gz"
//   std::string json = tracemodel::chrome_trace_string(table);
//   tracemodel::write_chrome_trace_file(view, "overlaid.json");   // a table and what is drawn on
//   it
//
// Streams the view as a trace that Perfetto UI, chrome://tracing and tools that read PyTorch
// traces open:
//   {"schemaVersion":1, <metadata kept from a read trace>, "displayTimeUnit":"ms",
//    "baseTimeNanoseconds":B, "traceEvents":[ metadata records, events, flows, the view's
//    counters and flows ]}
//  * every event is a complete event (`ph:"X"`) with PyTorch's categories, or an instant
//    (`ph:"i"`, allocations and instants read as such);
//  * times are microseconds relative to `baseTimeNanoseconds` with exactly three decimals, so
//    every nanosecond survives (absolute epoch microseconds in a double would not);
//  * args come from the payload fields through their reflection (formats/args.hpp), then op
//    inputs (`Input Dims`, `Input type`, `Input Strides`, `Concrete Inputs`), then the event's
//    extra attributes (a verbatim one, as a JSON reader keeps nested values, written back as it
//    is), then the view's marks on it;
//  * forward/backward links (table.links) become `fwdbwd` flows, device flows (the flow fields
//    of device activities) `ac2g` flows: a start on the first event, an end with binding point
//    "e" on the second, both at their event's start;
//  * the view's counter series are counter records (`ph:"C"`, one per point, the track's name,
//    the process and the series' id when it has one), its flows a start and an end (binding point
//    "e") with their args;
//  * output is deterministic (table order, fixed key order); ids above 2^53 are strings.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <iterator>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "tracemodel/config.hpp"
#include "tracemodel/formats/args.hpp"
#include "tracemodel/formats/event_args.hpp"
#include "tracemodel/formats/export_view.hpp"
#include "tracemodel/formats/json_output.hpp"
#include "tracemodel/model/reflect.hpp"
#include "tracemodel/model/table.hpp"

TRACEMODEL_BEGIN_NAMESPACE

namespace detail {

template <class Table>
class chrome_writer {
 public:
  using view_type = basic_export_view<typename Table::schema_type>;

  chrome_writer(const view_type& v, json_output& out) : v_(v), t_(v.table), out_(out) {}

  void write() {
    write_header(base_time());
    (void)write_body(base_, true);
    out_.raw(trailer);
    out_.flush();
  }

  /// What closes the `traceEvents` array and the trace.
  static constexpr std::string_view trailer = "\n]\n}\n";

  /// The trace up to and including the opening of its `traceEvents` array, times from `base`.
  void write_header(std::int64_t base) {
    base_ = base;
    out_.raw("{\n\"schemaVersion\": 1,\n");
    for (const auto& [key, value] : t_.info.metadata) {
      out_.string(t_.strings.view(key)).raw(": ").raw(t_.strings.view(value)).raw(",\n");
    }
    out_.raw("\"displayTimeUnit\": \"ms\",\n\"baseTimeNanoseconds\": ").integer(base_);
    out_.raw(",\n\"traceEvents\": [");
  }

  /// The table's records (those `keep` keeps), events and flows, then the view's counters and
  /// flows, as elements of a `traceEvents` array, times from `base`; `first`: whether the array
  /// is still empty. Returns whether it still is.
  bool write_body(std::int64_t base, bool first,
                  const std::function<bool(const metadata_record&)>& keep = {}) {
    base_ = base;
    first_ = first;
    marks_ = v_.marks_by_event();
    next_mark_ = 0;
    for (const metadata_record& m : t_.info.records)
      if (!keep || keep(m)) write_record(m);
    for (const auto& e : t_.events) write_event(e);
    write_flows();
    for (const counter_series& c : v_.counters) write_counter(c);
    for (const export_flow& f : v_.flows) write_view_flow(f);
    return first_;
  }

  /// The time a trace of the table counts from: its base time, else the whole second before
  /// its first event.
  std::int64_t base_time() const {
    if (t_.info.has_base_time) return t_.info.base_time_ns;
    if (t_.events.empty()) return 0;
    std::int64_t lo = t_.events.front().start_ns;
    for (const auto& e : t_.events) lo = std::min(lo, e.start_ns);
    // A whole second keeps relative times short and readable.
    const std::int64_t s = 1'000'000'000;
    return lo >= 0 ? lo / s * s : -((-lo + s - 1) / s) * s;
  }

 private:
  using event_t = typename Table::event_type;

  void next() {
    out_.raw(first_ ? "\n" : ",\n");
    first_ = false;
  }

  void key_value(std::uint64_t k) {  // a pid or tid: numbers stay numbers, strings strings
    if (Table::is_string_key(k))
      out_.string(t_.key_label(k));
    else
      out_.integer(static_cast<std::int64_t>(k));
  }

  void write_record(const metadata_record& m) {
    next();
    out_.raw("{\"ph\":\"M\",\"name\":").string(t_.strings.view(m.name)).raw(",\"pid\":");
    key_value(static_cast<std::uint64_t>(m.pid));
    out_.raw(",\"tid\":");
    key_value(m.tid);
    if (m.value != empty_name)  // a name given through the table (set_thread_name, ...)
      out_.raw(",\"args\":{\"name\":").string(t_.strings.view(m.value)).raw("}}");
    else if (m.args != empty_name)  // as read
      out_.raw(",\"args\":").raw(t_.strings.view(m.args)).ch('}');
    else
      out_.raw(",\"args\":{}}");
  }

  void write_event(const event_t& e) {
    next();
    const bool allocation =
        e.template is<event_kind::allocation>() || e.template is<event_kind::out_of_memory>();
    const char scope = e.instant_scope != 0 ? e.instant_scope : allocation ? 't' : 0;
    if (scope != 0)
      out_.raw("{\"ph\":\"i\",\"s\":\"").ch(scope).raw("\",\"cat\":");
    else
      out_.raw("{\"ph\":\"X\",\"cat\":");
    out_.string(t_.category(e)).raw(",\"name\":").string(t_.name(e)).raw(",\"pid\":");
    key_value(static_cast<std::uint64_t>(e.pid));
    out_.raw(",\"tid\":");
    key_value(e.tid);
    out_.raw(",\"ts\":").micros(e.start_ns - base_);
    if (scope == 0) {
      const std::int64_t end = e.end_ns();
      out_.raw(",\"dur\":").micros(end == no_end_ns || end < e.start_ns ? 0 : end - e.start_ns);
    }
    out_.raw(",\"args\":{");
    first_arg_ = true;
    e.visit([&](const auto& f) { write_fields(f); });
    if (const auto* op = e.template get_if<event_kind::op>()) {
      write_inputs(e);
      if (op->unfinished()) arg("finished").boolean(false);
    }
    for (const attribute& a : t_.attrs_of(e)) write_attr(a);
    const auto i = static_cast<event_index>(&e - t_.events.data());
    for (; next_mark_ < marks_.size() && v_.marks[marks_[next_mark_]].event <= i; ++next_mark_)
      if (const event_mark& m = v_.marks[marks_[next_mark_]]; m.event == i)
        write_export_value(arg(m.key), m.value);
    out_.raw("}}");
  }

  static void write_export_value(json_output& out, const export_value& v) {
    if (const auto* i = std::get_if<std::int64_t>(&v))
      out.integer(*i);
    else if (const auto* d = std::get_if<double>(&v))
      out.floating(*d);
    else
      out.string(std::get<std::string>(v));
  }

  void write_counter(const counter_series& c) {
    for (const counter_point& p : c.points) {
      next();
      out_.raw("{\"ph\":\"C\",\"name\":").string(c.track).raw(",\"pid\":").integer(c.process);
      if (c.id >= 0) out_.raw(",\"id\":").integer(c.id);
      out_.raw(",\"ts\":").micros(p.ts - base_).raw(",\"args\":{").string(c.value_name).ch(':');
      if (c.counts)
        out_.integer(static_cast<std::int64_t>(p.value));
      else
        out_.floating(p.value);
      out_.raw("}}");
    }
  }

  void write_view_flow(const export_flow& f) {
    if (f.from >= t_.size() || f.to >= t_.size()) return;
    for (const bool start : {true, false}) {
      const event_t& at = t_.events[start ? f.from : f.to];
      next();
      out_.raw(start ? "{\"ph\":\"s\"" : "{\"ph\":\"f\",\"bp\":\"e\"");
      out_.raw(",\"cat\":").string(f.category).raw(",\"name\":").string(f.category);
      out_.raw(",\"id\":").id(f.id).raw(",\"pid\":");
      key_value(static_cast<std::uint64_t>(at.pid));
      out_.raw(",\"tid\":");
      key_value(at.tid);
      out_.raw(",\"ts\":").micros((start ? f.from_ts : f.to_ts) - base_).raw(",\"args\":{");
      for (std::size_t k = 0; k < f.args.size(); ++k) {
        out_.raw(k ? "," : "").string(f.args[k].first).ch(':');
        write_export_value(out_, f.args[k].second);
      }
      out_.raw("}}");
    }
  }

  json_output& arg(std::string_view key) {
    if (!first_arg_) out_.ch(',');
    first_arg_ = false;
    return out_.string(key).ch(':');
  }

  template <class P>
  void write_fields(const P& f) {
    detail::for_each_payload_arg(f, [this](std::string_view key, const auto& v) {
      using T = std::remove_cvref_t<decltype(v)>;
      if constexpr (std::is_same_v<T, bool>) {
        arg(key).boolean(v);
      } else if constexpr (std::is_integral_v<T>) {
        if constexpr (std::is_signed_v<T>)
          arg(key).integer(v);
        else
          arg(key).id(v);
      } else if constexpr (std::is_floating_point_v<T>) {
        arg(key).floating(v);
      } else if constexpr (std::is_same_v<T, name_id>) {
        arg(key).string(t_.strings.view(v));
      } else if constexpr (std::is_convertible_v<T, std::string_view>) {
        arg(key).string(std::string_view(v));
      } else if constexpr (std::is_enum_v<T>) {
        arg(key).integer(static_cast<std::int64_t>(v));
      }
      // anything else (index ranges, ...) is not an arg
    });
  }

  void write_inputs(const event_t& e) {
    const auto ins = t_.inputs_of(e);
    if (ins.empty()) return;
    const detail::input_args has = detail::input_args_of(ins);
    arg("Input Dims");
    nested(ins, [this](const input_value& v) { int_array(t_.sizes(v)); });
    arg("Input type").ch('[');
    for_each_top(ins, [this](std::size_t, const input_value& v) {
      out_.string(detail::input_type_text(t_, v));
    });
    out_.ch(']');
    if (has.strides) {
      arg("Input Strides");
      nested(ins, [this](const input_value& v) { int_array(t_.strides(v)); });
    }
    if (has.scalars) {
      arg("Concrete Inputs").ch('[');
      for_each_top(ins, [&](std::size_t i, const input_value&) {
        out_.string(detail::concrete_text(ins, i));
      });
      out_.ch(']');
    }
  }

  /// Calls f(index, value) for each top-level input (skipping list elements).
  template <class Inputs, class F>
  void for_each_top(const Inputs& ins, F&& f) {
    bool first = true;
    for (std::size_t i = 0; i < ins.size(); i += ins[i].subtree) {
      if (!first) out_.ch(',');
      first = false;
      f(i, ins[i]);
    }
  }
  void int_array(std::span<const std::int64_t> values) {
    out_.ch('[');
    for (std::size_t k = 0; k < values.size(); ++k) (k ? out_.ch(',') : out_).integer(values[k]);
    out_.ch(']');
  }

  /// Writes the inputs as a JSON array, lists as nested arrays, leaves by `leaf`.
  template <class Inputs, class Leaf>
  void nested(const Inputs& ins, Leaf&& leaf) {
    out_.ch('[');
    walk_nested_inputs(
        ins, [this](const input_value&) { out_.ch('['); }, [this] { out_.ch(']'); },
        [&](const input_value& v) {
          if (v.kind == input_kind::tensor)
            leaf(v);
          else
            out_.raw("[]");
        },
        [this] { out_.ch(','); });
    out_.ch(']');
  }

  void write_attr(const attribute& a) {
    const std::string_view key = t_.strings.view(a.key);
    switch (a.type) {
      case attr_type::integer:
        arg(key).integer(a.i);
        break;
      case attr_type::unsigned_integer:
        arg(key).id(a.u);
        break;
      case attr_type::floating:
        arg(key).floating(a.f);
        break;
      case attr_type::boolean:
        arg(key).boolean(a.b);
        break;
      case attr_type::string:
        arg(key).string(t_.strings.view(a.s));
        break;
      case attr_type::verbatim:  // as a JSON reader kept it
        arg(key).raw(t_.strings.view(a.s));
        break;
      case attr_type::int_list:
        arg(key);
        int_array(t_.int_list(a));
        break;
      case attr_type::string_list: {
        // PyTorch writes stacks joined by ";" and module hierarchies joined by ".".
        const auto l = t_.string_list(a);
        const char* sep = detail::joined_list_separator(key);
        if (sep != nullptr) {
          std::string joined;
          for (std::size_t k = 0; k < l.size(); ++k) {
            if (k) joined += sep;
            joined += t_.strings.view(l[k]);
          }
          arg(key).string(joined);
        } else {
          arg(key).ch('[');
          for (std::size_t k = 0; k < l.size(); ++k)
            (k ? out_.ch(',') : out_).string(t_.strings.view(l[k]));
          out_.ch(']');
        }
        break;
      }
    }
  }

  void flow(char ph, std::string_view cat, std::uint64_t id, const event_t& at) {
    next();
    out_.raw("{\"ph\":\"").ch(ph).raw("\",\"id\":").id(id).raw(",\"pid\":");
    key_value(static_cast<std::uint64_t>(at.pid));
    out_.raw(",\"tid\":");
    key_value(at.tid);
    out_.raw(",\"ts\":").micros(at.start_ns - base_);
    out_.raw(",\"cat\":").string(cat).raw(",\"name\":").string(cat);
    if (ph == 'f') out_.raw(",\"bp\":\"e\"");
    out_.ch('}');
  }

  void write_flows() {
    for (const flow_link& l : t_.links) {
      if (l.kind != flow_kind::fwd_bwd || l.from >= t_.size() || l.to >= t_.size()) continue;
      flow('s', "fwdbwd", l.id, t_.events[l.from]);
      flow('f', "fwdbwd", l.id, t_.events[l.to]);
    }
    for (const auto& e : t_.events)
      if (const auto* d = e.template get_if<event_kind::device_activity>())
        if (d->flow_type == flow_kind::async_cpu_gpu && d->flow_id != 0)
          flow(d->flow_start ? 's' : 'f', "ac2g", d->flow_id, e);
  }

  const view_type& v_;
  const Table& t_;
  json_output& out_;
  std::vector<std::size_t> marks_;  // the view's marks by event
  std::size_t next_mark_ = 0;
  std::int64_t base_ = 0;
  bool first_ = true;
  bool first_arg_ = true;
};

}  // namespace detail

/// Writes `v` as a Chrome trace into `out` (see the header comment).
template <class Schema>
void write_chrome_trace(const basic_export_view<Schema>& v, json_output& out) {
  detail::chrome_writer<basic_event_table<Schema>>(v, out).write();
}
/// Writes `t` (alone) as a Chrome trace into `out`.
template <class Schema>
void write_chrome_trace(const basic_event_table<Schema>& t, json_output& out) {
  write_chrome_trace(basic_export_view<Schema>{t}, out);
}

/// The Chrome trace of `t` as a string.
template <class Schema>
std::string chrome_trace_string(const basic_event_table<Schema>& t) {
  std::string s;
  json_output out = json_output::to_string(s);
  write_chrome_trace(t, out);
  return s;
}

/// Writes the Chrome trace of `v` to `path` (gzip when it ends in ".gz"), through a temporary
/// file renamed into place.
template <class Schema>
void write_chrome_trace_file(const basic_export_view<Schema>& v, const std::string& path) {
  trace_file_sink file(path);
  json_output out(file.as_sink());
  write_chrome_trace(v, out);
  file.commit();
}
/// The same of `t` alone.
template <class Schema>
void write_chrome_trace_file(const basic_event_table<Schema>& t, const std::string& path) {
  write_chrome_trace_file(basic_export_view<Schema>{t}, path);
}

TRACEMODEL_END_NAMESPACE
