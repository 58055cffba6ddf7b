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
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <tracemodel/algo/analyze.hpp>
#include <tracemodel/algo/critical_path.hpp>
#include <tracemodel/algo/et_link.hpp>
#include <tracemodel/algo/flows.hpp>
#include <tracemodel/algo/fwd_bwd.hpp>
#include <tracemodel/algo/key_averages.hpp>
#include <tracemodel/formats/chrome_trace_reader.hpp>
#include <tracemodel/formats/execution_trace.hpp>
#include <tracemodel/formats/execution_trace_writer.hpp>
#include <tracemodel/formats/flame_svg.hpp>
#include <tracemodel/formats/json_output.hpp>
#include <tracemodel/memory.hpp>
#include <tracemodel/version.hpp>

#include "cli.hpp"
#include "report_html.hpp"

using namespace tracemodel_cli;

// cli.hpp's options start with these (it declares the enumerations only).
static_assert(tmod::group_by{} == tmod::group_by::name && tmod::sort_by{} == tmod::sort_by::total);

// The commands that write a file.
namespace tracemodel_cli {

int cmd_flame(const options& o, tmod::event_table& t) {
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
    std::string s;
    tmod::json_output out = tmod::json_output::to_string(s);
    out.ch('{');
    write_repairs(out, t.anomalies);
    out.raw(",\"output\":").string(o.output).raw(",\"events\":").unsigned_integer(t.size());
    out.raw("}\n");
    out.flush();
    std::fputs(s.c_str(), stdout);
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
  out.ch('{');
  write_repairs(out, t.anomalies);
  out.raw(",\"method\":").string(r.method).raw(",\"op_nodes\":").unsigned_integer(r.op_nodes);
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
  out.ch('{');
  write_repairs(out, t.anomalies);
  out.raw(",\"links\":[");
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

int cmd_report(const options& o) {
  std::mutex m;
  std::map<std::int64_t, std::string> cpu;  // the stats table of each rank
  std::map<std::int64_t, critical_path_summary> cps;
  tmod::gpu_report_options go;
  go.hta = o.hta;
  go.each_rank = [&](std::int64_t rank, tmod::event_table& t) {
    tmod::analyze(t);
    std::string text = tmod::format_key_averages(tmod::key_averages(t), 15);
    // The critical path of the rank's first profiler step (of the whole trace without one).
    tmod::critical_path_options co;
    co.annotation = "ProfilerStep";
    tmod::critical_path cp = critical_path_by(o, t, co);
    if (!cp.window) cp = critical_path_by(o, t, {});
    critical_path_summary c;
    c.rank = rank;
    c.window = "the whole trace";
    if (cp.window)  // (HTA's window is in whole microseconds)
      for (const auto& e : t.events)
        if (e.start_ns > cp.window->first - 1000 && e.start_ns < cp.window->first + 1000 &&
            t.name(e).find("ProfilerStep") != std::string_view::npos) {
          c.window = std::string(t.name(e));
          break;
        }
    c.nodes = cp.nodes.size();
    c.edges = cp.edges.size();
    c.events = cp.events.size();
    c.length = cp.length;
    c.bound_by = cp.bound_by;
    for (const auto& [i, ns] : tmod::top_events(cp, 5)) c.top.emplace_back(t.name(i), ns);
    const std::lock_guard lock(m);
    cpu[rank] = std::move(text);
    cps[rank] = std::move(c);
  };
  const tmod::gpu_report rep = gpu_report_of(o, go);
  const std::string title =
      "tracemodel report: " + (o.traces.size() == 1
                                   ? o.traces[0].substr(o.traces[0].find_last_of('/') + 1)
                                   : std::to_string(rep.ranks.size()) + " ranks");
  std::vector<critical_path_summary> paths;
  for (auto& [rank, c] : cps) paths.push_back(std::move(c));
  std::string json = gpu_json(o, rep);  // with the critical paths beside the device analyses
  json.resize(json.rfind('}'));
  json += ",\n\"critical_path\":" + critical_path_rows(paths) + "}\n";
  const std::string page =
      gpu_report_page(rep, json, cpu.empty() ? "" : cpu.begin()->second, title, paths);
  if (!write_page(o.output, page)) return 1;
  std::printf("wrote %s (%zu ranks)\n", o.output.c_str(), rep.ranks.size());
  return 0;
}

}  // namespace tracemodel_cli

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
    "  gpu     device time per rank: idle, compute and non-compute time, kernel types and\n"
    "          their overlaps, communication hidden behind computation (TRACE...: files of\n"
    "          one rank each, or folders of them)\n"
    "            --hta                          Holistic Trace Analysis's rules and columns\n"
    "            --counters DIR                 write each rank's trace with its queue length\n"
    "                                           and memory bandwidth as counter tracks\n"
    "  report  gpu's analyses and the first rank's key averages as one HTML page\n"
    "            -o FILE.html (required)        --hta\n"
    "  diff    what changed from one run to another, per name of op and kernel: counts,\n"
    "          total times and their change (CONTROL TEST: a file or a folder of ranks each)\n"
    "            --iteration N                  the step ProfilerStep#N on both sides\n"
    "                                           (default: every event; --hta: the first step)\n"
    "            --device cpu|gpu|all           the side the text shows (default: all)\n"
    "            --rank R                       rank R of both sides (default: every rank\n"
    "                                           summed; --hta: the first rank)\n"
    "            --short-names                  names shortened as HTA's use_short_name\n"
    "            --top K                        rows of each list shown (default: 10)\n"
    "            --hta                          Holistic Trace Analysis's rules and columns\n"
    "            -o FILE.html                   a page: both runs' device time side by side\n"
    "                                           and the largest changes\n"
    "  critical-path  the longest chain of dependent host ops, launches and device work,\n"
    "          and what its time is spent on (cpu_bound, gpu_compute_bound, ...)\n"
    "            --annotation NAME              the window: an event whose name contains NAME\n"
    "                                           (default: the whole trace)\n"
    "            --instance N                   its N-th occurrence, from 0 (default: 0)\n"
    "            --rank R                       rank R's file (TRACE: a folder of ranks;\n"
    "                                           default: the first rank)\n"
    "            --top K                        events shown (default: 10)\n"
    "            --hta                          Holistic Trace Analysis's rules (its times in\n"
    "                                           us, its graph, its ties)\n"
    "            -o OVERLAID.json               the trace with the path drawn on it: its events\n"
    "                                           marked args.critical, its edges as flows\n"
    "\n"
    "options of every command:\n"
    "  --json  machine-readable output on stdout\n"
    "\n"
    "TRACE is a Chrome trace (PyTorch, Kineto), .json or .json.gz; - reads standard input.\n"
    "Exit status: 0 success, 1 bad input file, 2 bad usage.\n";

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
      o.command != "patterns" && o.command != "flame" && o.command != "link" &&
      o.command != "gpu" && o.command != "report" && o.command != "diff" &&
      o.command != "critical-path")
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
    } else if (a == "--annotation" && o.command == "critical-path") {
      o.annotation = value();
    } else if (a == "--instance" && o.command == "critical-path") {
      o.instance = parse_count(a, value());
    } else if (a == "--top" &&
               (o.command == "stats" || o.command == "diff" || o.command == "critical-path")) {
      o.top = parse_count(a, value());
    } else if (a == "--iteration" && o.command == "diff") {
      o.iteration = static_cast<std::int64_t>(parse_count(a, value()));
    } else if (a == "--rank" && (o.command == "diff" || o.command == "critical-path")) {
      o.rank = static_cast<std::int64_t>(parse_count(a, value()));
    } else if (a == "--short-names" && o.command == "diff") {
      o.short_names = true;
    } else if (a == "--device" && o.command == "diff") {
      const std::string_view v = value();
      if (v == "cpu")
        o.device = 0;
      else if (v == "gpu")
        o.device = 1;
      else if (v == "all")
        o.device = 2;
      else
        throw usage_error{"--device takes cpu, gpu or all"};
    } else if (a == "--depth" && o.command == "tree") {
      o.depth = static_cast<std::uint32_t>(parse_count(a, value()));
    } else if (a == "--framework-prefix" && o.command == "patterns") {
      o.framework_prefix = value();
    } else if (a == "--name" && o.command == "patterns") {
      o.name_regex = value();
      if (const std::string error = regex_error_of(*o.name_regex); !error.empty())
        throw usage_error{"--name: not a regular expression: " + error};
    } else if (a == "--et" && o.command == "link") {
      o.et = value();
    } else if (a == "--trace" && o.command == "link") {
      if (!o.trace.empty()) throw usage_error{"more than one trace given"};
      o.trace = value();
    } else if (a == "-o" && (o.command == "flame" || o.command == "link" || o.command == "report" ||
                             o.command == "diff" || o.command == "critical-path")) {
      o.output = value();
    } else if (a == "--width" && o.command == "flame") {
      o.width = static_cast<double>(parse_count(a, value()));
      if (o.width < 100 || o.width > 100000)
        throw usage_error{"--width takes 100 to 100000 pixels"};
    } else if (a == "--no-for-loop" && o.command == "patterns") {
      o.for_loop = false;
    } else if (a == "--counters" && o.command == "gpu") {
      o.counters = value();
    } else if (a == "--hta" && (o.command == "gpu" || o.command == "report" ||
                                o.command == "diff" || o.command == "critical-path")) {
      o.hta = true;
    } else if ((o.command == "gpu" || o.command == "report" || o.command == "diff") &&
               (!a.starts_with("-") || a == "-")) {
      o.traces.emplace_back(a);
      if (o.trace.empty()) o.trace = a;
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
  if (o.command == "report" && o.output.empty()) throw usage_error{"report needs -o FILE.html"};
  if (o.command == "diff" && o.traces.size() != 2)
    throw usage_error{"diff needs two traces: CONTROL TEST"};
  if (o.command == "link" && (o.et.empty() || o.output.empty()))
    throw usage_error{"link needs --et ET.json, --trace TRACE.json and -o OUT.json"};
  return o;
}

