// tracemodel — the command-line analyzer of Chrome / Kineto traces.
//
//   tracemodel stats TRACE [--group-by name|shapes|stack]
//                          [--sort self|total|count|device|self-device] [--top N]
//   tracemodel tree TRACE [--depth N]
//   tracemodel links TRACE
//   tracemodel flame TRACE -o FILE.svg [--width PIXELS]
//   tracemodel link --et ET.json --trace TRACE.json -o OUT.json
//   tracemodel patterns TRACE [--framework-prefix P] [--name REGEX] [--no-for-loop]
//   (every command takes --json)
//
// Exit status: 0 on success, 1 for a bad input file (message on stderr naming the file and the
// byte offset), 2 for bad usage.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include <tracemodel/algo/analyze.hpp>
#include <tracemodel/algo/et_link.hpp>
#include <tracemodel/algo/key_averages.hpp>
#include <tracemodel/algo/patterns.hpp>
#include <tracemodel/algo/pytorch_patterns.hpp>
#include <tracemodel/algo/walk.hpp>
#include <tracemodel/formats/chrome_trace_reader.hpp>
#include <tracemodel/formats/device_properties.hpp>
#include <tracemodel/formats/execution_trace.hpp>
#include <tracemodel/formats/execution_trace_writer.hpp>
#include <tracemodel/formats/flame_svg.hpp>
#include <tracemodel/formats/json_output.hpp>
#include <tracemodel/version.hpp>

namespace tmod = tracemodel;

