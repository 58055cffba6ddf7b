// Must not compile: an argument of `analyze` that is no policy and no options.
#include <tracemodel/algo/analyze.hpp>

int main() {
  tracemodel::event_table t;
  (void)tracemodel::analyze(t, tracemodel::sibling_ties_tree{}, 42);
}
