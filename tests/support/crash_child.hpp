// The crash tests' recorder (tests/crash/crash_child.cpp), started as a process of its own with
// its standard output on a pipe: killed, or dead by its own hand, it takes no test with it.
#pragma once

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include <doctest/doctest.h>

extern char** environ;

namespace tmtest {

/// A path in the temporary folder, this process's own.
inline std::string crash_temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("tracemodel_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

/// `crash_child FILE MODE THREADS POLICY` (see crash_child.cpp).
struct crash_child {
  pid_t pid = -1;
  int out = -1;
  crash_child(const std::string& file, const char* mode, int threads, const char* policy) {
    int fds[2];
    REQUIRE(::pipe(fds) == 0);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
    posix_spawn_file_actions_addclose(&actions, fds[0]);
    const std::string n = std::to_string(threads);
    std::string exe = TRACEMODEL_CRASH_CHILD;
    std::vector<char*> argv{exe.data(),
                            const_cast<char*>(file.c_str()),
                            const_cast<char*>(mode),
                            const_cast<char*>(n.c_str()),
                            const_cast<char*>(policy),
                            nullptr};
    REQUIRE(posix_spawn(&pid, exe.c_str(), &actions, nullptr, argv.data(), environ) == 0);
    posix_spawn_file_actions_destroy(&actions);
    ::close(fds[1]);
    out = fds[0];
  }
  crash_child(const crash_child&) = delete;
  crash_child& operator=(const crash_child&) = delete;
  /// Waits for its "every thread records" byte (false: it ended first).
  [[nodiscard]] bool ready() const {
    char c = 0;
    return ::read(out, &c, 1) == 1;
  }
  /// Waits for its end; its status as `waitpid` gives it.
  int wait() {
    int status = 0;
    ::waitpid(pid, &status, 0);
    ::close(out);
    return status;
  }
};

}  // namespace tmtest
