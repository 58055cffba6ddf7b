// Real GPU activities into the model: a few kernels, a memcpy and a memset inside recorded
// ops on two streams, traced through the CUPTI adapter, then checked by the program itself:
// every device activity has a launch parent and an op ancestor, the Chrome trace has an `ac2g`
// flow per launch, and no record was dropped. It also measures what the adapter adds to a
// kernel launch. Without a GPU it says why tracing is unavailable and stops (exit 0).
//
//   cupti_kernels [--out DIR]
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <tracemodel/adapters/cupti.hpp>
#include <tracemodel/algo/analyze.hpp>
#include <tracemodel/collect.hpp>
#include <tracemodel/formats/chrome_trace_writer.hpp>

#include "kernels.hpp"

namespace tmod = tracemodel;
using queue_type = tmod::record_queue<tmod::default_schema, tmod::record_features{},
                                      tmod::cupti::record_policies<>>;

namespace {
double launch_ns(int launches) {
  gpu::synchronize();
  const auto a = std::chrono::steady_clock::now();
  for (int i = 0; i < launches; ++i) gpu::launch_empty();
  const auto b = std::chrono::steady_clock::now();
  gpu::synchronize();
  return std::chrono::duration<double, std::nano>(b - a).count() / launches;
}
}  // namespace

int main(int argc, char** argv) {
  std::filesystem::path out = argc > 2 && std::string(argv[1]) == "--out" ? argv[2] : ".";
  queue_type queue;
  queue.stop();  // a queue records from its creation: here only the steps below are recorded
  tmod::cupti::adapter<queue_type> adapter(queue);
  const tmod::cupti::status s = adapter.enable();
  if (!s) {
    std::printf("cupti_kernels: %s\n", s.message.c_str());
    std::printf("cupti_kernels: no GPU here; the run is left for a machine with one\n");
    return 0;
  }
  constexpr int n = 1 << 20;
  if (const int e = gpu::init(n); e != 0) {
    std::printf("cupti_kernels: CUDA initialisation failed (%d)\n", e);
    return 1;
  }
  std::vector<float> host(n, 1.0f);
  const double before = launch_ns(2000);  // warm, with the adapter on, the queue stopped

  queue.start();
  int launches = 0;
  for (int step = 0; step < 3; ++step) {
    TRACEMODEL_SCOPED_OP(queue, .name = "ProfilerStep", .scope = tmod::op_scope::user_scope);
    {
      TRACEMODEL_SCOPED_OP(queue, .name = "aten::copy_");
      gpu::copy_in(host.data(), 0);
      ++launches;
    }
    {
      TRACEMODEL_SCOPED_OP(queue, .name = "aten::zero_");
      gpu::zero_y(1);
      ++launches;
    }
    {
      TRACEMODEL_SCOPED_OP(queue, .name = "aten::mul_");
      gpu::scale_x(2.0f, 0);
      ++launches;
    }
    gpu::synchronize();
    {
      TRACEMODEL_SCOPED_OP(queue, .name = "aten::add_");
      gpu::saxpy_xy(0.5f, 1);
      ++launches;
    }
    {
      TRACEMODEL_SCOPED_OP(queue, .name = "aten::sum");
      gpu::sum_y(1);
      launches += 2;
    }
    gpu::synchronize();
  }
  queue.stop();
  const double with_ops = [&] {
    queue.start();
    gpu::synchronize();
    const auto a = std::chrono::steady_clock::now();
    for (int i = 0; i < 2000; ++i) {
      TRACEMODEL_SCOPED_OP(queue, .name = "empty");
      gpu::launch_empty();
    }
    const auto b = std::chrono::steady_clock::now();
    gpu::synchronize();
    queue.stop();
    return std::chrono::duration<double, std::nano>(b - a).count() / 2000;
  }();
  adapter.disable();
  const double after = launch_ns(2000);  // the adapter off
  gpu::release();

  tmod::event_table t = tmod::materialize(queue);
  tmod::analyze(t);
  std::size_t device = 0, orphan = 0, no_op = 0;
  for (std::size_t i = 0; i < t.size(); ++i) {
    const auto* d = t.events[i].get_if<tmod::event_kind::device_activity>();
    if (d == nullptr) continue;
    if (d->activity != tmod::activity_type::kernel &&
        d->activity != tmod::activity_type::gpu_memcpy &&
        d->activity != tmod::activity_type::gpu_memset)
      continue;
    ++device;
    const tmod::event_index launch = t.events[i].parent;
    if (launch == tmod::no_event || !t.events[launch].is<tmod::event_kind::device_activity>()) {
      ++orphan;
      continue;
    }
    bool op = false;
    for (tmod::event_index p = t.events[launch].parent; p != tmod::no_event && !op;
         p = t.events[p].parent)
      op = t.events[p].is<tmod::event_kind::op>();
    no_op += op ? 0 : 1;
  }
  const std::string json = tmod::chrome_trace_string(t);
  std::size_t flows = 0;  // flow starts of the ac2g category
  constexpr std::string_view start = "{\"ph\":\"s\"", ac2g = "\"cat\":\"ac2g\"";
  for (std::size_t p = json.find(start); p != std::string::npos; p = json.find(start, p + 1))
    flows += json.compare(json.find("\"cat\":", p), ac2g.size(), ac2g) == 0 ? 1 : 0;
  tmod::write_chrome_trace_file(t, (out / "cupti_kernels_trace.json").string());
  const auto st = adapter.stats();
  std::printf(
      "events %zu, device activities %zu (launch parent missing: %zu, op ancestor missing: %zu)\n",
      t.size(), device, orphan, no_op);
  std::printf("ac2g flows %zu for %d launches in ops (+ %d empty kernels)\n", flows, launches,
              2000);
  std::printf("CUPTI records %llu, buffers %llu, dropped %llu, buffer requests refused %llu\n",
              static_cast<unsigned long long>(st.decoding.records),
              static_cast<unsigned long long>(st.buffers_completed),
              static_cast<unsigned long long>(st.dropped),
              static_cast<unsigned long long>(st.buffers_refused));
  const std::uint64_t outside = t.anomalies[tmod::anomaly::outside_recording];
  std::printf("CUPTI records of the warm-up, launched while the queue was stopped, dropped: %llu\n",
              static_cast<unsigned long long>(outside));
  std::printf(
      "kernel launch: %.0f ns with the adapter, %.0f ns with adapter + recorded op, %.0f ns "
      "without\n",
      before, with_ops, after);
  const bool ok = device >= static_cast<std::size_t>(launches + 2000) && orphan == 0 &&
                  no_op == 0 && flows >= static_cast<std::size_t>(launches + 2000) &&
                  st.dropped == 0 && st.buffers_refused == 0 &&
                  outside >= 2 * 2000;  // the warm-up's launches and kernels
  std::printf("cupti_kernels: %s\n",
              ok ? "every device activity has a launch parent and an op ancestor" : "FAILED");
  return ok ? 0 : 1;
}
