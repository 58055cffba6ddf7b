// libtorch recorded through tracemodel: a small convolutional network (torch::nn) trains for a
// few steps with SGD; the RecordFunction observer records every op with its inputs into a record
// queue, and every allocation and free; then the usual analysis (call tree, forward/backward
// links, key averages with their memory columns, PyTorch's anti-patterns), where the memory
// went (by PyTorch's memory profiler's categories), and a Kineto trace, read back and checked.
//
//   libtorch_train [OUT_DIR]
// The adapter first: it includes <ATen/core/ivalue.h>, which libtorch 1.13's <torch/torch.h>
// needs before it under clang 14 in C++20 (docs/libtorch.md).
#include <tracemodel/adapters/libtorch.hpp>

#include <torch/torch.h>

#include <cstdio>
#include <string>

#include <tracemodel/algo/analyze.hpp>
#include <tracemodel/algo/key_averages.hpp>
#include <tracemodel/algo/memory_timeline.hpp>
#include <tracemodel/algo/patterns.hpp>
#include <tracemodel/algo/pytorch_patterns.hpp>
#include <tracemodel/collect/materialize.hpp>
#include <tracemodel/formats/chrome_trace_reader.hpp>
#include <tracemodel/formats/chrome_trace_writer.hpp>

namespace tmod = tracemodel;

namespace {
struct NetImpl : torch::nn::Module {
  NetImpl()
      : conv(register_module("conv", torch::nn::Conv2d(torch::nn::Conv2dOptions(1, 8, 3)))),
        fc(register_module("fc", torch::nn::Linear(8 * 13 * 13, 10))) {}
  torch::Tensor forward(torch::Tensor x) {
    x = torch::max_pool2d(torch::relu(conv->forward(x)), 2);
    return torch::log_softmax(fc->forward(x.flatten(1)), 1);
  }
  torch::nn::Conv2d conv;
  torch::nn::Linear fc;
};
TORCH_MODULE(Net);

using queue_t = tmod::record_queue<tmod::default_schema, tmod::record_features{.inputs = true},
                                   tmod::libtorch::policies>;
}  // namespace

int main(int argc, char** argv) {
  const std::string path = std::string(argc > 1 ? argv[1] : ".") + "/libtorch_train.json";
  torch::manual_seed(0);
  Net net;
  torch::optim::SGD optimizer(net->parameters(), torch::optim::SGDOptions(0.01).momentum(0.5));
  const torch::Tensor x = torch::randn({16, 1, 28, 28});
  const torch::Tensor y = torch::randint(0, 10, {16});

  queue_t queue;
  tmod::libtorch::observer<queue_t> observer(queue, {.memory = true});
  observer.start();
  float first = 0, last = 0;
  constexpr int steps = 4;
  for (int k = 0; k < steps; ++k) {
    RECORD_USER_SCOPE("ProfilerStep#" + std::to_string(k));
    optimizer.zero_grad();
    torch::Tensor loss = torch::nll_loss(net->forward(x), y);
    loss.backward();
    optimizer.step();
    (k == 0 ? first : last) = loss.item<float>();
  }
  observer.stop();

  tmod::event_table t = tmod::materialize(queue);
  const tmod::analysis a = tmod::analyze(t);
  tmod::write_chrome_trace_file(t, path);
  std::printf("libtorch_train: %d steps of a small CNN, loss %.3f -> %.3f\n", steps,
              static_cast<double>(first), static_cast<double>(last));
  std::size_t ops = 0, roots = 0, with_inputs = 0, allocations = 0;
  for (const auto& e : t.events) {
    ops += e.is<tmod::event_kind::op>();
    roots += e.parent == tmod::no_event;
    with_inputs += !t.inputs_of(e).empty();
    allocations += e.is<tmod::event_kind::allocation>();
  }
  std::printf(
      "recorded %zu ops (%zu with inputs), %zu allocations and frees, %zu roots, %zu "
      "forward/backward links\n",
      ops, with_inputs, allocations, roots, a.fwd_bwd.links);
  const tmod::memory_timeline_result m = tmod::memory_timeline(t);
  std::printf("memory: peak %s;", tmod::format_memory(m.peak.bytes).c_str());
  for (std::size_t c = 0; c < tmod::memory_categories; ++c)
    if (m.peak.by_category[c] != 0)
      std::printf(" %s %s", tmod::memory_category_names[c].data(),
                  tmod::format_memory(m.peak.by_category[c]).c_str());
  std::printf("\n");
  std::fputs("key averages, top 6 by self time:\n", stdout);
  std::fputs(
      tmod::format_key_averages(tmod::key_averages(t, {.sort = tmod::sort_by::self}), 6).c_str(),
      stdout);
  const tmod::tree_view view(t);
  auto patterns = tmod::pytorch_patterns();
  const tmod::pattern_context context = tmod::context_of(t);
  std::fputs(tmod::format_pattern_report(tmod::find_patterns(view, context, patterns)).c_str(),
             stdout);

  // The trace, read back: every op, the steps as roots.
  const tmod::event_table back = tmod::read_chrome_trace_file(path);
  std::size_t steps_back = 0;
  for (const auto& e : back.events) steps_back += back.name(e).starts_with("ProfilerStep#");
  const bool ok = back.size() == t.size() && steps_back == steps && roots == steps &&
                  a.fwd_bwd.links > 0 && with_inputs > 0 && allocations > 0 &&
                  m.peak.by_category[std::size_t(tmod::memory_category::parameter)] > 0;
  std::printf("trace %s: %zu events read back, %zu steps: %s\n", path.c_str(), back.size(),
              steps_back, ok ? "ok" : "MISMATCH");
  return ok ? 0 : 1;
}
