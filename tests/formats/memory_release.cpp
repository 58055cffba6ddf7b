// The memory a read, an analysis and a dropped table leave behind goes back with one public
// call (tracemodel/memory.hpp).
#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include <unistd.h>

#include <tracemodel/algo/analyze.hpp>
#include <tracemodel/formats/chrome_trace_reader.hpp>
#include <tracemodel/memory.hpp>

#include "../support/sanitized.hpp"

namespace tmod = tracemodel;

// The sanitizers keep freed memory in quarantine: resident sizes say nothing there
// (TMTEST_SANITIZED).

#ifndef TMTEST_SANITIZED
namespace {
/// Resident bytes of this process (/proc/self/statm), or -1.
long long resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  long long pages = 0, resident = -1;
  if (!(statm >> pages >> resident)) return -1;
  return resident * static_cast<long long>(::sysconf(_SC_PAGESIZE));
}

/// A Kineto-like trace of `events` events on two threads: steps of nested ops, each third op
/// launching a kernel (a runtime call and the kernel, with a correlation id).
/// `pad` spaces after each event: text that makes no table.
void write_trace(const std::string& path, std::size_t events, std::size_t pad = 0) {
  const std::string spaces(pad, ' ');
  std::FILE* f = std::fopen(path.c_str(), "wb");
  REQUIRE(f != nullptr);
  std::fputs("{\"schemaVersion\":1,\"traceEvents\":[\n", f);
  std::size_t written = 0;
  long long ts = 1000;
  unsigned long long corr = 1;
  bool first = true;
  auto event = [&](const char* cat, const char* name, int pid, int tid, long long at, long long dur,
                   unsigned long long c) {
    std::fprintf(f,
                 "%s{\"ph\":\"X\",\"cat\":\"%s\",\"name\":\"%s\",\"pid\":%d,\"tid\":%d,\"ts\":%lld,"
                 "\"dur\":%lld,\"args\":{\"correlation\":%llu}}",
                 first ? "" : ",\n", cat, name, pid, tid, at, dur, c);
    std::fputs(spaces.c_str(), f);
    first = false;
    ++written;
  };
  while (written < events) {
    for (int tid = 1; tid <= 2 && written < events; ++tid) {
      event("user_annotation", "ProfilerStep#1", 1, tid, ts, 90, 0);
      event("cpu_op", "aten::linear", 1, tid, ts + 1, 80, 0);
      event("cpu_op", "aten::addmm", 1, tid, ts + 2, 70, 0);
      event("cuda_runtime", "cudaLaunchKernel", 1, tid, ts + 3, 5, corr);
      event("kernel", "gemm", 0, 7, ts + 20, 30, corr);
      ++corr;
      ts += 100;
    }
  }
  std::fputs("\n]}\n", f);
  REQUIRE(std::fclose(f) == 0);
}

/// Peak resident bytes since the last reset_peak(), or -1.
long long peak_bytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::atoll(line.c_str() + 6) * 1024;
  return -1;
}
/// Starts the peak over from the resident size now (false where the system does not allow it).
bool reset_peak() { return static_cast<bool>(std::ofstream("/proc/self/clear_refs") << "5"); }
}  // namespace
#endif

TEST_SUITE("formats") {
  TEST_CASE(
      "memory: reading, analysing and dropping a 1M-event table, then one call, returns the "
      "memory") {
#ifdef TMTEST_SANITIZED
    MESSAGE("skipped under a sanitizer");
#else
    const std::string path = std::string(TRACEMODEL_TEST_BINARY_DIR) + "/memory_release.json";
    write_trace(path, 1'000'000);
    tmod::program_memory_cache();  // a program's limits: the dropped table is kept for reuse
    tmod::release_cached_memory();
    const long long before = resident_bytes();
    REQUIRE(before > 0);
    long long peak = 0;
    {
      tmod::event_table t = tmod::read_chrome_trace_file(path);
      REQUIRE(t.size() == 1'000'000);
      const tmod::analysis a = tmod::analyze(t);
      CHECK(a.device.by_correlation == 200'000);
      CHECK(a.tree.roots == 200'000);  // the steps (the kernels hang under their launches)
      peak = resident_bytes();
    }
    std::remove(path.c_str());
    const long long dropped = resident_bytes();
    const tmod::memory_stats kept = tmod::memory_usage();
    tmod::release_cached_memory();
    const long long after = resident_bytes();
    MESSAGE("resident: " << before / 1048576 << " MiB before the read, " << peak / 1048576
                         << " MiB with the table, " << dropped / 1048576 << " MiB dropped ("
                         << kept.cached() / 1048576 << " MiB kept for reuse), " << after / 1048576
                         << " MiB after release_cached_memory()");
    CHECK(peak - before > (std::int64_t{100} << 20));  // the table was there
    CHECK(kept.cached() > (std::size_t{64} << 20));    // and kept for reuse once dropped
    CHECK(after - before < (std::int64_t{64} << 20));
    CHECK(tmod::memory_usage().cached() == 0);
#endif
  }
  TEST_CASE("memory: a file read as it is parsed holds the table and a few steps of its text") {
#ifdef TMTEST_SANITIZED
    MESSAGE("skipped under a sanitizer");
#else
    const std::string path = std::string(TRACEMODEL_TEST_BINARY_DIR) + "/memory_streamed.json";
    write_trace(path, 300'000, 400);  // text of 150 MB, a table of about 40
    std::FILE* f = std::fopen(path.c_str(), "rb");
    REQUIRE(f != nullptr);
    std::fseek(f, 0, SEEK_END);
    const long long file = std::ftell(f);
    std::fclose(f);
    const tmod::memory_stats limits = tmod::memory_usage();
    tmod::set_memory_cache_limits(0, 0);  // what is freed goes back at once
    auto peak_of_read = [&](std::size_t stream_bytes, long long& table) {
      tmod::read_options o;
      o.threads = 1;
      o.stream_bytes = stream_bytes;
      const long long before = resident_bytes();
      if (!reset_peak()) return -1LL;
      const tmod::event_table t = tmod::read_chrome_trace_file(path, o);
      REQUIRE(t.size() == 300'000);
      table = resident_bytes() - before;
      return peak_bytes() - before;
    };
    long long table_whole = 0, table_streamed = 0;
    const long long whole = peak_of_read(0, table_whole);
    const long long streamed = peak_of_read(std::size_t{1} << 20, table_streamed);
    std::remove(path.c_str());
    tmod::set_memory_cache_limits(limits.region_limit, limits.block_limit);
    if (whole < 0 || streamed < 0) {
      MESSAGE("the peak cannot be reset here (/proc/self/clear_refs)");
      return;
    }
    MESSAGE("file " << file / 1048576 << " MiB, table " << table_streamed / 1048576
                    << " MiB; peak reading the whole text first " << whole / 1048576
                    << " MiB, read as parsed " << streamed / 1048576 << " MiB");
    CHECK(whole > file);                              // the whole text was there
    CHECK(streamed < table_streamed + (16LL << 20));  // the table and a few steps
    CHECK(streamed < whole - file / 2);
#endif
  }
}
