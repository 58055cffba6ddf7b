// What recording costs libtorch per op: a loop of torch::add on two 4-element tensors without
// grad (per-op costs dominate), alone, with an observer that records nothing (the runtime's own
// price for any observer), under PyTorch's collection (torch.profiler's: KINETO state, CPU
// activity) with shapes off and on, under the legacy profiler, and through tracemodel's
// observer without and with inputs. The collections' post-processing is not timed.
// The adapter first: it includes <ATen/core/ivalue.h>, which libtorch 1.13's <torch/torch.h>
// needs before it under clang 14 in C++20 (docs/libtorch.md).
#include <tracemodel/adapters/libtorch.hpp>

#include <torch/csrc/autograd/profiler_kineto.h>
#include <torch/csrc/autograd/profiler_legacy.h>
#include <torch/torch.h>
#include <tracemodel/memory.hpp>

#include <benchmark/benchmark.h>

#include <tracemodel/collect/materialize.hpp>

#include "libtorch/libtorch_net.hpp"  // (tests/): the tests' network and training step

namespace tmod = tracemodel;
namespace prof = torch::autograd::profiler;

namespace {

// As a program that analyses trace after trace (memory.hpp), set before any benchmark runs.
[[maybe_unused]] const bool program_memory = (tracemodel::program_memory_cache(), true);
constexpr std::int64_t ops = 200'000;

struct inputs {
  torch::Tensor a = torch::ones({4});
  torch::Tensor b = torch::ones({4});
};

void run(benchmark::State& state, const inputs& in) {
  for (auto _ : state) benchmark::DoNotOptimize(torch::add(in.a, in.b));
}

void add_none(benchmark::State& state) {
  const inputs in;
  run(state, in);
}

void add_empty_observer(benchmark::State& state, bool with_inputs) {
  const inputs in;
  const at::CallbackHandle h = at::addGlobalCallback(
      at::RecordFunctionCallback(
          [](const at::RecordFunction&) -> std::unique_ptr<at::ObserverContext> { return nullptr; },
          [](const at::RecordFunction&, at::ObserverContext*) {})
          .needsInputs(with_inputs));
  run(state, in);
  at::removeCallback(h);
}

void add_pytorch(benchmark::State& state, bool shapes) {
  const inputs in;
  prof::enableProfiler(
      prof::ProfilerConfig(prof::ProfilerState::KINETO, shapes, false, false, false, false),
      {torch::profiler::impl::ActivityType::CPU});
  run(state, in);
  benchmark::DoNotOptimize(prof::disableProfiler());  // (after the timed loop)
}

void add_pytorch_legacy_shapes(benchmark::State& state) {
  const inputs in;
  prof::enableProfilerLegacy(prof::ProfilerConfig(prof::ProfilerState::CPU, true));
  run(state, in);
  benchmark::DoNotOptimize(prof::disableProfilerLegacy());
}

template <bool Inputs>
void add_tracemodel(benchmark::State& state) {
  using queue_t = tmod::record_queue<tmod::default_schema, tmod::record_features{.inputs = Inputs},
                                     tmod::libtorch::policies>;
  const inputs in;
  {  // a session before: the pool holds recycled blocks, as in a profiler's steady state
    queue_t warm;
    tmod::libtorch::observer<queue_t> obs(warm);
    obs.start();
    for (std::int64_t k = 0; k < ops; ++k) benchmark::DoNotOptimize(torch::add(in.a, in.b));
    obs.stop();
    benchmark::DoNotOptimize(tmod::materialize(warm).size());
  }
  queue_t q;
  tmod::libtorch::observer<queue_t> obs(q);
  obs.start();
  run(state, in);
  obs.stop();
  benchmark::DoNotOptimize(tmod::materialize(q).size());
}
/// The tests' training step (a small CNN, SGD): per step, alone, with an empty observer (without
/// and with inputs asked), under PyTorch's collection with shapes, and through tracemodel's
/// observer with inputs.
enum class recorder {
  none,
  empty_observer,
  empty_observer_inputs,
  pytorch_shapes,
  tracemodel_inputs
};
void train_step(benchmark::State& state, recorder r) {
  torch::manual_seed(0);
  tmtest::trainer t;
  for (int k = 0; k < 3; ++k) t.step();
  using queue_t = tmod::record_queue<tmod::default_schema, tmod::record_features{.inputs = true},
                                     tmod::libtorch::policies>;
  queue_t q;
  tmod::libtorch::observer<queue_t> obs(q);
  at::CallbackHandle h = 0;
  switch (r) {
    case recorder::none:
      break;
    case recorder::empty_observer:
    case recorder::empty_observer_inputs:
      h = at::addGlobalCallback(
          at::RecordFunctionCallback(
              [](const at::RecordFunction&) -> std::unique_ptr<at::ObserverContext> {
                return nullptr;
              },
              [](const at::RecordFunction&, at::ObserverContext*) {})
              .needsInputs(r == recorder::empty_observer_inputs));
      break;
    case recorder::pytorch_shapes:
      prof::enableProfiler(
          prof::ProfilerConfig(prof::ProfilerState::KINETO, true, false, false, false, false),
          {torch::profiler::impl::ActivityType::CPU});
      break;
    case recorder::tracemodel_inputs:
      obs.start();
      break;
  }
  for (auto _ : state) t.step();
  if (h != 0) at::removeCallback(h);
  if (r == recorder::pytorch_shapes) benchmark::DoNotOptimize(prof::disableProfiler());
  obs.stop();
}
}  // namespace

BENCHMARK_CAPTURE(train_step, none, recorder::none)
    ->Name("libtorch/train_step/none")
    ->Iterations(200)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(train_step, empty_observer, recorder::empty_observer)
    ->Name("libtorch/train_step/empty_observer")
    ->Iterations(200)
    ->Unit(benchmark::kMicrosecond);
// The same asking for inputs: the dispatcher boxes every op's arguments (lists included).
BENCHMARK_CAPTURE(train_step, empty_observer_inputs, recorder::empty_observer_inputs)
    ->Name("libtorch/train_step/empty_observer_inputs")
    ->Iterations(200)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(train_step, pytorch_shapes, recorder::pytorch_shapes)
    ->Name("libtorch/train_step/pytorch_shapes")
    ->Iterations(200)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(train_step, tracemodel_inputs, recorder::tracemodel_inputs)
    ->Name("libtorch/train_step/tracemodel_inputs")
    ->Iterations(200)
    ->Unit(benchmark::kMicrosecond);

BENCHMARK(add_none)->Name("libtorch/add/none")->Iterations(ops);
BENCHMARK_CAPTURE(add_empty_observer, off, false)
    ->Name("libtorch/add/empty_observer")
    ->Iterations(ops);
// The same asking RecordFunction for the inputs: the dispatcher boxes the arguments.
BENCHMARK_CAPTURE(add_empty_observer, on, true)
    ->Name("libtorch/add/empty_observer_inputs")
    ->Iterations(ops);
BENCHMARK_CAPTURE(add_pytorch, off, false)->Name("libtorch/add/pytorch")->Iterations(ops);
BENCHMARK_CAPTURE(add_pytorch, on, true)->Name("libtorch/add/pytorch_shapes")->Iterations(ops);
BENCHMARK(add_pytorch_legacy_shapes)->Name("libtorch/add/pytorch_legacy_shapes")->Iterations(ops);
BENCHMARK(add_tracemodel<false>)->Name("libtorch/add/tracemodel")->Iterations(ops);
BENCHMARK(add_tracemodel<true>)->Name("libtorch/add/tracemodel_inputs")->Iterations(ops);

BENCHMARK_MAIN();
