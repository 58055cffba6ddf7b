// Everything the batch queue records, the live queue records too: the same calls from several
// threads (ops with inputs, call stacks, module frames and extra args; allocations,
// out-of-memory records, device activities and host calls) into a record_queue and a
// live_queue give the same events, drained while the threads record or not.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <regex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include <tracemodel/collect/live_queue.hpp>
#include <tracemodel/collect/materialize.hpp>
#include <tracemodel/collect/record_queue.hpp>
#include <tracemodel/formats/chrome_trace_writer.hpp>

#include "../collect/test_values.hpp"
#include "../support/sanitized.hpp"

using namespace tracemodel;

namespace live_kinds_test {

struct ns_policies : default_record_policies {
  using clock = steady_clock_source;  // ticks in ns: a device record's duration is exact in both
  using value_traits = tmtest::value_traits;
};
using batch_t = record_queue<default_schema, record_features::all(), ns_policies>;
using live_t = live_queue<record_features::all(), ns_policies>;

/// What both queues must agree on, per event: its Chrome trace line without its start (each
/// queue converts ticks through its own sync points), a host event's duration (each queue reads
/// the clock itself) and the correlation ids each queue takes on its own (a device record's
/// given ones stay), sorted.
std::vector<std::string> canonical(const event_table& t) {
  const std::string json = chrome_trace_string(t);
  static const std::regex start(R"("ts":[-0-9.]+,)");
  static const std::regex duration(R"("dur":[-0-9.]+,)");
  static const std::regex external(R"("External id":[0-9]+,?)");
  std::vector<std::string> lines;
  for (std::size_t at = json.find("\n{"); at != std::string::npos;) {
    const std::size_t end = json.find('\n', at + 1);
    std::string line = json.substr(at + 1, end - at - 1);
    at = end == std::string::npos || json.compare(end, 2, "\n{") != 0 ? std::string::npos : end;
    const bool device = line.find("\"cat\":\"kernel\"") != std::string::npos ||
                        line.find("\"cat\":\"cuda_runtime\"") != std::string::npos;
    if (!line.empty() && line.back() == ',') line.pop_back();  // (the last event has none)
    line = std::regex_replace(line, start, "");
    if (!device) line = std::regex_replace(line, duration, "");
    lines.push_back(std::regex_replace(line, external, ""));
  }
  std::sort(lines.begin(), lines.end());
  return lines;
}

/// Thread `t`'s calls, the same into both queues.
template <class Q>
void record_calls(Q& q, int t, int ops) {
  const std::string name = fmt::format("op{}", t);
  for (int k = 0; k < ops; ++k) {
    const tmtest::value in[2]{tmtest::value::tensor({k % 4, t + 1}, {}, 1),
                              tmtest::value::scalar_of(scalar_value::integer(k))};
    const auto h = q.begin_op({.name = k % 2 == 0 ? std::string_view(name) : "aten::mm",
                               .sequence_number = k,
                               .copy_name = k % 2 == 0},
                              std::span<const tmtest::value>(in));
    if (k % 3 == 0) {
      const std::string_view frames[2]{"train.py(1): step", "net.py(9): forward"};
      q.record_call_stack(h, frames);
      const std::string_view modules[1]{"Net.fc"};
      q.record_module_hierarchy(h, modules);
      const extra_arg args[2]{extra_arg::integer("n", k), extra_arg::string("s", name)};
      q.record_extra_args(h, args);
    }
    q.record_allocation(0x1000u * static_cast<unsigned>(t + 1) + static_cast<unsigned>(k) * 64,
                        64 + k, 1000 + k, 4096, k % 2 == 0 ? 0 : 1, k % 2 == 0 ? -1 : 0);
    if (k % 50 == 49) q.record_out_of_memory(1 << 30, 1000 + k, 4096, 1, 0);
    const std::uint64_t corr =
        static_cast<std::uint64_t>(t) * 100000 + static_cast<std::uint64_t>(k) + 1;
    device_record launch{};
    launch.start = Q::clock::now();
    launch.end = launch.start + 700;
    launch.name = "cudaLaunchKernel";
    launch.name_len = 16;
    launch.activity = activity_type::cuda_runtime;
    launch.correlation_id = corr;
    launch.cbid = 211;
    launch.host_thread = true;
    launch.tid = detail::os_thread_id();  // the runtime's id of this thread, in both
    q.record_device(launch);
    device_record kernel = launch;
    kernel.start = launch.start + 5000;
    kernel.end = kernel.start + 1234;
    const std::string kname = fmt::format("kernel_{}", k % 7);
    kernel.name = kname.c_str();
    kernel.name_len = static_cast<std::uint32_t>(kname.size());
    kernel.activity = activity_type::kernel;
    kernel.host_thread = false;
    kernel.cbid = 0;
    kernel.pid = 0;
    kernel.tid = 7;
    kernel.stream = 7;
    kernel.grid[0] = static_cast<std::uint32_t>(k);
    kernel.block[0] = 128;
    kernel.registers = 32;
    q.record_device(kernel);
    q.end_op(h);
  }
}

}  // namespace live_kinds_test

TEST_CASE("live queue: allocations, out-of-memory and device records as the batch queue's") {
  using namespace live_kinds_test;
  const int ops = static_cast<int>(tmtest::scaled(600));
  for (const bool draining : {false, true}) {
    CAPTURE(draining);
    batch_t batch;
    live_t live({.block_records = 64, .side_words = 1024});
    table_sink parts;
    std::atomic<bool> done{false};
    std::thread consumer([&] {
      while (draining && !done.load())
        if (live.wait_sealed(std::chrono::milliseconds(1))) live.drain(parts);
    });
    std::vector<std::thread> threads;
    for (int t = 0; t < 3; ++t)
      threads.emplace_back([&, t] {
        record_calls(batch, t, ops);
        record_calls(live, t, ops);
      });
    for (std::thread& th : threads) th.join();
    done = true;
    consumer.join();
    live.close(parts);
    const event_table want = materialize(batch);
    const live_counts c = live.counts();
    CHECK(c.other == static_cast<std::uint64_t>(3 * (3 * ops + ops / 50)));
    CHECK(c.ended == static_cast<std::uint64_t>(3 * ops));
    CHECK(c.dropped_ops == 0);
    CHECK(parts.table.size() == want.size());
    const auto got_lines = canonical(parts.table), want_lines = canonical(want);
    CHECK(got_lines.size() == want_lines.size());
    std::size_t differ = 0;
    for (std::size_t k = 0; k < std::min(got_lines.size(), want_lines.size()); ++k)
      if (got_lines[k] != want_lines[k] && differ++ < 3)
        MESSAGE("live:  " << got_lines[k] << "\nbatch: " << want_lines[k]);
    CHECK(differ == 0);
  }
}
