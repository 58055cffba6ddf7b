// Must not compile: key averages counting events by something that cannot be asked about one.
#include <tracemodel/algo/key_averages.hpp>

struct every_other {
  bool operator()(int) const { return true; }
};
int main() {
  tracemodel::event_table t;
  (void)tracemodel::key_averages(t, {}, every_other{});
}
