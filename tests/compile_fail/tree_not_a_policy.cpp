// Must not compile: something that is not a tree policy given to the tree builder.
#include <tracemodel/algo/tree.hpp>

struct my_rules {
  static constexpr bool close_first = true;  // a tie rule, not a whole tree policy
};

int main() {
  tracemodel::event_table t;
  (void)tracemodel::build_tree(t, my_rules{});
}
