// Recording from many threads at once loses nothing. Run under ThreadSanitizer in CI.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <thread>
#include <vector>

#include <tracemodel/collect.hpp>
#include <tracemodel/model.hpp>

#include "../support/sanitized.hpp"

using namespace tracemodel;

TEST_SUITE("concurrency" * doctest::skip(!collection_enabled)) {
  TEST_CASE(
      "8 threads x 100,000 ops (a quarter under a sanitizer): every op materialized once, every "
      "correlation id unique") {
    constexpr int threads = 8;
    constexpr int ops = static_cast<int>(tmtest::scaled(100'000));
    record_queue<> q;
    std::atomic<int> ready{0};
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&q, &ready, t] {
        ready.fetch_add(1);
        while (ready.load() < threads) std::this_thread::yield();  // start together
        for (int i = 0; i < ops; i += 2) {
          auto outer = q.begin_op({.name = "outer", .sequence_number = i, .debug_handle = t});
          auto inner = q.begin_op({.name = "inner", .sequence_number = i + 1, .debug_handle = t});
          q.end_op(inner);
          q.end_op(outer);
        }
        q.record_allocation(static_cast<std::uint64_t>(t), 1, 1, 1);
      });
    for (auto& th : pool) th.join();
    event_table tab = materialize(q);
    REQUIRE(tab.size() == threads * ops + threads);
    std::vector<std::uint64_t> ids;
    std::map<std::uint64_t, int> per_tid;
    std::map<std::int64_t, std::vector<std::int64_t>> seq_by_worker;
    for (const auto& e : tab.events) {
      if (const auto* op = e.get_if<event_kind::op>()) {
        ids.push_back(op->correlation_id);
        ++per_tid[e.tid];
        CHECK_FALSE(op->unfinished());
        seq_by_worker[op->debug_handle].push_back(op->sequence_number);
      }
    }
    std::sort(ids.begin(), ids.end());
    CHECK(std::adjacent_find(ids.begin(), ids.end()) == ids.end());
    CHECK(ids.front() > 0);
    CHECK(per_tid.size() == threads);
    for (auto& [tid, n] : per_tid) CHECK(n == ops);
    // Each worker's ops are all there: sequence numbers 0..ops-1 once each.
    REQUIRE(seq_by_worker.size() == threads);
    for (auto& [w, seqs] : seq_by_worker) {
      std::sort(seqs.begin(), seqs.end());
      REQUIRE(seqs.size() == ops);
      CHECK(seqs.front() == 0);
      CHECK(seqs.back() == ops - 1);
      CHECK(std::adjacent_find(seqs.begin(), seqs.end()) == seqs.end());
    }
    CHECK(std::is_sorted(tab.events.begin(), tab.events.end(),
                         [](const auto& a, const auto& b) { return a.start_ns < b.start_ns; }));
  }

  TEST_CASE("ops ended on another thread record the ending thread") {
    record_queue<> q;
    op_handle h = q.begin_op({.name = "async", .is_async = true});
    std::thread ender([&] { CHECK(q.end_op(h)); });
    ender.join();
    event_table t = materialize(q);
    REQUIRE(t.size() == 1);
    CHECK(t[0].tid == current_thread_id());
    CHECK(t[0].end_tid() != current_thread_id());
  }

  TEST_CASE("queues created and destroyed while other threads record into their own queues") {
    std::atomic<bool> stop{false};
    std::atomic<long> total{0};
    std::vector<std::thread> workers;
    for (int w = 0; w < 3; ++w)
      workers.emplace_back([&] {
        while (!stop.load()) {
          record_queue<> q;
          for (int i = 0; i < 500; ++i) q.end_op(q.begin_op({.name = "w"}));
          total.fetch_add(static_cast<long>(materialize(q).size()));
        }
      });
    for (int round = 0; round < 50; ++round) {
      record_queue<> mine;
      mine.end_op(mine.begin_op({.name = "m"}));
      CHECK(materialize(mine).size() == 1);
    }
    stop.store(true);
    for (auto& th : workers) th.join();
    CHECK(total.load() % 500 == 0);
    CHECK(total.load() > 0);
  }
}
