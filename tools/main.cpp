// tracemodel — the command-line analyzer of Chrome / Kineto traces. Each command is a file of
// commands/ that registers itself (program.hpp); this one finds the command and runs it.
//
// Exit status: 0 on success, 1 for a bad input file (message on stderr naming the file and the
// byte offset), 2 for bad usage.
#include <algorithm>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include <tracemodel/memory.hpp>
#include <tracemodel/model/table.hpp>
#include <tracemodel/version.hpp>

#include "program.hpp"

int main(int argc, char** argv) {
  using namespace tracemodel_cli;
  tracemodel::program_memory_cache();  // freed arrays kept for the next rank's read (memory.hpp)
  const std::string name = argc >= 2 ? argv[1] : "";
  if (name == "-h" || name == "--help" || name == "help") {
    std::fputs(usage_text().c_str(), stdout);
    return 0;
  }
  if (name == "--version") {
    std::printf("tracemodel %d.%d.%d\n", tracemodel::version_major, tracemodel::version_minor,
                tracemodel::version_patch);
    return 0;
  }
  arguments args(name, std::vector<std::string>(argv + std::min(argc, 2), argv + argc));
  try {
    if (argc < 2) throw usage_error{"missing command"};
    for (const command& c : commands())
      if (c.name == name) return c.run(args);
    throw usage_error{"unknown command '" + name + "'"};
  } catch (const usage_error& e) {
    std::fprintf(stderr, "tracemodel: %s\n\n%s", e.message.c_str(), usage_text().c_str());
    return 2;
  } catch (const tracemodel::input_error& e) {
    if (e.offset() != tracemodel::input_error::npos)
      std::fprintf(stderr, "tracemodel: %s: byte %zu: %s\n", args.subject.c_str(), e.offset(),
                   e.what());
    else
      std::fprintf(stderr, "tracemodel: %s: %s\n", args.subject.c_str(), e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tracemodel: %s: %s\n", args.subject.c_str(), e.what());
    return 1;
  }
}
