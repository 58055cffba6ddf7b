// `analyze` on two threads (the forward/backward linker's pass and matching on the second, the
// device links and the tree as one pass on the calling one, reading forward thread ids behind
// the second thread's progress) and on one, against the three public steps called one after
// another: the same parents, children, links, inherited keys and counts. ThreadSanitizer runs
// this group.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include <tracemodel/algo/analyze.hpp>
#include <tracemodel/algo/detail/engine.hpp>
#include <tracemodel/formats/chrome_trace_reader.hpp>
#include <tracemodel/testing/builder.hpp>

#include "../fuzz/analyze_check.hpp"
#include "../support/json.hpp"
#include "../support/real_traces.hpp"
#include "../support/sanitized.hpp"

namespace tmod = tracemodel;

namespace {

using fuzz::analysed;
using fuzz::how;

/// Steps of forward ops with sequence numbers, backward ops (with their evaluate_function
/// wrappers) on a second thread, launches with flows and kernels; sorted by start, or shuffled.
/// `messy`: kernels on three streams, and ops and launches on up to 24 more threads that reuse
/// the ids of the main thread's (correlation ids, flow starts), a little before or after them.
tmod::event_table training_table(std::mt19937_64& rng, bool shuffled, bool messy = false) {
  auto pick = [&](int n) {
    return static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(n));
  };
  tmod::testing::table_builder b;
  std::int64_t t = 0;
  std::uint64_t corr = 1;
  const int steps = 1 + static_cast<int>(pick(30));
  std::int64_t seq = 0;
  const int others = messy ? 1 + static_cast<int>(pick(24)) : 0;
  // The backward thread first: its stack then comes before the main thread's.
  if (messy && pick(2) == 0) b.op("aten::empty", 0, 2, 2);
  // A thread that records once and then stays idle (its last op is never followed).
  b.op("aten::empty", 0, 3, 3);
  for (int s = 0; s < steps; ++s) {
    const std::int64_t step_start = t;
    for (int k = 0; k < 5; ++k, ++seq) {
      // The op's correlation id: sometimes the one of the op before (the first op with an id
      // wins), sometimes far from the others (the id maps keep those apart from their arrays).
      const std::uint64_t op_id = pick(10) == 0 && corr > 1 ? corr - 1
                                  : pick(12) == 0           ? (std::uint64_t{1} << 40) + corr
                                                            : corr;
      b.op("aten::mm", t, t + 50, 1).seq(seq).op_correlation(op_id);
      // Sometimes the kernel's clock puts it before its launch (the device linker then
      // places it in its second pass), and the launch names the next op (found later).
      const bool early = pick(8) == 0;
      b.device("cudaLaunchKernel", tmod::activity_type::cuda_runtime, t + 10, t + 20, 1, 1)
          .correlation(corr)
          .external_id(pick(6) == 0   ? corr + 1
                       : pick(2) == 0 ? op_id
                                      : 0)
          .flow(corr, true);
      b.device("gemm", tmod::activity_type::kernel, early ? t + 5 : t + 30, t + 90 + pick(50),
               messy ? 7 + static_cast<tmod::thread_key>(pick(3)) : 7, 0)
          .correlation(corr)
          .flow(pick(10) == 0 ? corr + 1000 : corr, false);
      if (others > 0 && pick(3) == 0) {
        // Another thread's op and launch with the same ids, just before or after the main
        // thread's (the first row of an id wins).
        const auto tid = static_cast<tmod::thread_key>(10 + pick(others));
        const std::int64_t at = t + (pick(2) == 0 ? 3 : 15);
        b.op("aten::add", at - 2, at + 30, tid).op_correlation(op_id);
        b.device("cudaLaunchKernel", tmod::activity_type::cuda_runtime, at, at + 4, tid, 1)
            .correlation(corr)
            .external_id(op_id)
            .flow(corr, true);
      }
      ++corr;
      t += 60;
    }
    // A kernel whose flow never started and that has no other id: its link waits for
    // the device linker's second pass and then finds nothing, so it is placed by nesting
    // on its stream, where it may enclose the memset after it.
    if (pick(3) == 0) {
      b.device("orphan", tmod::activity_type::kernel, t - 30, t - 5, 7, 0)
          .flow(900000 + corr, false);
      b.device("memset", tmod::activity_type::gpu_memset, t - 25, t - 20, 7, 0);
    }
    for (std::int64_t k = seq - 1; k >= seq - 5; --k) {
      b.op("autograd::engine::evaluate_function: MmBackward0", t, t + 40, 2);
      // Sometimes far from its wrapper: ops of other threads come between the two.
      const std::int64_t gap = pick(6) == 0 ? 5 + pick(20) : 5;
      for (std::int64_t g = 6; g < gap; g += 4) b.op("aten::view", t + g, t + g + 1, 1);
      b.op("MmBackward0", t + gap, t + 35 + pick(10), 2)
          .seq(k, 1)
          .scope(tmod::op_scope::backward_function);
      t += 50;
    }
    b.annotation("ProfilerStep", step_start, t, 1);
    t += 10;
  }
  // A wrapper that nothing follows: the second thread's pass holds its row back to the end.
  if (pick(2) == 0) b.op("autograd::engine::evaluate_function: AddBackward0", t, t + 5, 2);
  tmod::event_table table = b.take();
  // A few events arrive linked already (an earlier step placed them): every step leaves
  // them alone.
  for (std::size_t i = 1; i < table.size(); i += 1 + static_cast<std::size_t>(pick(40))) {
    table.events[i].parent = static_cast<tmod::event_index>(pick(static_cast<int>(i)));
    table.events[i].link = tmod::parent_link::flow;
  }
  if (shuffled)
    std::shuffle(table.events.begin(), table.events.end(), rng);
  else  // the step annotation was added after its ops
    std::stable_sort(table.events.begin(), table.events.end(),
                     [](const auto& x, const auto& y) { return x.start_ns < y.start_ns; });
  return table;
}

