// Must not compile: a tree policy whose thread key has no `key(pid, tid)`.
#include <tracemodel/algo/tree.hpp>

struct by_name {};  // not a thread key policy
using policy = tracemodel::tree_policy<by_name>;

int main() {
  tracemodel::event_table t;
  (void)tracemodel::build_tree(t, policy{});
}
