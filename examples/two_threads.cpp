// Records a few ops on two threads and prints the materialized events.
#include <cstdio>
#include <string>
#include <thread>

#include <tracemodel/collect.hpp>

int main() {
  tracemodel::record_queue<> queue;

  auto work = [&queue](const char* name) {
    TRACEMODEL_SCOPED_OP(queue, .name = name);
    TRACEMODEL_SCOPED_OP(queue, .name = "aten::matmul", .sequence_number = 1);
    TRACEMODEL_SCOPED_OP(queue, .name = "aten::mm");
  };
  std::thread a(work, "worker A");
  std::thread b(work, "worker B");
  a.join();
  b.join();

  tracemodel::event_table t = tracemodel::materialize(queue);
  std::printf("materialized %zu events\n", t.size());
  const std::int64_t t0 = t.empty() ? 0 : t[0].start_ns;
  for (const auto& e : t.events) {
    const auto& op = e.get<tracemodel::event_kind::op>();
    std::printf("  tid %llu  corr %4llu  +%9.3f us  %8.3f us  %s\n",
                static_cast<unsigned long long>(e.tid),
                static_cast<unsigned long long>(op.correlation_id),
                static_cast<double>(e.start_ns - t0) / 1e3,
                static_cast<double>(e.duration_ns()) / 1e3, std::string(t.name(e)).c_str());
  }
  return t.size() == 6 ? 0 : 1;
}