/// A stand-in for the thread that reads the table while `collect` runs: at every report it
/// checks that the ops of the rows reported before did not change since (the reader may read
/// them), until `collect` stops (a table out of order: it may undo then).
struct watching_progress {
  const tmod::event_table& t;
  std::size_t rows;
  std::vector<std::pair<std::int64_t, std::uint64_t>> seen;  // (sequence number, fwd thread)
  std::uint64_t last = 0;
  int reports = 0, stops = 0, ends = 0;

  [[nodiscard]] std::size_t chunk() const { return rows; }
  static std::pair<std::int64_t, std::uint64_t> keys(const tmod::event_table::event_type& e) {
    if (const auto* op = e.get_if<tmod::event_kind::op>())
      return {op->sequence_number, op->fwd_thread_id};
    return {0, 0};
  }
  void check_unchanged() {
    for (std::size_t i = 0; i < seen.size(); ++i) {
      INFO("row " << i);
      REQUIRE(keys(t.events[i]) == seen[i]);
    }
  }
  void publish(std::uint64_t safe) {
    check_unchanged();
    if (safe == tmod::detail::collect_progress::done) {
      ++ends;
      return;
    }
    REQUIRE(safe >= last);  // reports never take rows back
    REQUIRE(safe <= t.size());
    last = safe;
    ++reports;
    while (seen.size() < safe) seen.push_back(keys(t.events[seen.size()]));
  }
  void stop_and_wait() {
    check_unchanged();
    ++stops;
    seen.clear();
    last = 0;
  }
};