namespace {

constexpr const char* usage_text =
    "usage: tracemodel <command> [options] TRACE\n"
    "\n"
    "commands:\n"
    "  stats   key averages per name (or input shapes, or stack)\n"
    "            --group-by name|shapes|stack   --top N\n"
    "            --sort self|total|count|device|self-device\n"
    "  tree    the call tree of each thread\n"
    "            --depth N                      levels to show (default: all)\n"
    "  links   forward/backward links and host-to-device links\n"
    "  flame   a per-thread flame chart as a standalone SVG\n"
    "            -o FILE.svg (required)         --width PIXELS (default 1600)\n"
    "  link    join an execution trace with its host/device trace (TRACE is --trace)\n"
    "            --et ET.json  --trace TRACE.json  -o OUT.json (the enhanced execution trace)\n"
    "  patterns  PyTorch's anti-patterns (TorchTidy), with the nearest user frame\n"
    "            --framework-prefix P           frames of files under P are not user code\n"
    "                                           (default: torch/)\n"
    "            --name REGEX                   also report events whose name matches REGEX\n"
    "            --no-for-loop                  leave out the for-loop indexing pattern\n"
    "\n"
    "options of every command:\n"
    "  --json  machine-readable output on stdout\n"
    "\n"
    "TRACE is a Chrome trace (PyTorch, Kineto), .json or .json.gz; - reads standard input.\n"
    "Exit status: 0 success, 1 bad input file, 2 bad usage.\n";

struct usage_error {
  std::string message;
};

struct options {
  std::string command;
  std::string trace;
  bool json = false;
  tmod::group_by group = tmod::group_by::name;
  tmod::sort_by sort = tmod::sort_by::total;
  std::size_t top = 0;
  std::optional<std::uint32_t> depth;
  std::string framework_prefix = "torch/";
  std::optional<std::string> name_regex;
  bool for_loop = true;
  std::string output;
  double width = 1600;
  std::string et;
};

std::size_t parse_count(std::string_view flag, const char* value) {
  char* end = nullptr;
  const unsigned long long v = std::strtoull(value, &end, 10);
  if (end == value || *end != '\0' || value[0] == '-')
    throw usage_error{std::string(flag) + " takes a non-negative number"};
  return static_cast<std::size_t>(v);
}

options parse(int argc, char** argv) {
  options o;
  if (argc < 2) throw usage_error{"missing command"};
  o.command = argv[1];
  if (o.command == "-h" || o.command == "--help" || o.command == "help") {
    std::fputs(usage_text, stdout);
    std::exit(0);
  }
  if (o.command == "--version") {
    std::printf("tracemodel %d.%d.%d\n", tmod::version_major, tmod::version_minor,
                tmod::version_patch);
    std::exit(0);
  }
  if (o.command != "stats" && o.command != "tree" && o.command != "links" &&
      o.command != "patterns" && o.command != "flame" && o.command != "link")
    throw usage_error{"unknown command '" + o.command + "'"};
  for (int i = 2; i < argc; ++i) {
    const std::string_view a = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) throw usage_error{std::string(a) + " needs a value"};
      return argv[++i];
    };
    if (a == "--json") {
      o.json = true;
    } else if (a == "--group-by" && o.command == "stats") {
      const std::string_view v = value();
      if (v == "name")
        o.group = tmod::group_by::name;
      else if (v == "shapes")
        o.group = tmod::group_by::shapes;
      else if (v == "stack")
        o.group = tmod::group_by::stack;
      else
        throw usage_error{"--group-by takes name, shapes or stack"};
    } else if (a == "--sort" && o.command == "stats") {
      const std::string_view v = value();
      if (v == "self")
        o.sort = tmod::sort_by::self;
      else if (v == "total")
        o.sort = tmod::sort_by::total;
      else if (v == "count")
        o.sort = tmod::sort_by::count;
      else if (v == "device")
        o.sort = tmod::sort_by::device_total;
      else if (v == "self-device")
        o.sort = tmod::sort_by::self_device;
      else
        throw usage_error{"--sort takes self, total, count, device or self-device"};
    } else if (a == "--top" && o.command == "stats") {
      o.top = parse_count(a, value());
    } else if (a == "--depth" && o.command == "tree") {
      o.depth = static_cast<std::uint32_t>(parse_count(a, value()));
    } else if (a == "--framework-prefix" && o.command == "patterns") {
      o.framework_prefix = value();
    } else if (a == "--name" && o.command == "patterns") {
      o.name_regex = value();
      try {
        const std::regex check(*o.name_regex);
      } catch (const std::regex_error& e) {
        throw usage_error{"--name: not a regular expression: " + std::string(e.what())};
      }
    } else if (a == "--et" && o.command == "link") {
      o.et = value();
    } else if (a == "--trace" && o.command == "link") {
      if (!o.trace.empty()) throw usage_error{"more than one trace given"};
      o.trace = value();
    } else if (a == "-o" && (o.command == "flame" || o.command == "link")) {
      o.output = value();
    } else if (a == "--width" && o.command == "flame") {
      o.width = static_cast<double>(parse_count(a, value()));
      if (o.width < 100 || o.width > 100000)
        throw usage_error{"--width takes 100 to 100000 pixels"};
    } else if (a == "--no-for-loop" && o.command == "patterns") {
      o.for_loop = false;
    } else if (a.starts_with("-") && a != "-") {
      throw usage_error{"unknown option '" + std::string(a) + "' for " + o.command};
    } else if (o.trace.empty()) {
      o.trace = a;
    } else {
      throw usage_error{"more than one trace given"};
    }
  }
  if (o.trace.empty())
    throw usage_error{o.command == "link" ? "link needs --trace TRACE.json" : "missing TRACE"};
  if (o.command == "flame" && o.output.empty()) throw usage_error{"flame needs -o FILE.svg"};
  if (o.command == "link" && (o.et.empty() || o.output.empty()))
    throw usage_error{"link needs --et ET.json, --trace TRACE.json and -o OUT.json"};
  return o;
}

/// Reads the trace, with a progress line for big inputs on a terminal.
tmod::event_table read(const options& o) {
  tmod::read_options ro;
  if (::isatty(STDERR_FILENO)) {
    ro.progress = [last = -1](std::size_t done, std::size_t total) mutable {
      if (total < (std::size_t{100} << 20)) return;
      const int pct =
          static_cast<int>(100.0 * static_cast<double>(done) / static_cast<double>(total));
      if (pct == last) return;
      last = pct;
      std::fprintf(stderr, "\rreading: %3d%%", pct);
      if (pct >= 100) std::fputs("\n", stderr);
    };
  }
  return tmod::read_chrome_trace_file(o.trace == "-" ? "/dev/stdin" : o.trace, ro);
}

