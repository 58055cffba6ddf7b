// Must not compile: a forward/backward policy without `visit_by_end`.
#include <string_view>

#include <tracemodel/algo/fwd_bwd.hpp>

struct my_links {
  using policy_kind = tracemodel::fwd_bwd_policy_kind;
  static constexpr std::string_view wrapper_prefix = "";
  static constexpr bool consume_on_match = true;
  using thread_resolver = tracemodel::literal_thread_ids;
};

int main() {
  tracemodel::event_table t;
  (void)tracemodel::link_forward_backward(t, my_links{});
}
