// Recording that survives its process: a recorder (crash_child) killed at random moments, or
// dying by its own hand inside an op, leaves a crash file whose recovery holds, per thread, a
// gap-free run of the ops it began, each as it was recorded; a recovered file equals the drained
// trace of the same ops; corrupted and cut files are errors or counted losses, never a crash.
#include <doctest/doctest.h>

#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include <tracemodel/collect/crash_recover.hpp>
#include <tracemodel/collect/live_queue.hpp>
#include <tracemodel/formats/chrome_trace_writer.hpp>

#include "../collect/test_values.hpp"
#include "../support/crash_child.hpp"
#include "../support/sanitized.hpp"

using namespace tracemodel;

namespace {

std::string temp_path(const std::string& name) { return tmtest::crash_temp_path(name); }

/// Whether thread `t`'s op `k` carries what it must: one tensor of sizes {k % 7, t}.
bool input_ok(const event_table& t, const extra_fields<event_kind::op>& f, std::int64_t k,
              std::uint64_t thread) {
  if (f.inputs.size != 1) return false;
  const input_value& v = t.inputs[f.inputs.first];
  return v.kind == input_kind::tensor && v.rank == 2 && t.ints[v.dims] == k % 7 &&
         t.ints[v.dims + 1] == static_cast<std::int64_t>(thread);
}

struct thread_ops {
  std::map<std::int64_t, bool> outer, inner;  // sequence number: ended
};

/// The recovery of a killed child: per thread, gap-free runs of outer and inner ops, each with
/// its input, ended but for the last ones, at most one torn record per thread.
void check_killed(const recovered_trace& r, int threads, bool from_start) {
  std::map<std::uint64_t, thread_ops> by;
  std::size_t bad = 0, twice = 0, early_unfinished = 0;  // (counted: one check per recovery)
  for (const auto& e : r.table.events) {
    const extra_fields<event_kind::op>* f = e.get_if<event_kind::op>();
    const std::string_view name = r.table.name(e);
    if (f == nullptr || (name != "outer" && name != "inner") ||
        f->fwd_thread_id >= static_cast<std::uint64_t>(threads) ||
        !input_ok(r.table, *f, f->sequence_number, f->fwd_thread_id) || f->end_ns < e.start_ns) {
      ++bad;
      continue;
    }
    auto& m = name == "outer" ? by[f->fwd_thread_id].outer : by[f->fwd_thread_id].inner;
    twice += !m.emplace(f->sequence_number, (f->flags & op_flag::unfinished) == 0).second;
  }
  CHECK(bad == 0);
  CHECK(twice == 0);
  CHECK(by.size() <= static_cast<std::size_t>(threads));  // (a thread may find the cap full)
  for (auto& [t, ops] : by)
    for (auto* m : {&ops.outer, &ops.inner}) {
      if (m->empty()) continue;
      const std::int64_t first = m->begin()->first, last = m->rbegin()->first;
      CHECK(last - first + 1 == static_cast<std::int64_t>(m->size()));  // no gap
      if (from_start) CHECK(first == 0);
      for (const auto& [k, ended] : *m) early_unfinished += k < last - 1 && !ended;
    }
  CHECK(early_unfinished == 0);  // unfinished only at the end
  CHECK(r.counts.torn_records <= static_cast<std::uint64_t>(threads));
  CHECK(r.counts.lost_blocks == 0);
  CHECK(r.counts.lost_held == 0);
  CHECK(r.counts.unknown_names == 0);
  CHECK(r.table.anomalies[anomaly::torn_record] == r.counts.torn_records);
}

}  // namespace

TEST_CASE("crash: a recorder killed at random moments leaves gap-free runs of its ops") {
  const std::string file = temp_path("killed.crash");
  std::mt19937_64 rng(42);
  const auto rounds = static_cast<int>(tmtest::scaled(200));
  std::uint64_t ops = 0, torn = 0, lost = 0;
  for (int round = 0; round < rounds; ++round) {
    CAPTURE(round);
    const bool overwrite = round % 2 == 1;
    tmtest::crash_child c(file, "run", 4, overwrite ? "overwrite" : "drop");
    REQUIRE(c.ready());
    std::this_thread::sleep_for(std::chrono::microseconds(rng() % 3000));
    ::kill(c.pid, SIGKILL);
    const int status = c.wait();
    REQUIRE(WIFSIGNALED(status));
    CHECK(WTERMSIG(status) == SIGKILL);
    const recovered_trace r = recover_crash_file(file);
    CHECK(r.counts.ops > 0);
    check_killed(r, 4, !overwrite);
    ops += r.counts.ops;
    torn += r.counts.torn_records;
    lost += r.counts.lost_ops;
  }
  MESSAGE(fmt::format("{} rounds: {} ops recovered, {} torn records, {} ops lost by the cap",
                      rounds, ops, torn, lost));
  std::filesystem::remove(file);
}

