// Must not compile: value traits without `scalar(v)`, used to record inputs.
#include <span>
#include <string_view>

#include <tracemodel/collect.hpp>

struct value {};
struct traits {
  static tracemodel::input_kind kind(const value&) { return tracemodel::input_kind::other; }
  static tracemodel::tensor_info tensor(const value&) { return {}; }
  template <class F>
  static void for_each_element(const value&, F&&) {}
  static std::string_view dtype_name(std::uint8_t) { return "float"; }
};
struct policies : tracemodel::default_record_policies {
  using value_traits = traits;
};

int main() {
  tracemodel::record_queue<tracemodel::default_schema, tracemodel::record_features{.inputs = true},
                           policies>
      q;
  const value v[1]{};
  q.end_op(q.begin_op({.name = "op"}, std::span<const value>(v)));
}
