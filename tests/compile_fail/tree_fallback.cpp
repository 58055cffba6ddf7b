// Must not compile: a tree policy whose fallback has no `thread(event)`.
#include <tracemodel/algo/tree.hpp>

struct nowhere {};
using policy = tracemodel::tree_policy<tracemodel::pid_tid_key, nowhere>;

int main() {
  tracemodel::event_table t;
  (void)tracemodel::build_tree(t, policy{});
}
