// Test support: a minimal loader of Kineto traces into an event table, for the algorithm tests
// (the real reader is formats/chrome_trace_reader.hpp). Complete events only; flow records are
// returned separately, bound to the events they point at, so tests can compare what the
// linkers derive with what the file states.
#pragma once

#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include <tracemodel/model/table.hpp>

#include "json.hpp"

namespace tmtest {

struct file_flow {
  std::string cat;
  char ph = 0;
  std::uint64_t id = 0;
  tracemodel::event_index event = tracemodel::no_event;  ///< the event it binds to
};

struct loaded_trace {
  tracemodel::event_table table;
  std::vector<file_flow> flows;
};

inline loaded_trace load_kineto(const std::string& path) {
  using namespace tracemodel;
  json_doc doc(path);
  loaded_trace out;
  event_table& t = out.table;
  std::int64_t base = 0;
  if (auto b = doc.root["baseTimeNanoseconds"]; !b.error()) base = int64_t(b.value());
  auto key = [&t](simdjson::dom::element v) -> std::uint64_t {
    if (v.is_string()) return t.string_key(std::string_view(v));
    if (v.is_int64()) return static_cast<std::uint64_t>(int64_t(v));
    return uint64_t(v);
  };
  auto ns = [base](simdjson::dom::element ts) {
    return base + static_cast<std::int64_t>(std::llround(double(ts) * 1000.0));
  };
  auto num = [](simdjson::dom::element args, const char* k) -> std::int64_t {
    auto v = args[k];
    if (v.error()) return -1;
    if (v.is_int64()) return int64_t(v.value());
    if (v.is_uint64()) return static_cast<std::int64_t>(uint64_t(v.value()));
    return static_cast<std::int64_t>(double(v.value()));
  };
  std::map<std::tuple<std::uint64_t, std::uint64_t, std::int64_t>, std::vector<event_index>> at;
  struct raw_flow {
    file_flow f;
    std::uint64_t pid, tid;
    std::int64_t ts;
  };
  std::vector<raw_flow> raw;
  for (simdjson::dom::element e : simdjson::dom::array(doc.root["traceEvents"])) {
    const std::string_view ph = e["ph"];
    if (ph == "s" || ph == "f") {
      raw.push_back({{std::string(std::string_view(e["cat"])), ph[0], uint64_t(e["id"])},
                     key(e["pid"]),
                     key(e["tid"]),
                     ns(e["ts"])});
      continue;
    }
    if (ph != "X") continue;
    const std::string_view cat = e["cat"];
    const std::string_view name = e["name"];
    auto& ev = t.events.emplace_back();
    ev.pid = static_cast<process_key>(key(e["pid"]));
    ev.tid = key(e["tid"]);
    ev.start_ns = ns(e["ts"]);
    const std::int64_t end =
        ev.start_ns + static_cast<std::int64_t>(std::llround(double(e["dur"]) * 1000.0));
    simdjson::dom::element args;
    const bool has_args = !e["args"].get(args);
    const activity_type a = activity_type_from(cat);
    if (a == activity_type::cpu_op || a == activity_type::user_annotation) {
      auto& f = ev.fields.emplace<default_schema::index_of<event_kind::op>>();
      f.name = t.strings.intern(name);
      f.end_ns = end;
      f.scope = a == activity_type::user_annotation ? op_scope::user_scope : op_scope::function;
      if (has_args) {
        const std::int64_t ext = num(args, "External id");
        f.correlation_id = ext > 0 ? static_cast<std::uint64_t>(ext) : 0;
        f.sequence_number = num(args, "Sequence number");
        const std::int64_t fwd = num(args, "Fwd thread id");
        f.fwd_thread_id = fwd > 0 ? static_cast<std::uint64_t>(fwd) : 0;
      }
    } else if (a == activity_type::python_function) {
      auto& f = ev.fields.emplace<default_schema::index_of<event_kind::script_call>>();
      f.name = t.strings.intern(name);
      f.end_ns = end;
    } else {
      auto& f = ev.fields.emplace<default_schema::index_of<event_kind::device_activity>>();
      f.name = t.strings.intern(name);
      f.category = t.strings.intern(cat);
      f.activity = a;
      f.end_ns = end;
      if (has_args) {
        const std::int64_t c = num(args, "correlation");
        const std::int64_t ext = num(args, "External id");
        f.correlation_id = c > 0 ? static_cast<std::uint64_t>(c) : 0;
        f.external_id = ext > 0 ? static_cast<std::uint64_t>(ext) : 0;
      }
    }
    at[{static_cast<std::uint64_t>(ev.pid), ev.tid, ev.start_ns}].push_back(
        static_cast<event_index>(t.events.size() - 1));
  }
  // Bind flow records: starts to runtime calls or ops, ends to device activities or ops, at
  // the same pid, tid and start time (Kineto puts a flow's ts at its slice's start).
  for (raw_flow& r : raw) {
    auto it = at.find({r.pid, r.tid, r.ts});
    if (it == at.end()) continue;
    // Several candidates (zero-length calls at one time stamp): Kineto's ac2g id is the
    // correlation id, so it decides between them.
    for (event_index i : it->second) {
      const auto& ev = t.events[i];
      const auto* d = ev.get_if<event_kind::device_activity>();
      const bool ok = r.f.cat == "fwdbwd" ? ev.is<event_kind::op>()
                      : r.f.ph == 's'     ? d != nullptr && is_runtime_call(d->activity)
                                          : d != nullptr && is_device_side(d->activity);
      if (!ok) continue;
      if (r.f.event == no_event || (d != nullptr && d->correlation_id == r.f.id)) r.f.event = i;
    }
    // Also record the flow on the event, as a reader would.
    if (r.f.event != no_event && r.f.cat != "fwdbwd")
      if (auto* d = t.events[r.f.event].get_if<event_kind::device_activity>()) {
        d->flow_id = r.f.id;
        d->flow_type = flow_kind::async_cpu_gpu;
        d->flow_start = r.f.ph == 's';
      }
    out.flows.push_back(r.f);
  }
  return out;
}

}  // namespace tmtest
