// A synthetic but realistic training workload, generated deterministically, for the
// post-processing and pattern benchmarks. Per iteration and thread:
//
//   ProfilerStep#i                                  user annotation
//     forward                                       user annotation
//       4 x aten::linear (seq) > aten::t (seq) > aten::transpose
//                              > aten::addmm (seq) > aten::copy_ > cudaLaunchKernel ~> kernel
//           aten::relu (seq) > cudaLaunchKernel ~> kernel
//     backward                                      user annotation
//       12 x autograd::engine::evaluate_function: XBackward0
//              > XBackward0 (seq, fwd thread) > aten::mm > cudaLaunchKernel ~> kernel
//
// 103 events per iteration, depth 6, a fifth of them backward ops (wrappers included),
// one in five a device activity. Times are synthetic: events of a thread are 100 ns apart (plus
// 7 ns per thread index, so threads drift against each other); kernels run on stream 7. The
// generator drives a Sink:
//   begin(name, seq, fwd_tid, user_scope, backward, t)  end(t)
//   launch(t_call, t_call_end, correlation, t_kernel, t_kernel_end)
#pragma once

#include <cstdint>
#include <string>

namespace workload {

inline constexpr std::int64_t events_per_iteration = 103;

/// `thread_index` of `threads`: correlation ids are one dense process-wide sequence, as CUPTI's
/// (thread k gets k+1, k+1+threads, ...).
template <class Sink>
void generate(Sink& sink, std::int64_t events, std::uint64_t thread_small_id, int thread_index,
              int threads) {
  // Threads start at different times and run at slightly different rates.
  std::int64_t t = 1'000'000'000 + 12'345 * thread_index;
  const std::int64_t step = 100 + 7 * thread_index;
  std::int64_t emitted = 0;
  std::uint64_t corr = static_cast<std::uint64_t>(thread_index) + 1;
  std::int64_t seq = 0;
  const char* bwd_names[3] = {"TBackward0", "AddmmBackward0", "ReluBackward0"};
  const char* wrappers[3] = {"autograd::engine::evaluate_function: TBackward0",
                             "autograd::engine::evaluate_function: AddmmBackward0",
                             "autograd::engine::evaluate_function: ReluBackward0"};
  auto begin = [&](const char* name, std::int64_t s, bool user, bool backward) {
    sink.begin(name, s, backward ? thread_small_id : 0, user, backward, t);
    t += step;
    ++emitted;
  };
  auto end = [&] {
    sink.end(t);
    t += step;
  };
  auto launch = [&] {
    sink.launch(t, t + 200, corr, t + 1000, t + 3000);
    corr += static_cast<std::uint64_t>(threads);
    t += 300;
    emitted += 2;
  };
  // (`emitted` grows inside the lambdas above: a loop condition on it reads, to clang's loop
  // analysis, as one that never changes.)
  for (std::int64_t it = 0;; ++it) {
    if (emitted >= events) break;
    sink.step_name(it);
    begin(nullptr, -1, true, false);  // ProfilerStep#it (name from step_name)
    begin("forward", -1, true, false);
    const std::int64_t first_seq = seq;
    for (int layer = 0; layer < 4; ++layer) {
      begin("aten::linear", seq, false, false);
      begin("aten::t", seq, false, false);
      begin("aten::transpose", -1, false, false);
      end();
      end();
      begin("aten::addmm", seq + 1, false, false);
      begin("aten::copy_", -1, false, false);
      launch();
      end();
      end();
      end();
      begin("aten::relu", seq + 2, false, false);
      launch();
      end();
      seq += 3;
    }
    end();  // forward
    begin("backward", -1, true, false);
    for (std::int64_t s = seq - 1; s >= first_seq; --s) {
      const int k = static_cast<int>((s - first_seq) % 3);
      begin(wrappers[k], -1, false, false);
      begin(bwd_names[k], s, false, true);
      begin("aten::mm", -1, false, false);
      launch();
      end();
      end();
      end();
    }
    end();  // backward
    end();  // ProfilerStep
  }
}

}  // namespace workload