/// Ops on exactly `threads` threads (two processes), nested two deep, the threads' rows
/// interleaved (sorted by start): forward threads, backward threads whose ops fall back to a
/// forward thread (one per five forward ones), and threads with one op to make up the count.
tmod::event_table many_threads_table(std::mt19937_64& rng, int threads) {
  tmod::testing::table_builder b;
  int forward = 0;
  while (forward + 1 + (forward + 1) / 5 <= threads) ++forward;
  for (int k = 0; k < threads - forward - forward / 5; ++k)
    b.op("lone", k, k + 1, static_cast<tmod::thread_key>(100'000 + k), 1);
  for (int round = 0; round < 3; ++round) {
    for (int k = 0; k < forward; ++k) {
      const std::int64_t t = 10'000 * round + 7 * k + static_cast<std::int64_t>(rng() % 5);
      const auto tid = static_cast<tmod::thread_key>(1000 + k);
      const auto pid = static_cast<tmod::process_key>(1 + (k / 10) % 2);
      b.op("outer", t, t + 3000, tid, pid).seq(round * threads + k);
      b.op("inner", t + 1, t + 2, tid, pid).seq(round * threads + k);
      // A backward op alone on its thread: it falls back to its forward thread's stack.
      if (k % 5 == 4)
        b.op("MmBackward0", t + 3, t + 4, tid + 5000, pid)
            .seq(round * threads + k - 1, 1000 + static_cast<std::uint64_t>(k) - 1)
            .scope(tmod::op_scope::backward_function);
    }
  }
  tmod::event_table table = b.take();
  std::stable_sort(table.events.begin(), table.events.end(),
                   [](const auto& x, const auto& y) { return x.start_ns < y.start_ns; });
  return table;
}

}  // namespace

TEST_SUITE("concurrency") {
  TEST_CASE("parallel analyze: every real trace gives what the steps give, every way") {
    for (const char* f : tmtest::real_traces) {
      INFO(f);
      std::string text = tmtest::read_file(tmtest::data_path(f));
      const tmod::event_table t = tmod::read_chrome_trace(text, text.size());
      // One thread and two, the replay row by row and in chunks, both tie rules.
      CHECK(fuzz::same_every_way(t) == fuzz::analysis_outcome::same);
    }
  }

  TEST_CASE("parallel analyze: random training-like tables, sorted or not") {
    std::mt19937_64 rng(42);
    for (int round = 0; round < 20; ++round) {
      const tmod::event_table table = training_table(rng, round % 2 == 1);
      INFO("round " << round << " events " << table.size());
      const std::string reference = analysed(table, how::steps);
      CHECK(analysed(table, how::serial) == reference);
      for (const std::size_t rows :
           {std::size_t{1}, std::size_t{3}, std::size_t{64}, std::size_t{4096}}) {
        INFO("progress every " << rows << " rows");
        CHECK(analysed(table, how::parallel, rows) == reference);
      }
      // The replay row by row in table order, and in chunks of other sizes.
      for (const std::size_t chunk :
           {std::size_t{0}, std::size_t{1}, std::size_t{5}, std::size_t{64}}) {
        INFO("chunks of " << chunk << " rows");
        CHECK(analysed(table, how::serial, 4096, chunk) == reference);
        CHECK(analysed(table, how::parallel, 3, chunk) == reference);
      }
      // HTA's ties: the tree in a computed order, after the device links.
      const std::string hta = analysed<tmod::sibling_ties_tree>(table, how::steps);
      CHECK(analysed<tmod::sibling_ties_tree>(table, how::serial) == hta);
      CHECK(analysed<tmod::sibling_ties_tree>(table, how::parallel, 1) == hta);
    }
  }
  TEST_CASE("parallel analyze: the chunked replay equals the replay in table order") {
    // Each chunk's rows go thread by thread: ids mapped twice in a chunk (by rows of two
    // threads), links made on several streams, fall-backs to a thread whose rows in the chunk
    // come before or after (replayed first, or the tree replayed again in a computed order),
    // chunks with more threads than the replay's lists, and sizes from 1 row up.
    std::mt19937_64 rng(2026);
    for (int round = 0; round < 24; ++round) {
      const tmod::event_table table = training_table(rng, round % 6 == 5, true);
      INFO("round " << round << " events " << table.size());
      const std::string reference = analysed(table, how::steps);
      for (const std::size_t chunk : {std::size_t{0}, std::size_t{1}, std::size_t{2},
                                      std::size_t{7}, std::size_t{32}, std::size_t{512}}) {
        INFO("chunks of " << chunk << " rows");
        CHECK(analysed(table, how::serial, 4096, chunk) == reference);
        CHECK(analysed(table, how::parallel, 5, chunk) == reference);
      }
    }
  }
  TEST_CASE("the forward/backward pass writes each row's thread for the tree's replay") {
    // The replay reads these bytes instead of looking threads up: the dense id of each row's
    // (pid, tid) in order of first appearance (its stacks' numbering), 0xff from the 255th
    // thread on, all of them written once the pass reports the table's end.
    std::mt19937_64 rng(99);
    for (int round = 0; round < 12; ++round) {
      const tmod::event_table table = round < 8 ? training_table(rng, false, round % 2 == 1)
                                                : many_threads_table(rng, round == 8   ? 254
                                                                          : round == 9 ? 255
                                                                                       : 300);
      INFO("round " << round << " events " << table.size());
      tmod::event_table plain = table;
      const auto reference = tmod::detail::fwd_bwd_collect<tmod::pytorch_links>(plain);
      tmod::event_table t = table;
      tmod::detail::collect_progress progress(1 + rng() % 64);
      std::vector<std::uint8_t> bytes(t.size(), 0xaa);
      progress.set_row_threads(bytes.data());
      const auto r = tmod::detail::fwd_bwd_collect<tmod::pytorch_links>(t, &progress);
      CHECK(progress.row_threads_ready() == t.size());
      std::vector<std::pair<tmod::process_key, tmod::thread_key>> seen;
      for (std::size_t i = 0; i < t.size(); ++i) {
        const std::pair key{t.events[i].pid, t.events[i].tid};
        auto it = std::find(seen.begin(), seen.end(), key);
        const auto id = static_cast<std::size_t>(it - seen.begin());
        if (it == seen.end()) seen.push_back(key);
        INFO("row " << i << " thread " << id);
        CHECK(bytes[i] == (id < 255 ? id : 255));
      }
      if (round >= 8) CHECK(seen.size() == (round == 8 ? 254u : round == 9 ? 255u : 300u));
      // The same records as without it.
      REQUIRE(r.recs.size() == reference.recs.size());
      for (std::size_t k = 0; k < r.recs.size(); ++k) {
        CHECK(r.recs[k].index == reference.recs[k].index);
        CHECK(r.fwd(r.recs[k]) == reference.fwd(reference.recs[k]));
        // Each record's pair names its event's thread (the two count threads differently).
        const auto& e = t.events[r.recs[k].index];
        const std::pair<std::uint64_t, std::uint64_t> thread{static_cast<std::uint64_t>(e.pid),
                                                             e.tid};
        CHECK(r.threads.pair(r.thread(r.recs[k])) == thread);
        CHECK(reference.threads.pair(reference.thread(reference.recs[k])) == thread);
      }
    }
  }
  TEST_CASE("parallel analyze: tables with more threads than a byte numbers") {
    // Rows of the 255th thread on are looked up by the replay itself.
    std::mt19937_64 rng(5);
    for (const int threads : {3, 254, 255, 256, 400}) {
      const tmod::event_table table = many_threads_table(rng, threads);
      INFO(threads << " threads, " << table.size() << " events");
      std::vector<std::pair<tmod::process_key, tmod::thread_key>> seen;
      for (const auto& e : table.events)
        if (std::find(seen.begin(), seen.end(), std::pair{e.pid, e.tid}) == seen.end())
          seen.emplace_back(e.pid, e.tid);
      CHECK(seen.size() == static_cast<std::size_t>(threads));
      const std::string reference = analysed(table, how::steps);
      for (const std::size_t chunk : {std::size_t{0}, std::size_t{7}, std::size_t{512}}) {
        INFO("chunks of " << chunk << " rows");
        CHECK(analysed(table, how::parallel, 5, chunk) == reference);
        CHECK(analysed(table, how::serial, 4096, chunk) == reference);
      }
    }
  }
  TEST_CASE("the forward/backward pass reports only rows it will not write again") {
    // The watermark that the tree's replay reads behind: a row is reported once the pass has
    // gone past it and, for an evaluate_function wrapper, past the next op of its thread
    // (which gives it its keys). Checked here on one thread, at every report.
    std::mt19937_64 rng(7);
    int stopped = 0, held = 0;
    for (int round = 0; round < 30; ++round) {
      tmod::event_table table = training_table(rng, round % 3 == 2);
      tmod::event_table plain = table;
      const auto reference = tmod::detail::fwd_bwd_collect<tmod::pytorch_links>(plain);
      for (const std::size_t rows : {std::size_t{1}, std::size_t{2}, std::size_t{5}}) {
        INFO("round " << round << " every " << rows << " rows");
        tmod::event_table t = table;
        watching_progress w{t, rows, {}, 0, 0, 0, 0};
        const auto r = tmod::detail::fwd_bwd_collect<tmod::pytorch_links>(t, &w);
        CHECK(w.ends == 1);
        if (w.stops == 0) CHECK(w.reports > 0);  // (out of order: it may stop before one)
        stopped += w.stops;
        held += w.last + 2 * rows < t.size() ? 1 : 0;
        // The same records and keys as without reports.
        REQUIRE(r.recs.size() == reference.recs.size());
        for (std::size_t k = 0; k < r.recs.size(); ++k) {
          CHECK(r.recs[k].index == reference.recs[k].index);
          CHECK(r.recs[k].seq == reference.recs[k].seq);
          CHECK(r.fwd(r.recs[k]) == reference.fwd(reference.recs[k]));
        }
        for (std::size_t i = 0; i < t.size(); ++i)
          CHECK(watching_progress::keys(t.events[i]) == watching_progress::keys(plain.events[i]));
      }
    }
    CHECK(stopped > 0);  // tables out of order were met
    CHECK(held > 0);     // and wrappers that held the reports back
  }

  TEST_CASE("analysis of read traces: every way gives the steps' result (fuzz inputs)") {
    // The analysis fuzz target's property (tests/fuzz/analyze_check.hpp) on the inputs it once
    // failed on (tests/data/fuzz-analyze/, when there are any) and on the reader's fuzz inputs
    // (the real traces go through the comparison in the first test case of this file).
    namespace fs = std::filesystem;
    std::size_t read = 0, rejected = 0;
    for (const char* dir : {"fuzz-analyze", "fuzz"}) {
      const fs::path folder = fs::path(TRACEMODEL_TEST_DATA_DIR) / dir;
      if (!fs::exists(folder)) continue;
      for (const auto& entry : fs::directory_iterator(folder)) {
        if (entry.path().extension() != ".json") continue;
        INFO(entry.path().filename().string());
        const std::string data = tmtest::read_file(entry.path().string());
        const fuzz::analysis_outcome o = fuzz::check_analysis(data.data(), data.size());
        CHECK(o != fuzz::analysis_outcome::differs);
        (o == fuzz::analysis_outcome::rejected ? rejected : read) += 1;
      }
    }
    CHECK(read >= 5);      // the reader's inputs that it reads
    CHECK(rejected >= 3);  // and those it rejects
  }

  TEST_CASE("analysis of tables made from random bytes: every way gives the steps' result") {
    // The table fuzz target's property (fuzz::table_of, fuzz::same_every_way) on random inputs:
    // ops, backward ops, wrappers, launches, device activities, flows, times out of order,
    // missing and negative durations, preset parents; sorted by start or not.
    std::mt19937_64 rng(314);
    const int rounds = static_cast<int>(tmtest::scaled(160));  // (a quarter under sanitizers)
    int sorted = 0;
    for (int round = 0; round < rounds; ++round) {
      std::vector<std::uint8_t> bytes(1 + 6 * (1 + rng() % 400));
      for (std::uint8_t& x : bytes) x = static_cast<std::uint8_t>(rng());
      INFO("round " << round << " events " << bytes.size() / 6);
      CHECK(fuzz::same_every_way(fuzz::table_of(bytes.data(), bytes.size())) ==
            fuzz::analysis_outcome::same);
      sorted += bytes[0] & 1;
    }
    CHECK(sorted > rounds / 4);  // both kinds of table met
    CHECK(sorted < rounds * 3 / 4);
  }
}
