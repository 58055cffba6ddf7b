// Must not compile: a pattern without `name()`. The test checks that the compiler's message is
// the library's own sentence, not pages of template text alone.
#include <tracemodel/algo/patterns.hpp>

struct nameless {
  std::string_view description() const { return "d"; }
  template <class S>
  bool match(const tracemodel::tree_view<S>&, tracemodel::event_index) {
    return true;
  }
};

int main() {
  tracemodel::event_table t;
  const tracemodel::tree_view v(t);
  nameless p;
  (void)tracemodel::find_patterns(v, tracemodel::pattern_context{}, p);
}
