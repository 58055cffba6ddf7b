// Must not compile: an argument of `analyze` that looks like a tree policy (it has the members)
// but does not say its kind.
#include <tracemodel/algo/analyze.hpp>

struct my_tree {
  using thread_key_type = tracemodel::pid_tid_key;
  using fallback_type = tracemodel::no_fallback;
  using missing_end_type = tracemodel::keep_missing_end;
  using ties_type = tracemodel::ties_child;
};
int main() {
  tracemodel::event_table t;
  (void)tracemodel::analyze(t, my_tree{});
}
