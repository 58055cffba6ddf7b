// Uses the installed cupti component: the adapter says whether GPU tracing is possible here.
#include <cstdio>

#include <tracemodel/adapters/cupti.hpp>
#include <tracemodel/collect.hpp>

int main() {
  tracemodel::record_queue<tracemodel::default_schema, tracemodel::record_features{},
                           tracemodel::cupti::record_policies<>>
      queue;
  tracemodel::cupti::adapter<decltype(queue)> gpu(queue);
  const tracemodel::cupti::status s = gpu.enable();
  std::printf("cupti consumer: %s\n", s.message.c_str());
  gpu.disable();
  return 0;
}
