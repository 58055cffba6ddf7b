// Must not compile: record policies whose clock has no `ticks_are_ns`.
#include <tracemodel/collect.hpp>

struct wall_clock {
  static tracemodel::approx_time now() noexcept { return 0; }
};
struct policies : tracemodel::default_record_policies {
  using clock = wall_clock;
};

int main() {
  tracemodel::record_queue<tracemodel::default_schema, tracemodel::record_features{}, policies> q;
  q.end_op(q.begin_op({.name = "op"}));
}
