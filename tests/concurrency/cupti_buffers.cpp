// The CUPTI adapter's buffer pool and handoff (no CUPTI needed): the cap, refusals, recycling,
// completion order, and many threads at once without losing a buffer.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <set>
#include <thread>
#include <vector>

#include <tracemodel/adapters/cupti/buffers.hpp>

using tracemodel::cupti::buffer_pool;

TEST_SUITE("concurrency") {
  TEST_CASE("cupti buffer_pool: cap, refusals, recycling, completion order") {
    buffer_pool pool(1000, 3);
    CHECK(pool.buffer_size() == 1000);
    std::uint8_t* a = pool.acquire();
    std::uint8_t* b = pool.acquire();
    std::uint8_t* c = pool.acquire();
    REQUIRE((a && b && c));
    CHECK(reinterpret_cast<std::uintptr_t>(a) % 8 == 0);
    CHECK(pool.acquire() == nullptr);  // at the cap: refused, counted
    CHECK(pool.refused() == 1);
    CHECK(pool.allocated() == 3);
    pool.push_completed(b, 10);
    pool.push_completed(a, 20);
    pool.push_completed(nullptr, 5);                                 // not ours: ignored
    pool.push_completed(reinterpret_cast<std::uint8_t*>(&pool), 5);  // not ours: ignored
    const auto done = pool.take_completed();
    REQUIRE(done.size() == 2);
    CHECK(done[0].data == b);
    CHECK(done[0].valid == 10);
    CHECK(done[1].data == a);
    CHECK(done[1].valid == 20);
    CHECK(pool.take_completed().empty());
    pool.release(a);
    pool.release(b);
    std::set<std::uint8_t*> again{pool.acquire(), pool.acquire()};
    CHECK(again == std::set<std::uint8_t*>{a, b});  // recycled, no new allocation
    CHECK(pool.allocated() == 3);
    CHECK(pool.acquire() == nullptr);
    CHECK(pool.refused() == 2);
  }

  TEST_CASE("cupti buffer_pool: four producers and a consumer lose nothing") {
    constexpr int producers = 4, rounds = 20000;
    buffer_pool pool(64, 16);
    std::atomic<int> produced{0}, refused_here{0};
    std::atomic<bool> done{false};
    std::vector<std::thread> ts;
    for (int p = 0; p < producers; ++p)
      ts.emplace_back([&, p] {
        for (int r = 0; r < rounds; ++r) {
          std::uint8_t* buf = pool.acquire();
          if (buf == nullptr) {
            ++refused_here;
            std::this_thread::yield();
            continue;
          }
          std::memset(buf, p + 1, 64);  // "records"
          pool.push_completed(buf, static_cast<std::size_t>(p + 1));
          ++produced;
        }
      });
    int consumed = 0;
    std::thread consumer([&] {
      while (true) {
        const bool last = done.load();
        for (const auto& c : pool.take_completed()) {
          // Every buffer arrives whole: its bytes are its producer's, its size says which.
          CHECK(c.data[0] == c.valid);
          CHECK(c.data[63] == c.valid);
          ++consumed;
          pool.release(c.data);
        }
        if (last) break;
        std::this_thread::yield();
      }
    });
    for (auto& t : ts) t.join();
    done.store(true);
    consumer.join();
    CHECK(consumed == produced.load());
    CHECK(produced + refused_here == producers * rounds);
    CHECK(pool.refused() == static_cast<std::uint64_t>(refused_here.load()));
    CHECK(pool.allocated() <= 16);
  }
}
