// tracemodel stats, tree and links.
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include <tracemodel/algo/flows.hpp>
#include <tracemodel/algo/fwd_bwd.hpp>
#include <tracemodel/algo/key_averages.hpp>
#include <tracemodel/algo/walk.hpp>
#include <tracemodel/formats/json_output.hpp>

#include "cli.hpp"

namespace tracemodel_cli {

namespace {
/// A thread id as the file wrote it, as text.
std::string tid_text(const tmod::event_table& t, std::uint64_t k) {
  return tmod::event_table::is_string_key(k) ? std::string(t.key_label(k))
                                             : std::to_string(static_cast<std::int64_t>(k));
}
}  // namespace

int cmd_stats(const options& o, tmod::event_table& t) {
  const auto rows = tmod::key_averages(t, {.group = o.group, .sort = o.sort});
  if (!o.json) {
    std::fputs(tmod::format_key_averages(rows, o.top).c_str(), stdout);
    return 0;
  }
  std::string s;
  tmod::json_output out = tmod::json_output::to_string(s);
  out.raw("{\"rows\":[");
  const std::size_t n = o.top == 0 || o.top > rows.size() ? rows.size() : o.top;
  for (std::size_t i = 0; i < n; ++i) {
    const auto& r = rows[i];
    out.raw(i ? ",\n" : "\n").raw("{\"key\":").string(r.key()).raw(",\"count\":");
    out.unsigned_integer(r.count).raw(",\"total_ns\":").integer(r.total_ns);
    out.raw(",\"self_ns\":").integer(r.self_ns);
    out.raw(",\"device_total_ns\":").integer(r.device_total_ns);
    out.raw(",\"self_device_ns\":").integer(r.self_device_ns);
    out.raw(",\"on_device\":").raw(r.device_activities ? "true" : "false").ch('}');
  }
  out.raw("\n]}\n");
  out.flush();
  std::fputs(s.c_str(), stdout);
  return 0;
}

int cmd_tree(const options& o, tmod::event_table& t) {
  if (o.json) {
    std::string s;
    tmod::json_output out = tmod::json_output::to_string(s);
    out.raw("{\"events\":[");
    for (std::size_t i = 0; i < t.size(); ++i) {
      const auto& e = t.events[i];
      const std::int64_t end = e.end_ns();
      out.raw(i ? ",\n" : "\n")
          .raw("{\"id\":")
          .unsigned_integer(i)
          .raw(",\"name\":")
          .string(t.name(e));
      out.raw(",\"kind\":")
          .string(tmod::default_schema::kind_names[e.fields.index()])
          .raw(",\"tid\":");
      write_tid(out, t, e.tid);
      out.raw(",\"ts_ns\":").integer(e.start_ns).raw(",\"dur_ns\":");
      out.integer(end == tmod::no_end_ns || end < e.start_ns ? 0 : end - e.start_ns)
          .raw(",\"parent\":");
      if (e.parent == tmod::no_event)
        out.raw("null");
      else
        out.unsigned_integer(e.parent);
      out.ch('}');
      if (s.size() > (1 << 20)) {
        out.flush();
        std::fputs(s.c_str(), stdout);
        s.clear();
      }
    }
    out.raw("\n]}\n");
    out.flush();
    std::fputs(s.c_str(), stdout);
    return 0;
  }
  // Text: roots grouped by thread, in order of first appearance.
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
    tmod::walk_preorder(t, by_thread[key], [&](tmod::event_index i, std::uint32_t depth) {
      if (o.depth && depth >= *o.depth) return false;
      const auto& e = t.events[i];
      std::printf("%*s%s  %s\n", static_cast<int>(2 * depth + 2), "",
                  std::string(t.name(e)).c_str(), tmod::format_duration(e.duration_ns()).c_str());
      return true;
    });
  }
  return 0;
}

int cmd_links(const options& o, tmod::event_table& t) {
  // Derived from the events' args by the library's linkers, not copied from the file's flows.
  tmod::link_forward_backward(t);
  tmod::link_device_activities(t, tmod::correlation_device_links{});
  // Host-to-device pairs: a runtime or driver call and what it launched (by correlation id).
  std::vector<tmod::flow_link> fwd, dev;
  for (const tmod::flow_link& l : t.links) {
    if (l.kind == tmod::flow_kind::fwd_bwd)
      fwd.push_back(l);
    else if (t.events[l.to].link == tmod::parent_link::correlation)
      dev.push_back(l);
  }
  auto endpoint = [&t](tmod::json_output& out, tmod::event_index i) {
    const auto& e = t.events[i];
    out.raw("{\"name\":").string(t.name(e)).raw(",\"tid\":");
    write_tid(out, t, e.tid);
    out.raw(",\"ts_ns\":").integer(e.start_ns).ch('}');
  };
  if (!o.json) {
    std::printf("%zu forward/backward links, %zu host-to-device links\n", fwd.size(), dev.size());
    for (const auto& l : fwd)
      std::printf("  fwdbwd %3llu  %s -> %s\n", static_cast<unsigned long long>(l.id),
                  std::string(t.name(l.from)).c_str(), std::string(t.name(l.to)).c_str());
    for (const auto& l : dev)
      std::printf("  ac2g %6llu  %s -> %s\n", static_cast<unsigned long long>(l.id),
                  std::string(t.name(l.from)).c_str(), std::string(t.name(l.to)).c_str());
    return 0;
  }
  std::string s;
  tmod::json_output out = tmod::json_output::to_string(s);
  out.raw("{\"links\":[");
  bool first = true;
  auto link = [&](const char* type, const tmod::flow_link& l) {
    out.raw(first ? "\n" : ",\n").raw("{\"type\":\"").raw(type).raw("\",\"id\":").id(l.id);
    first = false;
    out.raw(",\"from\":");
    endpoint(out, l.from);
    out.raw(",\"to\":");
    endpoint(out, l.to);
    out.ch('}');
  };
  for (const auto& l : fwd) link("fwdbwd", l);
  for (const auto& l : dev) link("ac2g", l);
  out.raw("\n]}\n");
  out.flush();
  std::fputs(s.c_str(), stdout);
  return 0;
}

}  // namespace tracemodel_cli
