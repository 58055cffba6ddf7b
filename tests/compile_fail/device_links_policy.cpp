// Must not compile: a device link policy without `inherit_thread`.
#include <tracemodel/algo/flows.hpp>

struct my_device_links {
  using policy_kind = tracemodel::device_link_policy_kind;
  static constexpr bool use_flows = true;
  static constexpr bool use_correlation = true;
  static constexpr bool use_external_id = false;
  static constexpr bool link_runtime_calls = true;
};

int main() {
  tracemodel::event_table t;
  (void)tracemodel::link_device_activities(t, my_device_links{});
}
