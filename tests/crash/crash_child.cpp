// A recorder for the crash tests (tests/crash/crash.cpp): records from several threads into a
// live queue with a crash file until it is killed, or dies by its own hand inside an op.
//
//   crash_child FILE MODE THREADS POLICY
//     MODE: run (until killed), segv or abort (raised inside an op by thread 0 after 300 ops),
//           serve (no crash file: FILE is ignored; the main thread writes a dump when
//           `live_dump_signal` asks for one, as docs/recording.md shows)
//     POLICY: drop (drop_newest) or overwrite (overwrite_oldest)
//
// Every op carries its thread's index (`fwd_thread_id`) and its number on that thread
// (`sequence_number`); thread t's op k has one input, a tensor of sizes {k % 7, t}: what the
// test checks the recovered ops against. A byte on standard output says that every thread has
// recorded.
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include <tracemodel/collect/live_queue.hpp>
#include <tracemodel/formats/chrome_trace_writer.hpp>

#include "../collect/test_values.hpp"

namespace {
struct policies : tracemodel::default_record_policies {
  using value_traits = tmtest::value_traits;
};
using queue_t = tracemodel::live_queue<tracemodel::record_features{.inputs = true}, policies>;
queue_t* queue = nullptr;
extern "C" void on_dump_signal(int) { queue->request_dump(); }
}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: crash_child FILE run|segv|abort THREADS drop|overwrite\n");
    return 2;
  }
  const std::string mode = argv[2];
  const int threads = std::atoi(argv[3]);
  const bool overwrite = std::strcmp(argv[4], "overwrite") == 0;
  const bool serve = mode == "serve";
  queue = new queue_t({.block_records = 256,
                       .side_words = 2048,
                       .max_blocks = 48,
                       .policy = overwrite ? tracemodel::when_full::overwrite_oldest
                                           : tracemodel::when_full::drop_newest,
                       .crash_file = serve ? std::string() : std::string(argv[1])});
  if (serve) std::signal(tracemodel::live_dump_signal, on_dump_signal);
  std::atomic<int> started{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([t, threads, serve, &started, &mode] {
      for (std::int64_t k = 0;; ++k) {
        const tmtest::value in[1]{tmtest::value::tensor({k % 7, t}, {}, 0)};
        const auto fwd = static_cast<std::uint64_t>(t);
        if (t == 0 && k == 300 && mode != "run") {
          (void)queue->begin_op({.name = "crashing", .sequence_number = k, .fwd_thread_id = fwd},
                                std::span<const tmtest::value>(in));
          if (mode == "segv") std::raise(SIGSEGV);
          std::abort();
        }
        const tracemodel::live_handle outer =
            queue->begin_op({.name = "outer", .sequence_number = k, .fwd_thread_id = fwd},
                            std::span<const tmtest::value>(in));
        const tracemodel::live_handle inner = queue->begin_op(
            {.name = "inner", .sequence_number = k, .fwd_thread_id = fwd, .copy_name = k % 3 == 0},
            std::span<const tmtest::value>(in));
        queue->end_op(inner);
        queue->end_op(outer);
        if (k == 10 && started.fetch_add(1) + 1 == threads) {
          const char ready = 'r';
          (void)!::write(1, &ready, 1);
        }
        if (mode != "run" && t != 0) std::this_thread::sleep_for(std::chrono::microseconds(50));
        if (serve) std::this_thread::sleep_for(std::chrono::microseconds(200));
      }
    });
  while (serve) {  // the process's own consumer answers dumps asked for from outside
    if (queue->take_dump_request())
      tracemodel::write_chrome_trace_file(queue->dump(), tracemodel::live_dump_path(::getpid()));
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  for (std::thread& th : pool) th.join();  // (never: killed, or dead by its own hand)
  return 0;
}
