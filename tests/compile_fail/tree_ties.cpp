// Must not compile: a tree policy whose tie rule has no `close_first`.
#include <tracemodel/algo/tree.hpp>

struct coin_flip {};
using policy = tracemodel::tree_policy<tracemodel::pid_tid_key, tracemodel::forward_thread_fallback,
                                       tracemodel::borrow_parent_end, coin_flip>;

int main() {
  tracemodel::event_table t;
  (void)tracemodel::build_tree(t, policy{});
}
