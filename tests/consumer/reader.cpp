// Uses the installed compiled reader (tracemodel::reader): this unit includes the reader's
// declarations only, and reads a trace with the default schema and with one of its own.
#include <cstdio>

#include <tracemodel/formats/chrome_trace_reader.hpp>

#if !defined(TRACEMODEL_READER_COMPILED) || !TRACEMODEL_READER_COMPILED
#error "tracemodel::reader should define TRACEMODEL_READER_COMPILED"
#endif
#ifdef SIMDJSON_H
#error "the compiled reader's users should not include simdjson"
#endif

int main() {
  const char* json = R"({"traceEvents":[
    {"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":2,"ts":10,"dur":5},
    {"ph":"X","cat":"kernel","name":"gemm","pid":0,"tid":7,"ts":12,"dur":2}],
    "baseTimeNanoseconds":1000})";
  const tracemodel::event_table t = tracemodel::read_chrome_trace_string(json);
  if (t.size() != 2 || t.name(t[0]) != "aten::mm" || t[0].start_ns != 11000) {
    std::puts("unexpected events");
    return 1;
  }
  using ops_only = tracemodel::schema<tracemodel::event_kind::op>;
  const auto o = tracemodel::read_chrome_trace_string<ops_only>(json);
  if (o.size() != 1 || o.anomalies[tracemodel::anomaly::unsupported_record] != 1) {
    std::puts("unexpected events with a schema of ops");
    return 1;
  }
  std::printf("consumer reader ok: %zu events\n", t.size());
  return 0;
}