TEST_CASE("crash: SIGSEGV and abort inside an op: the op is recovered, unfinished") {
  for (const char* mode : {"segv", "abort"}) {
    CAPTURE(mode);
    const std::string file = temp_path(std::string(mode) + ".crash");
    tmtest::crash_child c(file, mode, 4, "drop");
    const int status = c.wait();
    CHECK((WIFSIGNALED(status) || (WIFEXITED(status) && WEXITSTATUS(status) != 0)));
    const recovered_trace r = recover_crash_file(file);
    bool found = false;
    std::int64_t thread0 = -1;    // thread 0's outer ops before the crash: 0..299
    std::size_t unfinished0 = 0;  // thread 0's: the op it died in alone
    for (const auto& e : r.table.events) {
      const extra_fields<event_kind::op>& f = *e.get_if<event_kind::op>();
      unfinished0 += f.fwd_thread_id == 0 && (f.flags & op_flag::unfinished) != 0;
      if (r.table.name(e) == "crashing") {
        found = true;
        CHECK(f.sequence_number == 300);
        CHECK(f.fwd_thread_id == 0);
        CHECK((f.flags & op_flag::unfinished) != 0);
        CHECK(f.end_ns >= e.start_ns);
        CHECK(input_ok(r.table, f, 300, 0));
      } else if (f.fwd_thread_id == 0 && r.table.name(e) == "outer") {
        CHECK(f.sequence_number == thread0 + 1);
        CHECK((f.flags & op_flag::unfinished) == 0);
        thread0 = f.sequence_number;
      }
    }
    CHECK(found);
    CHECK(thread0 == 299);
    // The other threads record on until the process is gone: one record each may be torn.
    CHECK(r.counts.torn_records <= 3);
    CHECK(unfinished0 == 1);
    std::filesystem::remove(file);
  }
}

