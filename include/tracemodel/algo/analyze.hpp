// tracemodel/algo — the usual post-processing in one call.
//
//   tracemodel::analysis a = tracemodel::analyze(table);
//   tracemodel::analyze(table, tracemodel::correlation_device_links{});
//   tracemodel::analyze_options one_thread;
//   one_thread.threads = 1;
//   tracemodel::analyze(table, one_thread);
//
// Writes into the table exactly what these three write, called in this order (each header says
// what it writes and which policies it takes):
//
//   tracemodel::link_forward_backward(table, link_policy);    // algo/fwd_bwd.hpp
//   tracemodel::link_device_activities(table, device_policy); // algo/flows.hpp
//   tracemodel::build_tree(table, tree_policy);               // algo/tree.hpp
//
// and returns their three stats. The policies come in any order after the table, at most one of
// each kind (a tree policy, a forward/backward policy, a device link policy: the kind each names
// in its `policy_kind`, algo/concepts.hpp), with the `analyze_options` if any; a kind left out
// takes PyTorch's (`pytorch_tree`, `pytorch_links`,
// `pytorch_device_links`). It is faster than the three calls: they run fused, and the
// forward/backward linker on a second thread when the options allow one
// (algo/detail/engine.hpp says how; tests hold the two equal).
#pragma once

#include <cstddef>
#include <type_traits>

#include "tracemodel/algo/concepts.hpp"
#include "tracemodel/algo/detail/engine.hpp"
#include "tracemodel/algo/flows.hpp"
#include "tracemodel/algo/fwd_bwd.hpp"
#include "tracemodel/algo/tree.hpp"
#include "tracemodel/config.hpp"
#include "tracemodel/model/table.hpp"
#include "tracemodel/threads.hpp"

TRACEMODEL_BEGIN_NAMESPACE

/// What `analyze` did: the stats of each of the three algorithms.
struct analysis {
  fwd_bwd_stats fwd_bwd;
  device_link_stats device;
  tree_stats tree;
};

/// The threads `analyze` may use (`threads = 1`: the calling thread alone).
struct analyze_options : thread_options {};

namespace detail {
/// The one argument of `Args` that models `Is`, else `Default`.
template <template <class> class Is, class Default, class... Args>
struct pick_policy {
  using type = Default;
};
template <template <class> class Is, class Default, class A, class... Args>
struct pick_policy<Is, Default, A, Args...> {
  using type =
      std::conditional_t<Is<A>::value, A, typename pick_policy<Is, Default, Args...>::type>;
};
template <class P>
struct is_tree_arg : std::bool_constant<policy_of_kind<P, tree_policy_kind>> {};
template <class P>
struct is_links_arg : std::bool_constant<policy_of_kind<P, fwd_bwd_policy_kind>> {};
template <class P>
struct is_device_arg : std::bool_constant<policy_of_kind<P, device_link_policy_kind>> {};
template <class P>
struct is_options_arg : std::is_same<P, analyze_options> {};

template <class... Args>
consteval bool check_analyze_args() {
  constexpr bool known = ((is_tree_arg<Args>::value + is_links_arg<Args>::value +
                               is_device_arg<Args>::value + is_options_arg<Args>::value ==
                           1) &&
                          ...);
  static_assert(known,
                "tracemodel::analyze(table, args...): each argument after the table is a "
                "policy whose `policy_kind` is tree_policy_kind, fwd_bwd_policy_kind or "
                "device_link_policy_kind, or analyze_options");
  constexpr bool once =
      (is_tree_arg<Args>::value + ... + 0) <= 1 && (is_links_arg<Args>::value + ... + 0) <= 1 &&
      (is_device_arg<Args>::value + ... + 0) <= 1 && (is_options_arg<Args>::value + ... + 0) <= 1;
  static_assert(once,
                "tracemodel::analyze(table, args...): at most one policy of each kind, and "
                "one analyze_options");
  return known && once;
}

/// The `analyze_options` among `args`, or the defaults.
template <class... Args>
analyze_options options_of(const Args&... args) {
  analyze_options o;
  (
      [&] {
        if constexpr (std::is_same_v<Args, analyze_options>) o = args;
      }(),
      ...);
  return o;
}
}  // namespace detail

struct analyze_fn {
  template <class Schema, class... Args>
  analysis operator()(basic_event_table<Schema>& t, const Args&... args) const {
    analysis a;
    if constexpr (detail::check_analyze_args<Args...>()) {
      using tree_p = typename detail::pick_policy<detail::is_tree_arg, pytorch_tree, Args...>::type;
      using links_p =
          typename detail::pick_policy<detail::is_links_arg, pytorch_links, Args...>::type;
      using device_p =
          typename detail::pick_policy<detail::is_device_arg, pytorch_device_links, Args...>::type;
      if constexpr (detail::check_tree_policy<tree_p>() &&
                    detail::check_fwd_bwd_policy<links_p>() &&
                    detail::check_device_link_policy<device_p>())
        detail::run_analysis<tree_p, links_p, device_p>(t, a, detail::options_of(args...),
                                                        detail::engine_options{});
    }
    return a;
  }
};

/// Forward/backward links, device links and the call tree (see the header comment).
inline constexpr analyze_fn analyze{};

TRACEMODEL_END_NAMESPACE

#if defined(TRACEMODEL_ANALYZE_COMPILED) && TRACEMODEL_ANALYZE_COMPILED
// `analyze(t)` with the default policies on a table of the default schema is compiled once, in
// the library's unit (src/analyze.cpp, CMake's `tracemodel::analysis`): units that include this
// header do not compile the engine for it. Other policies and schemas compile where they are used.
TRACEMODEL_BEGIN_NAMESPACE
extern template void
detail::run_analysis<pytorch_tree, pytorch_links, pytorch_device_links, analysis, default_schema>(
    basic_event_table<default_schema>&, analysis&, const thread_options&,
    const detail::engine_options&);
TRACEMODEL_END_NAMESPACE
#endif