/// Reads the trace, with a progress line for big inputs on a terminal.
tmod::event_table read(const options& o) {
  tmod::read_options ro;
  ro.keep_file_order = o.hta;  // HTA's frame is in file order
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

}  // namespace

int main(int argc, char** argv) {
  tmod::program_memory_cache();  // freed arrays kept for the next rank's read (memory.hpp)
  options o;
  try {
    o = parse(argc, argv);
  } catch (const usage_error& e) {
    std::fprintf(stderr, "tracemodel: %s\n\n%s", e.message.c_str(), usage_text);
    return 2;
  }
  try {
    if (o.command == "gpu") return cmd_gpu(o);
    if (o.command == "report") return cmd_report(o);
    if (o.command == "diff") return cmd_diff(o);
    if (o.command == "critical-path" && (o.rank || std::filesystem::is_directory(o.trace)))
      return cmd_critical_path_of_rank(o);
    tmod::event_table t = read(o);
    if (o.command != "links") tmod::analyze(t);  // one unit instantiates the analysis
    const int status = o.command == "stats"           ? cmd_stats(o, t)
                       : o.command == "tree"          ? cmd_tree(o, t)
                       : o.command == "patterns"      ? cmd_patterns(o, t)
                       : o.command == "flame"         ? cmd_flame(o, t)
                       : o.command == "link"          ? cmd_link(o, t)
                       : o.command == "critical-path" ? cmd_critical_path(o, t)
                                                      : cmd_links(o, t);
    report_repairs(o.trace, t.anomalies);  // what reading and the analysis repaired
    return status;
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