/// A thread id as the file wrote it: a number, or a string.
void write_tid(tmod::json_output& out, const tmod::event_table& t, tmod::thread_key tid) {
  if (tmod::event_table::is_string_key(tid))
    out.string(t.key_label(tid));
  else
    out.integer(static_cast<std::int64_t>(tid));
}
std::string tid_text(const tmod::event_table& t, std::uint64_t k) {
  return tmod::event_table::is_string_key(k) ? std::string(t.key_label(k))
                                             : std::to_string(static_cast<std::int64_t>(k));
}

int cmd_stats(const options& o, tmod::event_table& t) {
  tmod::analyze(t);
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
  tmod::analyze(t);
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

int cmd_flame(const options& o, tmod::event_table& t) {
  tmod::analyze(t);
  tmod::flame_options fo;
  fo.width = o.width;
  fo.title = o.trace.substr(o.trace.find_last_of('/') + 1);
  try {
    tmod::write_flame_svg_file(t, o.output, fo);
  } catch (const std::runtime_error& e) {
    std::fprintf(stderr, "tracemodel: %s\n", e.what());
    return 1;
  }
  if (o.json) {
    std::printf("{\"output\":\"%s\",\"events\":%zu}\n", o.output.c_str(), t.size());
  } else {
    std::printf("wrote %s (%zu events)\n", o.output.c_str(), t.size());
  }
  return 0;
}

int cmd_link(const options& o, tmod::event_table& t) {
  tmod::execution_trace et;
  try {
    et = tmod::read_execution_trace_file(o.et);
  } catch (const tmod::input_error& e) {
    std::fprintf(stderr, "tracemodel: %s: %s\n", o.et.c_str(), e.what());
    return 1;
  }
  tmod::analyze(t);
  const tmod::et_link_result r = tmod::link_execution_trace(et, t);
  {
    std::FILE* f = std::fopen(o.output.c_str(), "wb");
    const std::string plus = tmod::enhanced_execution_trace(et, t, r);
    if (f == nullptr || std::fwrite(plus.data(), 1, plus.size(), f) != plus.size()) {
      if (f != nullptr) std::fclose(f);
      std::fprintf(stderr, "tracemodel: cannot write %s\n", o.output.c_str());
      return 1;
    }
    std::fclose(f);
  }
  if (!o.json) {
    std::printf("matched %zu of %zu execution-trace ops by %s%s\n", r.matched, r.op_nodes,
                r.method.c_str(),
                r.iteration == tmod::no_event ? ""
                : r.iterations == 1           ? (" in " + std::string(t.name(r.iteration))).c_str()
                                    : (" in " + std::to_string(r.iterations) + " iterations from " +
                                       std::string(t.name(r.iteration)))
                                          .c_str());
    for (const auto& u : r.unmatched)
      std::printf("  unmatched node %lld %s: %s\n", static_cast<long long>(et.nodes[u.node].id),
                  et.nodes[u.node].name.c_str(), u.reason.c_str());
    std::printf(
        "device ops: %zu attached (%zu by correlation, %zu by external id, %zu by interval), %zu "
        "orphaned\n",
        r.device_ops.size(), r.by[0], r.by[1], r.by[2], r.orphaned);
    std::printf("wrote %s\n", o.output.c_str());
    return 0;
  }
  std::string s;
  tmod::json_output out = tmod::json_output::to_string(s);
  out.raw("{\"method\":").string(r.method).raw(",\"op_nodes\":").unsigned_integer(r.op_nodes);
  out.raw(",\"matched\":").unsigned_integer(r.matched).raw(",\"unmatched\":[");
  for (std::size_t k = 0; k < r.unmatched.size(); ++k) {
    const auto& n = et.nodes[r.unmatched[k].node];
    out.raw(k ? "," : "").raw("{\"id\":").integer(n.id).raw(",\"name\":").string(n.name);
    out.raw(",\"reason\":").string(r.unmatched[k].reason).ch('}');
  }
  out.raw("],\"matches\":[");
  bool first = true;
  for (std::size_t k = 0; k < et.nodes.size(); ++k) {
    if (r.node_host[k] == tmod::no_event) continue;
    const auto& e = t.events[r.node_host[k]];
    out.raw(first ? "\n" : ",\n")
        .raw("{\"id\":")
        .integer(et.nodes[k].id)
        .raw(",\"name\":")
        .string(t.name(e));
    out.raw(",\"tid\":");
    write_tid(out, t, e.tid);
    out.raw(",\"ts_ns\":").integer(e.start_ns).ch('}');
    first = false;
  }
  out.raw("],\"device_ops\":{\"total\":").unsigned_integer(r.device_total);
  out.raw(",\"attached\":").unsigned_integer(r.device_ops.size());
  out.raw(",\"by_correlation\":")
      .unsigned_integer(r.by[0])
      .raw(",\"by_external_id\":")
      .unsigned_integer(r.by[1]);
  out.raw(",\"by_interval\":")
      .unsigned_integer(r.by[2])
      .raw(",\"orphaned\":")
      .unsigned_integer(r.orphaned);
  out.raw("},\"output\":").string(o.output).raw("}\n");
  out.flush();
  std::fputs(s.c_str(), stdout);
  return 0;
}

int cmd_patterns(const options& o, tmod::event_table& t) {
  tmod::analyze(t);
  tmod::pattern_context ctx = tmod::context_of(t, tmod::device_properties(t));
  ctx.framework_prefix = o.framework_prefix;
  auto builtin = tmod::pytorch_patterns({.for_loop_indexing = o.for_loop});
  auto by_name = tmod::name_pattern(o.name_regex.value_or(""));
  by_name.enabled = o.name_regex.has_value();
  const tmod::tree_view view(t);
  auto results = std::apply(
      [&](auto&... p) { return tmod::find_patterns(view, ctx, p..., by_name); }, builtin);
  if (!o.name_regex) results.pop_back();
  if (!o.json) {
    std::fputs(tmod::format_pattern_report(results).c_str(), stdout);
    return 0;
  }
  std::string s;
  tmod::json_output out = tmod::json_output::to_string(s);
  out.raw("{\"patterns\":[");
  for (std::size_t k = 0; k < results.size(); ++k) {
    const auto& r = results[k];
    out.raw(k ? ",\n" : "\n").raw("{\"name\":").string(r.name);
    if (r.skipped) {
      out.raw(",\"skipped\":").string(*r.skipped).ch('}');
      continue;
    }
    out.raw(",\"matches\":[");
    for (std::size_t m = 0; m < r.matches.size(); ++m) {
      const auto& e = t.events[r.matches[m]];
      out.raw(m ? ",\n" : "\n").raw("{\"name\":").string(t.name(e)).raw(",\"tid\":");
      write_tid(out, t, e.tid);
      out.raw(",\"ts_ns\":")
          .integer(e.start_ns)
          .raw(",\"location\":")
          .string(tmod::location_of(view, r, m))
          .ch('}');
    }
    out.raw("]}");
  }
  out.raw("\n]}\n");
  out.flush();
  std::fputs(s.c_str(), stdout);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  options o;
  try {
    o = parse(argc, argv);
  } catch (const usage_error& e) {
    std::fprintf(stderr, "tracemodel: %s\n\n%s", e.message.c_str(), usage_text);
    return 2;
  }
  try {
    tmod::event_table t = read(o);
    if (o.command == "stats") return cmd_stats(o, t);
    if (o.command == "tree") return cmd_tree(o, t);
    if (o.command == "patterns") return cmd_patterns(o, t);
    if (o.command == "flame") return cmd_flame(o, t);
    if (o.command == "link") return cmd_link(o, t);
    return cmd_links(o, t);
  } catch (const tmod::input_error& e) {
    if (e.offset() != tmod::input_error::npos)
      std::fprintf(stderr, "tracemodel: %s: byte %zu: %s\n", o.trace.c_str(), e.offset(), e.what());
    else
      std::fprintf(stderr, "tracemodel: %s: %s\n", o.trace.c_str(), e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tracemodel: %s: %s\n", o.trace.c_str(), e.what());
    return 1;
  }
}
