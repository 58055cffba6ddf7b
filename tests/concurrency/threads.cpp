// The caller's threads: `thread_options::threads` caps them (1: the calling thread alone) and
// `start_thread` supplies them, for `analyze` and the reader; `detail::worker` is the one
// primitive every site uses. ThreadSanitizer runs this group.
#include <doctest/doctest.h>

#include <atomic>
#include <stdexcept>
#include <string>
#include <thread>

#include <tracemodel/algo/analyze.hpp>
#include <tracemodel/formats/chrome_trace_reader.hpp>
#include <tracemodel/formats/chrome_trace_writer.hpp>
#include <tracemodel/testing/builder.hpp>
#include <tracemodel/threads.hpp>

#include "../support/analysis_ways.hpp"

namespace tmod = tracemodel;

namespace {
/// Options whose extra threads come from `start_thread`, which counts them.
tmod::thread_options counted(std::atomic<int>& started, unsigned threads) {
  tmod::thread_options o;
  o.threads = threads;
  o.start_thread = [&started](std::function<void()> task) {
    ++started;
    std::thread(std::move(task)).detach();
  };
  return o;
}

/// Nested ops with sequence numbers and backward ops on a second thread: `steps` x 6 events.
tmod::event_table big_table(int steps) {
  tmod::testing::table_builder b;
  std::int64_t t = 0;
  for (int s = 0; s < steps; ++s, t += 100) {
    b.op("aten::linear", t, t + 40, 1).seq(s);
    b.op("aten::mm", t + 1, t + 30, 1).seq(s);
    b.op("cudaLaunchKernel", t + 2, t + 5, 1);
    b.op("autograd::engine::evaluate_function: MmBackward0", t + 50, t + 90, 2);
    b.op("MmBackward0", t + 51, t + 80, 2).seq(s, 1);
    b.op("aten::mul", t + 52, t + 60, 2);
  }
  return b.take();
}
}  // namespace

TEST_SUITE("concurrency") {
  TEST_CASE("worker: runs its task on another thread, from the caller's starter, and rethrows") {
    std::atomic<int> started{0};
    const tmod::thread_options mine = counted(started, 2);
    std::thread::id ran_on;
    tmod::detail::worker w(mine, [&] { ran_on = std::this_thread::get_id(); });
    w.join();
    CHECK(started == 1);
    CHECK(ran_on != std::this_thread::get_id());
    tmod::detail::worker failing(tmod::thread_options{}, [] { throw std::runtime_error("boom"); });
    CHECK_THROWS_WITH(failing.join(), "boom");
    CHECK(tmod::detail::thread_budget(tmod::thread_options{.threads = 1}) == 1);
    CHECK(tmod::detail::thread_budget(tmod::thread_options{}) >= 1);
  }

  TEST_CASE("analyze: one thread starts none, two take the second from the caller's starter") {
    const tmod::event_table table = big_table(12'000);  // 72,000 events: big enough for two
    const std::string reference = fuzz::analysed(table, fuzz::how::steps);
    for (const unsigned threads : {1u, 2u}) {
      CAPTURE(threads);
      std::atomic<int> started{0};
      tmod::event_table t = table;
      tmod::analyze_options o;
      static_cast<tmod::thread_options&>(o) = counted(started, threads);
      const tmod::analysis a = tmod::analyze(t, o);
      CHECK(started == (threads == 1 ? 0 : 1));
      CHECK(a.fwd_bwd.links == 12'000);
      CHECK(a.tree.events == table.size());
    }
    // The result is the steps' either way.
    CHECK(fuzz::analysed(table, fuzz::how::serial) == reference);
    CHECK(fuzz::analysed(table, fuzz::how::parallel) == reference);
  }

  TEST_CASE("read: one thread starts none, two take theirs from the caller's starter") {
    // A trace of over 1 MB, one record per line (the reader cuts it into stretches), read on
    // two threads from 1 MB on.
    const std::string text = tmod::chrome_trace_string(big_table(4'000));
    constexpr std::size_t threshold = std::size_t{1} << 20;
    REQUIRE(text.size() > threshold);
    tmod::read_options serial;
    serial.threads = 1;
    std::string a = text;
    const std::string want =
        tmod::chrome_trace_string(tmod::read_chrome_trace(a, a.size(), serial));
    for (const bool fast : {true, false}) {
      CAPTURE(fast);
      std::atomic<int> started{0};
      tmod::read_options o;
      static_cast<tmod::thread_options&>(o) = counted(started, 2);
      o.fast_paths = fast;
      o.parallel_threshold = threshold;
      std::string b = text;
      CHECK(tmod::chrome_trace_string(tmod::read_chrome_trace(b, b.size(), o)) == want);
      CHECK(started >= 1);
      std::atomic<int> none{0};
      tmod::read_options one;
      static_cast<tmod::thread_options&>(one) = counted(none, 1);
      one.fast_paths = fast;
      one.parallel_threshold = threshold;
      std::string c = text;
      CHECK(tmod::chrome_trace_string(tmod::read_chrome_trace(c, c.size(), one)) == want);
      CHECK(none == 0);
    }
  }
}
