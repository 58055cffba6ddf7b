// Ranks analysed on a Dask cluster (cluster.hpp).
#include "cluster.hpp"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <system_error>

#include <tracemodel/formats/rank_parts.hpp>

extern char** environ;

namespace tracemodel_cli {
namespace {

/// PYTHONPATH with the package beside the program prepended: installed
/// (<prefix>/lib/python3/dist-packages) or in a build folder (<build>/python).
std::string python_path() {
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  std::string out;
  if (!ec)
    for (const auto& dir : {exe.parent_path().parent_path() / "lib/python3/dist-packages",
                            exe.parent_path().parent_path() / "python"})
      if (std::filesystem::exists(dir / "tracemodel/cluster.py", ec))
        out += (out.empty() ? "" : ":") + dir.string();
  if (const char* p = std::getenv("PYTHONPATH"); p && *p)
    out += (out.empty() ? "" : ":") + std::string(p);
  return out;
}

std::uint64_t le64(std::string_view b, std::size_t at) {
  std::uint64_t v = 0;
  for (std::size_t k = 0; k < 8; ++k)
    v |= static_cast<std::uint64_t>(static_cast<unsigned char>(b[at + k])) << (8 * k);
  return v;
}

}  // namespace

std::string program_path() {
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("tracemodel") : exe.string();
}

void say_unread(const unread_files& unread, std::size_t from) {
  for (std::size_t k = from; k < unread.size(); ++k)
    std::fprintf(stderr, "tracemodel: %s: not read: %s\n", unread[k].first.c_str(),
                 unread[k].second.c_str());
}

std::vector<tmod::gpu_rank_part> cluster_gpu_parts(const std::string& scheduler_file,
                                                   const std::vector<std::string>& files, bool hta,
                                                   bool series, unread_files& unread) {
  std::vector<std::string> options{"--kind", "gpu"};
  if (hta) options.emplace_back("--hta");
  if (series) options.emplace_back("--series");
  std::vector<tmod::gpu_rank_part> parts;
  for (auto& [place, bytes] : cluster_parts(scheduler_file, files, options, unread)) {
    tmod::gpu_rank_part p = tmod::decode_part<tmod::gpu_rank_part>(bytes, "gpu");
    p.file = files[place];
    parts.push_back(std::move(p));
  }
  return parts;
}

std::vector<std::pair<std::size_t, std::string>> cluster_parts(
    const std::string& scheduler_file, const std::vector<std::string>& files,
    const std::vector<std::string>& options, unread_files& unread) {
  const char* py = std::getenv("TRACEMODEL_PYTHON");
  std::vector<std::string> args{py && *py ? py : "python3", "-m",          "tracemodel", "parts",
                                "--scheduler-file",         scheduler_file};
  args.insert(args.end(), options.begin(), options.end());
  args.emplace_back("--");
  args.insert(args.end(), files.begin(), files.end());
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_text;
  const std::string pp = python_path();
  for (char** e = environ; *e; ++e)
    if (std::strncmp(*e, "PYTHONPATH=", 11) != 0) env_text.emplace_back(*e);
  if (!pp.empty()) env_text.push_back("PYTHONPATH=" + pp);
  std::vector<char*> envp;
  for (std::string& e : env_text) envp.push_back(e.data());
  envp.push_back(nullptr);

  int fds[2];
  if (::pipe(fds) != 0) throw tmod::input_error(std::string("pipe: ") + std::strerror(errno));
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&fa, fds[0]);
  posix_spawn_file_actions_addclose(&fa, fds[1]);
  pid_t pid = 0;
  const int spawned = posix_spawnp(&pid, argv[0], &fa, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  ::close(fds[1]);
  if (spawned != 0) {
    ::close(fds[0]);
    throw tmod::input_error("cannot run " + args[0] +
                            " (set TRACEMODEL_PYTHON): " + std::strerror(spawned));
  }
  std::string bytes;
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n > 0)
      bytes.append(buf, static_cast<std::size_t>(n));
    else if (n == 0 || errno != EINTR)
      break;
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw tmod::input_error(
        "the cluster's run failed (" + args[0] + " -m tracemodel parts, status " +
        std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) + "): see its message above");
  // Frames: 'P' or 'E', the file's place and the length (little-endian 64 bits), the bytes.
  std::vector<std::pair<std::size_t, std::string>> parts;
  std::vector<bool> seen(files.size());
  for (std::size_t at = 0; at < bytes.size();) {
    if (bytes.size() - at < 17) throw tmod::input_error("the cluster's answer is cut short");
    const char kind = bytes[at];
    const std::uint64_t place = le64(bytes, at + 1), len = le64(bytes, at + 9);
    at += 17;
    if ((kind != 'P' && kind != 'E') || place >= files.size() || seen[place] ||
        len > bytes.size() - at)
      throw tmod::input_error("the cluster's answer is not one the program reads");
    seen[place] = true;
    const std::string_view payload(bytes.data() + at, static_cast<std::size_t>(len));
    at += static_cast<std::size_t>(len);
    if (kind == 'E') {
      unread.emplace_back(files[place], std::string(payload));
      continue;
    }
    parts.emplace_back(static_cast<std::size_t>(place), std::string(payload));
  }
  for (std::size_t k = 0; k < files.size(); ++k)
    if (!seen[k]) unread.emplace_back(files[k], "no answer from the cluster");
  return parts;
}

}  // namespace tracemodel_cli
