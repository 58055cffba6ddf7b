// The libtorch component: libtorch's ops recorded through an installed tracemodel.
// (The adapter first: clang 14 cannot compile <ATen/ATen.h> alone in C++20, an incomplete
// c10::IValue; the adapter's includes complete it.)
#include <tracemodel/adapters/libtorch.hpp>
#include <tracemodel/collect/materialize.hpp>

#include <ATen/ATen.h>

#include <cstdio>

int main() {
  using queue_t = tracemodel::record_queue<tracemodel::default_schema,
                                           tracemodel::record_features{.inputs = true},
                                           tracemodel::libtorch::policies>;
  queue_t queue;
  tracemodel::libtorch::observer<queue_t> observer(queue);
  const at::Tensor a = at::ones({4});
  observer.start();
  const at::Tensor b = at::add(a, a);
  observer.stop();
  const tracemodel::event_table t = tracemodel::materialize(queue);
  std::size_t adds = 0;
  for (const auto& e : t.events) adds += t.name(e) == "aten::add" && t.inputs_of(e).size() == 3;
  std::printf("consumer_libtorch: %zu aten::add with its 3 inputs, sum %.0f\n", adds,
              b.sum().item<double>());
  return adds == 1 ? 0 : 1;
}
