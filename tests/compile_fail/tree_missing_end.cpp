// Must not compile: a tree policy whose missing-end rule has no `borrow`.
#include <tracemodel/algo/tree.hpp>

struct guess_the_end {};
using policy = tracemodel::tree_policy<tracemodel::pid_tid_key, tracemodel::forward_thread_fallback,
                                       guess_the_end>;

int main() {
  tracemodel::event_table t;
  (void)tracemodel::build_tree(t, policy{});
}
