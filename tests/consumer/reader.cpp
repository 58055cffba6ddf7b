// Uses the installed compiled reader and analysis (tracemodel::reader, tracemodel::analysis):
// this unit includes the reader's declarations only, reads a trace with the default schema and
// with one of its own, and analyses the first with the analysis the library holds.
#include <cstdio>

#include <tracemodel/algo/analyze.hpp>
#include <tracemodel/formats/chrome_trace_reader.hpp>

#if !defined(TRACEMODEL_READER_COMPILED) || !TRACEMODEL_READER_COMPILED || \
    !defined(TRACEMODEL_ANALYZE_COMPILED) || !TRACEMODEL_ANALYZE_COMPILED
#error "tracemodel::reader and tracemodel::analysis should define their macros"
#endif
#ifdef SIMDJSON_H
#error "the compiled reader's users should not include simdjson"
#endif

int main() {
  const char* json = R"({"traceEvents":[
    {"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":2,"ts":10,"dur":5},
    {"ph":"X","cat":"cpu_op","name":"aten::add","pid":1,"tid":2,"ts":11,"dur":2},
    {"ph":"X","cat":"kernel","name":"gemm","pid":0,"tid":7,"ts":12,"dur":2}],
    "baseTimeNanoseconds":1000})";
  tracemodel::event_table t = tracemodel::read_chrome_trace_string(json);
  if (t.size() != 3 || t.name(t[0]) != "aten::mm" || t[0].start_ns != 11000) {
    std::puts("unexpected events");
    return 1;
  }
  using ops_only = tracemodel::schema<tracemodel::event_kind::op>;
  const auto o = tracemodel::read_chrome_trace_string<ops_only>(json);
  if (o.size() != 2 || o.anomalies[tracemodel::anomaly::unsupported_record] != 1) {
    std::puts("unexpected events with a schema of ops");
    return 1;
  }
  tracemodel::analyze(t);
  if (t.children_of(0).size() != 1 || t.children_of(0)[0] != 1) {
    std::puts("unexpected tree");
    return 1;
  }
  std::printf("consumer reader ok: %zu events\n", t.size());
  return 0;
}
