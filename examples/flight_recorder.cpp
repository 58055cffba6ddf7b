// A flight recorder: a render loop keeps its last frames in a live queue capped at 16 blocks
// that overwrites the oldest. A frame that misses its 10 ms deadline raises a signal; the
// application's own handler (the library installs none) asks the recorder for a dump, one
// atomic store, safe in a signal handler; a dump thread then writes what the recorder holds to
// a file, which is read back: the late frame is in it, with the frames before it, and the op a
// loader thread is stuck in (its block never fills: the dump reads it where it stands).
//
//   flight_recorder [OUT_DIR]
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>

#include <tracemodel/collect/live_queue.hpp>
#include <tracemodel/formats/chrome_trace_reader.hpp>
#include <tracemodel/formats/chrome_trace_writer.hpp>

namespace tmod = tracemodel;

namespace {
tmod::live_queue<>* recorder = nullptr;
extern "C" void on_deadline_missed(int) { recorder->request_dump(); }
}  // namespace

int main(int argc, char** argv) {
  const std::string path = std::string(argc > 1 ? argv[1] : ".") + "/flight_recorder.json";
  tmod::live_queue_options qo;
  qo.block_records = 64;
  qo.max_blocks = 16;  // 16 blocks of 64 records: the last ~1,000 ops
  qo.policy = tmod::when_full::overwrite_oldest;
  static tmod::live_queue<> queue(qo);
  recorder = &queue;
  std::signal(SIGUSR1, on_deadline_missed);

  std::atomic<bool> done{false}, dumped{false};
  std::thread dump_thread([&] {
    while (!done.load()) {
      if (queue.take_dump_request()) {
        tmod::write_chrome_trace_file(queue.dump(), path);
        dumped = true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  });

  // A loader that begins an op and waits in it until the end: it never records again.
  std::mutex m;
  std::condition_variable cv;
  bool loading = false;
  std::thread loader([&] {
    const tmod::live_handle h = queue.begin_op({.name = "load_assets"});
    std::unique_lock lock(m);
    loading = true;
    cv.notify_all();
    cv.wait(lock, [&] { return done.load(); });
    queue.end_op(h);
  });
  {
    std::unique_lock lock(m);
    cv.wait(lock, [&] { return loading; });
  }

  constexpr int late_frame = 700;
  for (int k = 0; k < 1000 && !dumped.load(); ++k) {
    const auto t0 = std::chrono::steady_clock::now();
    const std::string name = "frame#" + std::to_string(k);
    const tmod::live_handle frame = queue.begin_op({.name = name, .copy_name = true});
    queue.end_op(queue.begin_op({.name = "update"}));
    const tmod::live_handle draw = queue.begin_op({.name = "draw"});
    if (k == late_frame) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    queue.end_op(draw);
    queue.end_op(frame);
    if (std::chrono::steady_clock::now() - t0 > std::chrono::milliseconds(10))
      std::raise(SIGUSR1);  // the deadline was missed
    if (k > late_frame) std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  {
    const std::lock_guard lock(m);
    done = true;
  }
  cv.notify_all();
  loader.join();
  dump_thread.join();
  if (!dumped) return 1;

  const tmod::event_table t = tmod::read_chrome_trace_file(path);
  int first = -1, last = -1;
  bool late = false, stuck = false;
  for (const auto& e : t.events) {
    const std::string_view n = t.name(e);
    stuck = stuck || n == "load_assets";
    if (!n.starts_with("frame#")) continue;
    const int k = std::stoi(std::string(n.substr(6)));
    if (first < 0 || k < first) first = k;
    last = std::max(last, k);
    late = late || (k == late_frame && e.end_ns() - e.start_ns > 15'000'000);
  }
  const tmod::live_counts c = queue.counts();
  std::printf(
      "dumped %zu events: frames %d to %d, the late frame %d in it: %s; the loader's open op: "
      "%s; %llu older ops overwritten\n",
      t.size(), first, last, late_frame, late ? "yes" : "no", stuck ? "yes" : "no",
      static_cast<unsigned long long>(c.evicted_ops));
  return late && stuck && first < late_frame && c.evicted_ops > 0 ? 0 : 1;
}
