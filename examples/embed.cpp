// Another profiler's events, fed straight into the model: no recording layer.
//
// `foreign` stands for whatever a profiler already has (here: ops with microsecond times, a
// sequence number for autograd and a launch correlation for the GPU). Each event becomes a row
// of an event table; tracemodel's algorithms link and nest them and the writer exports a
// Kineto-flavoured trace that Perfetto and chrome://tracing open.
#include <cstdio>
#include <string>
#include <vector>

#include <tracemodel/algo/analyze.hpp>
#include <tracemodel/algo/key_averages.hpp>
#include <tracemodel/formats/chrome_trace_writer.hpp>

namespace tmod = tracemodel;

struct foreign {  // one event of the other profiler
  const char* name;
  int thread;
  double start_us, dur_us;
  long seq = -1;             // autograd sequence number (-1: none)
  int fwd_thread = 0;        // > 0: a backward op, run for this forward thread
  unsigned long launch = 0;  // GPU correlation: a launch (cpu side) or a kernel (gpu side)
  bool gpu = false;
};

int main(int argc, char** argv) {
  const std::vector<foreign> events = {
      {"forward", 1, 0, 100},
      {"aten::mm", 1, 10, 40, 7},
      {"cudaLaunchKernel", 1, 20, 5, -1, 0, 501},
      {"sgemm_kernel", 9, 30, 25, -1, 0, 501, true},
      {"aten::relu", 1, 60, 20, 8},
      {"MmBackward0", 2, 150, 30, 7, 1},
      {"ReluBackward0", 2, 120, 20, 8, 1},
  };

  tmod::event_table t;
  for (const foreign& f : events) {
    auto& e = t.events.emplace_back();
    e.start_ns = static_cast<std::int64_t>(f.start_us * 1000);
    e.tid = static_cast<tmod::thread_key>(f.thread);
    e.pid = 1;
    const std::int64_t end = e.start_ns + static_cast<std::int64_t>(f.dur_us * 1000);
    if (f.launch != 0) {
      auto& d =
          e.fields.emplace<tmod::default_schema::index_of<tmod::event_kind::device_activity>>();
      d.name = t.strings.intern(f.name);
      d.activity = f.gpu ? tmod::activity_type::kernel : tmod::activity_type::cuda_runtime;
      d.correlation_id = f.launch;
      d.end_ns = end;
      d.device = f.gpu ? 0 : -1;
      if (f.gpu) e.pid = 0;  // the device is a process of its own in Kineto's layout
    } else {
      auto& op = e.fields.emplace<tmod::default_schema::index_of<tmod::event_kind::op>>();
      op.name = t.strings.intern(f.name);
      op.sequence_number = f.seq;
      op.fwd_thread_id = static_cast<std::uint64_t>(f.fwd_thread);
      op.end_ns = end;
    }
  }
  t.set_process_name(1, "other profiler");

  const tmod::analysis a = tmod::analyze(t);
  std::printf("%zu events, %zu forward/backward links, %zu host/device links, %zu roots\n",
              t.size(), a.fwd_bwd.links, a.device.links(), a.tree.roots);
  for (const tmod::flow_link& l : t.links)
    std::printf("  %s -> %s\n", std::string(t.name(l.from)).c_str(),
                std::string(t.name(l.to)).c_str());
  std::fputs(tmod::format_key_averages(tmod::key_averages(t), 5).c_str(), stdout);
  const std::string path = argc > 1 ? argv[1] : "embed_trace.json";
  tmod::write_chrome_trace_file(t, path);
  std::printf("wrote %s\n", path.c_str());
}
