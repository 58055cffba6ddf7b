// Must not compile: a device link policy with every member but its kind (`policy_kind`), which is
// what the algorithms and `analyze` tell policies apart by.
#include <tracemodel/algo/flows.hpp>

struct my_device_links {
  static constexpr bool use_flows = true;
  static constexpr bool use_correlation = true;
  static constexpr bool use_external_id = false;
  static constexpr bool link_runtime_calls = true;
  static constexpr bool inherit_thread = false;
};
int main() {
  tracemodel::event_table t;
  (void)tracemodel::link_device_activities(t, my_device_links{});
}