namespace {
struct ns_policies : default_record_policies {
  using clock = steady_clock_source;  // ticks in ns: the drain's and the file's times agree
  using value_traits = tmtest::value_traits;
};
using full_queue = live_queue<record_features::all(), ns_policies>;

/// The Chrome trace of `t`, one entry per line: the line without its times, and the times (µs).
/// Sorted by the line, then the start. A drain's sync point after a recovery may move the
/// conversion by a few nanoseconds (a new stretch when 100 ms passed, as under a sanitizer).
struct trace_line {
  std::string text;
  double ts = 0, dur = 0;
  bool operator<(const trace_line& o) const { return std::tie(text, ts) < std::tie(o.text, o.ts); }
};
std::vector<trace_line> chrome_lines(const event_table& t) {
  std::vector<trace_line> lines;
  const std::string s = chrome_trace_string(t);
  auto cut_number = [](std::string& line, std::string_view key, double& to) {
    const std::size_t at = line.find(key);
    if (at == std::string::npos) return;
    const std::size_t end = line.find_first_of(",}", at);
    to = std::stod(line.substr(at + key.size(), end - at - key.size()));
    line.erase(at, end - at);
  };
  for (std::size_t at = 0; at < s.size();) {
    const std::size_t end = std::min(s.find('\n', at), s.size());
    trace_line l{s.substr(at, end - at)};
    if (!l.text.empty() && l.text.back() == ',') l.text.pop_back();  // (the last has none)
    cut_number(l.text, "\"ts\":", l.ts);
    cut_number(l.text, "\"dur\":", l.dur);
    lines.push_back(std::move(l));
    at = end + 1;
  }
  std::sort(lines.begin(), lines.end());
  return lines;
}
/// Whether two traces' lines are the same, their times within 0.1 µs.
bool same_lines(const event_table& a, const event_table& b) {
  const std::vector<trace_line> x = chrome_lines(a), y = chrome_lines(b);
  if (x.size() != y.size()) return false;
  std::size_t differ = 0;
  for (std::size_t k = 0; k < x.size(); ++k)
    if (x[k].text != y[k].text || std::abs(x[k].ts - y[k].ts) > 0.1 ||
        std::abs(x[k].dur - y[k].dur) > 0.1)
      if (differ++ < 3)
        MESSAGE("recovered: " << x[k].text << " " << x[k].ts << "\ndrained:   " << y[k].text << " "
                              << y[k].ts);
  return differ == 0;
}

/// Ops from three threads with every kind of side data, names copied or not, some ended by
/// another thread, over many blocks.
void record_mixed(full_queue& q, int per_thread = 700) {
  auto work = [&q, per_thread](int t) {
    std::vector<live_handle> handed;
    for (int k = 0; k < per_thread; ++k) {
      const tmtest::value in[2]{tmtest::value::tensor({k % 5, 3}, {3, 1}, 1),
                                tmtest::value::scalar_of(scalar_value::integer(k))};
      const std::string name = fmt::format("op{}", k % 9);
      const live_handle h =
          q.begin_op({.name = k % 4 == 0 ? std::string_view(name) : std::string_view("aten::mm"),
                      .sequence_number = k,
                      .fwd_thread_id = static_cast<std::uint64_t>(t),
                      .copy_name = k % 4 == 0},
                     std::span<const tmtest::value>(in));
      if (k % 3 == 0) {
        const std::string_view frames[2]{"train.py(10): step", "model.py(3): forward"};
        q.record_call_stack(h, frames);
      }
      if (k % 5 == 0) {
        const std::string_view modules[1]{"Net.fc"};
        q.record_module_hierarchy(h, modules);
        const extra_arg args[2]{extra_arg::integer("n", k), extra_arg::string("s", "abc")};
        q.record_extra_args(h, args);
      }
      if (k % 4 == 1) {  // other kinds: an allocation, a kernel, now and then an OOM
        q.record_allocation(0x1000u + static_cast<unsigned>(k) * 64, 64, 1000 + k, 4096, 1, 0);
        device_record kernel{};
        kernel.start = full_queue::clock::now();
        kernel.end = kernel.start + 900;
        kernel.name = k % 8 == 1 ? "gemm" : "relu";
        kernel.name_len = 4;
        kernel.activity = activity_type::kernel;
        kernel.correlation_id = static_cast<std::uint64_t>(k + 1);
        kernel.tid = kernel.stream = 7;
        kernel.grid[0] = static_cast<std::uint32_t>(k);
        q.record_device(kernel);
        if (k % 100 == 1) q.record_out_of_memory(1 << 30, 1000 + k, 4096, 1, 0);
      }
      if (k % 7 == 0)
        handed.push_back(h);
      else
        q.end_op(h);
    }
    return handed;
  };
  std::vector<live_handle> a, b;
  std::thread t1([&] { a = work(1); });
  std::thread t2([&] { b = work(2); });
  t1.join();
  t2.join();
  for (const live_handle& h : a) q.end_op(h);  // ended by another thread: late ends
  for (const live_handle& h : b) q.end_op(h);
  const std::vector<live_handle> c = work(0);
  for (const live_handle& h : c) q.end_op(h);
}
}  // namespace

TEST_CASE("recover: a recovered file equals the trace a drain writes for the same ops") {
  const std::string file = temp_path("equal.crash");
  for (const bool drain_some : {false, true}) {
    CAPTURE(drain_some);
    full_queue q({.block_records = 128, .side_words = 1024, .max_blocks = 128, .crash_file = file});
    event_table drained;
    if (drain_some) {  // a part drained first: the rest only in the file
      const live_handle open = q.begin_op({.name = "ProfilerStep#0", .copy_name = true});
      record_mixed(q);
      q.flush(std::chrono::milliseconds(0));
      q.drain([&](event_table&& part) { drained = std::move(part); });
      CHECK(drained.size() > 0);
      CHECK(q.counts().open == 1);  // the step: held by the consumer, kept in the file
      record_mixed(q);
      q.end_op(open);
    } else {
      record_mixed(q);
    }
    const recovered_trace r = recover_crash_file(file);  // while the queue runs
    CHECK(r.counts.torn_records == 0);
    CHECK(r.counts.unfinished == 0);
    CHECK(r.counts.orphan_ends == 0);
    CHECK(r.counts.lost_blocks == 0);
    event_table rest;
    q.close([&](event_table&& part) { rest = std::move(part); });
    CHECK(r.table.size() == rest.size());
    const std::size_t other = 3 * (175 + 175 + 7);  // per thread: allocations, kernels, OOMs
    if (drain_some) {
      CHECK(r.table.size() + drained.size() == 2 * (2100 + other) + 1);
    } else {
      CHECK(r.counts.ops == 2100);
      CHECK(r.counts.other == other);
    }
    CHECK(same_lines(r.table, rest));
    // After the drain, nothing is left to recover.
    CHECK(recover_crash_file(file).counts.ops == 0);
  }
  std::filesystem::remove(file);
}

