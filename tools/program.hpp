// The `tracemodel` program's frame: its commands, each registered by its own file
// (commands/NAME.cpp) with its name, its lines of `--help`, its place among them and what runs
// it; and the command line each one reads.
#pragma once

#include <cstddef>
#include <functional>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tracemodel_cli {

/// Bad usage: the message, then the help, on stderr; exit status 2.
struct usage_error {
  std::string message;
};

/// The command line after the command's name. A command says which options it takes, then
/// `parse()` reads them in order: an option it did not name is a usage error, `--json` is every
/// command's, and what is no option (or is `-`) goes to `positional`.
class arguments {
 public:
  arguments(std::string command, std::vector<std::string> args)
      : command_(std::move(command)), args_(std::move(args)) {}

  [[nodiscard]] const std::string& command() const { return command_; }

  /// An option without a value.
  void flag(std::string_view name, bool& to);
  /// An option with a value, handed to `set` (which may throw usage_error).
  void value(std::string_view name, std::function<void(const std::string&)> set);
  /// An option with a value kept as it is.
  void text(std::string_view name, std::string& to);
  /// An option whose value is a non-negative number.
  void count(std::string_view name, std::size_t& to);
  /// An option whose value is one of `choices` (`what` says which: "name, shapes or stack").
  template <class T>
  void choice(std::string_view name, std::initializer_list<std::pair<std::string_view, T>> choices,
              std::string_view what, T& to) {
    std::vector<std::pair<std::string, T>> kept;
    for (const auto& c : choices) kept.emplace_back(std::string(c.first), c.second);
    value(name, [kept = std::move(kept), n = std::string(name), w = std::string(what),
                 &to](const std::string& v) {
      for (const auto& [word, x] : kept)
        if (v == word) {
          to = x;
          return;
        }
      throw usage_error{n + " takes " + w};
    });
  }

  /// Reads the command line (see the class comment).
  void parse();

  bool json = false;                    ///< `--json`: machine-readable output on stdout
  std::vector<std::string> positional;  ///< the traces, in order
  /// How many traces the command takes at most ("more than one trace given" past it).
  std::size_t most_traces = static_cast<std::size_t>(-1);
  /// The file error messages name (the first trace, unless a command says another).
  std::string subject;

  /// The one trace of a command that takes one ("missing TRACE" or "more than one trace given"
  /// otherwise).
  [[nodiscard]] const std::string& one_trace() const;

 private:
  struct option {
    std::string name;
    bool takes_value;
    std::function<void(const std::string&)> set;
  };
  std::string command_;
  std::vector<std::string> args_;
  std::vector<option> options_;
};

/// A non-negative number given to option `flag`.
[[nodiscard]] std::size_t parse_count(std::string_view flag, const std::string& value);

/// One command.
struct command {
  std::string_view name;
  std::string_view help;  ///< its lines of `--help` (the first one names it)
  int order;              ///< its place in `--help`
  int (*run)(arguments&);
};

/// A command file registers its command with one static `registrar`.
struct registrar {
  explicit registrar(const command& c);
};

/// The registered commands, in the order of `--help`.
[[nodiscard]] std::vector<command> commands();

/// `--help`'s text.
[[nodiscard]] std::string usage_text();

}  // namespace tracemodel_cli
