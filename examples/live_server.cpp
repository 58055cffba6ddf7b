// A server that records all the time: worker threads handle requests (a `request` op around
// `parse`, `compute#k` and `respond`) into a live queue while a consumer thread drains it into a
// Chrome trace streamed to files rotated every 256 KiB. The queue holds at most 64 blocks; a
// worker that finds them all in use waits for the consumer (nothing is dropped). At the end the
// files are read back and every op is found in them.
//
//   live_server [OUT_DIR]
#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include <tracemodel/collect/live_queue.hpp>
#include <tracemodel/formats/chrome_trace_reader.hpp>
#include <tracemodel/formats/chrome_trace_stream.hpp>

namespace tmod = tracemodel;

int main(int argc, char** argv) {
  const std::string dir = argc > 1 ? argv[1] : ".";
  tmod::live_queue_options qo;
  qo.block_records = 256;
  qo.max_blocks = 64;
  qo.policy = tmod::when_full::wait;
  qo.block_timeout = std::chrono::milliseconds(2000);
  tmod::live_queue<> queue(qo);

  tmod::chrome_trace_stream_options so;
  so.rotate_bytes = 256 << 10;
  tmod::chrome_trace_stream stream(dir + "/live_server.json", so);
  auto write = [&](tmod::event_table&& part) { stream.write(part); };

  std::atomic<bool> stopping{false};
  std::thread consumer([&] {
    while (!stopping.load())
      if (queue.wait_sealed(std::chrono::milliseconds(20))) queue.drain(write);
  });

  constexpr int workers = 4, requests = 2000;
  std::vector<std::thread> pool;
  for (int w = 0; w < workers; ++w)
    pool.emplace_back([&, w] {
      for (int k = 0; k < requests; ++k) {
        const tmod::live_handle request = queue.begin_op({.name = "request", .sequence_number = k});
        queue.end_op(queue.begin_op({.name = "parse"}));
        const std::string step = "compute#" + std::to_string((w * requests + k) % 7);
        queue.end_op(queue.begin_op({.name = step, .copy_name = true}));
        queue.end_op(queue.begin_op({.name = "respond"}));
        queue.end_op(request);
      }
    });
  for (std::thread& t : pool) t.join();
  stopping = true;
  consumer.join();
  queue.close(write);
  stream.close();

  std::size_t events = 0;
  for (const std::string& f : stream.files()) events += tmod::read_chrome_trace_file(f).size();
  const tmod::live_counts c = queue.counts();
  std::printf("%d requests: %zu events in %zu files, %llu lost, %llu unfinished\n",
              workers * requests, events, stream.files().size(),
              static_cast<unsigned long long>(c.dropped_ops + c.dropped_ends + c.evicted_ops),
              static_cast<unsigned long long>(c.unfinished));
  return events == c.begun && events == c.ended ? 0 : 1;
}
