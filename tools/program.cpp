// The command registry and the command line (program.hpp).
#include "program.hpp"

#include <algorithm>
#include <cstdlib>

namespace tracemodel_cli {

namespace {
std::vector<command>& registry() {
  static std::vector<command> all;
  return all;
}
}  // namespace

registrar::registrar(const command& c) { registry().push_back(c); }

std::vector<command> commands() {
  std::vector<command> all = registry();
  std::sort(all.begin(), all.end(),
            [](const command& a, const command& b) { return a.order < b.order; });
  return all;
}

std::string usage_text() {
  std::string s = "usage: tracemodel <command> [options] TRACE\n\ncommands:\n";
  for (const command& c : commands()) s += c.help;
  s += "\n"
       "options of every command:\n"
       "  --json  machine-readable output on stdout\n"
       "\n"
       "TRACE is a Chrome trace (PyTorch, Kineto) or a Perfetto trace, told apart by content\n"
       "(.json, .pftrace, gzip or not); - reads standard input.\n"
       "Exit status: 0 success, 1 bad input file, 2 bad usage.\n";
  return s;
}

std::size_t parse_count(std::string_view flag, const std::string& value) {
  char* end = nullptr;
  const unsigned long long v = std::strtoull(value.c_str(), &end, 10);
  if (end == value.c_str() || *end != '\0' || value[0] == '-')
    throw usage_error{std::string(flag) + " takes a non-negative number"};
  return static_cast<std::size_t>(v);
}

void arguments::flag(std::string_view name, bool& to) {
  options_.push_back({std::string(name), false, [&to](const std::string&) { to = true; }});
}
void arguments::value(std::string_view name, std::function<void(const std::string&)> set) {
  options_.push_back({std::string(name), true, std::move(set)});
}
void arguments::text(std::string_view name, std::string& to) {
  value(name, [&to](const std::string& v) { to = v; });
}
void arguments::count(std::string_view name, std::size_t& to) {
  value(name, [&to, n = std::string(name)](const std::string& v) { to = parse_count(n, v); });
}

void arguments::parse() {
  for (std::size_t i = 0; i < args_.size(); ++i) {
    const std::string& a = args_[i];
    if (a == "--json") {
      json = true;
      continue;
    }
    const auto o = std::find_if(options_.begin(), options_.end(),
                                [&](const option& x) { return x.name == a; });
    if (o != options_.end()) {
      if (!o->takes_value) {
        o->set({});
        continue;
      }
      if (i + 1 >= args_.size()) throw usage_error{a + " needs a value"};
      o->set(args_[++i]);
      continue;
    }
    if (a.starts_with("-") && a != "-")
      throw usage_error{"unknown option '" + a + "' for " + command_};
    if (positional.size() == most_traces) throw usage_error{"more than one trace given"};
    positional.push_back(a);
    if (subject.empty()) subject = a;
  }
}

const std::string& arguments::one_trace() const {
  if (positional.empty()) throw usage_error{"missing TRACE"};
  if (positional.size() > 1) throw usage_error{"more than one trace given"};
  return positional.front();
}

}  // namespace tracemodel_cli
