// Uses the installed package: records, materializes, checks.
#include <cstdio>

#include <tracemodel/tracemodel.hpp>

int main() {
  tracemodel::record_queue<> q;
  {
    TRACEMODEL_SCOPED_OP(q, .name = "consumer::outer");
    TRACEMODEL_SCOPED_OP(q, .name = "consumer::inner");
  }
  tracemodel::event_table t = tracemodel::materialize(q);
  if (!tracemodel::collection_enabled) {  // the package was built with recording compiled out
    std::printf("consumer ok: recording compiled out, %zu events\n", t.size());
    return t.size() == 0 ? 0 : 1;
  }
  if (t.size() != 2 || t.name(t[0]) != "consumer::outer") {
    std::puts("unexpected events");
    return 1;
  }
  std::printf("consumer ok: %zu events, tracemodel %d.%d.%d\n", t.size(), tracemodel::version_major,
              tracemodel::version_minor, tracemodel::version_patch);
  return 0;
}