TEST_CASE("recover: names that fill a block's room keep every op's inputs with its op") {
  // Names not copied are written into the block at their first use there; a block whose room
  // for names is full is sealed, and the op, its name and its inputs go to the next one.
  const std::string file = temp_path("names.crash");
  std::vector<std::string> names;
  for (int k = 0; k < 40; ++k) names.push_back(fmt::format("aten::op_number_{}", k));
  full_queue q({.block_records = 64,
                .name_bytes = 256,
                .side_words = 512,
                .max_blocks = 1024,
                .crash_file = file});
  for (int k = 0; k < 2000; ++k) {
    const tmtest::value in[1]{tmtest::value::tensor({k, 2}, {}, 0)};
    q.end_op(q.begin_op(
        {.name = names[static_cast<std::size_t>(k * 7) % names.size()], .sequence_number = k},
        std::span<const tmtest::value>(in)));
  }
  const recovered_trace r = recover_crash_file(file);
  REQUIRE(r.table.size() == 2000);
  std::size_t wrong = 0;
  for (const auto& e : r.table.events) {
    const auto& f = *e.get_if<event_kind::op>();
    const std::size_t k = static_cast<std::size_t>(f.sequence_number);
    wrong += r.table.name(e) != names[k * 7 % names.size()] || f.inputs.size != 1 ||
             r.table.ints[r.table.inputs[f.inputs.first].dims] != f.sequence_number;
  }
  CHECK(wrong == 0);
  CHECK(r.counts.unknown_names == 0);
  event_table drained;
  q.close([&](event_table&& part) { drained = std::move(part); });
  CHECK(same_lines(r.table, drained));
  std::filesystem::remove(file);
}

TEST_CASE("recover: corrupted and cut crash files are errors or counted losses") {
  const std::string file = temp_path("fuzz.crash");
  std::string bytes;
  std::size_t whole = 0;
  {
    full_queue q({.block_records = 64,
                  .name_bytes = 1024,
                  .side_words = 512,
                  .max_blocks = 40,
                  .crash_file = file});
    record_mixed(q, 100);
    const live_handle open = q.begin_op({.name = "open"});
    (void)open;
    std::ifstream in(file, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    whole = recover_crash_bytes(bytes).counts.ops;
    CHECK(whole == 301);  // (ops; the allocations and kernels besides)
  }
  std::size_t errors = 0, losses = 0;
  // Cut at every 4 KiB: an error while the header is cut, counted losses after.
  for (std::size_t cut = 0; cut < bytes.size(); cut += 4096) {
    try {
      const recovered_trace r = recover_crash_bytes(std::string_view(bytes).substr(0, cut));
      CHECK(r.counts.ops <= whole);
      if (r.counts.ops < whole) CHECK(r.counts.lost_blocks + r.counts.lost_held > 0);
      ++losses;
    } catch (const input_error&) {
      ++errors;
    }
  }
  CHECK(errors > 0);
  CHECK(losses > 0);
  // Random bytes changed: never a crash (the sanitizers watch).
  std::mt19937_64 rng(7);
  const auto rounds = static_cast<int>(tmtest::scaled(600));
  for (int round = 0; round < rounds; ++round) {
    std::string b = bytes;
    const int changes = 1 + static_cast<int>(rng() % 64);
    for (int k = 0; k < changes; ++k) {
      // Mostly where the records and headers are, now and then anywhere.
      const std::size_t at =
          round % 4 == 0 ? rng() % b.size() : rng() % std::min<std::size_t>(b.size(), 1 << 20);
      b[at] = static_cast<char>(rng());
    }
    try {
      const recovered_trace r = recover_crash_bytes(b);
      CHECK(r.table.size() == r.counts.ops + r.counts.other);
      (void)chrome_trace_string(r.table);  // what was recovered is written (the sanitizers watch)
    } catch (const input_error&) {
    }
  }
  std::filesystem::remove(file);
}
