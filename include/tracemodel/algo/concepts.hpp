// tracemodel/algo — every policy concept of the algorithms, and the checks their entry points
// make.
//
// A policy is a type whose static members an algorithm reads; it is passed as an argument, the
// same way everywhere:
//
//   tracemodel::build_tree(table, tracemodel::pytorch_tree{});
//   tracemodel::link_forward_backward(table, tracemodel::pytorch_1_13_links{});
//   tracemodel::analyze(table, tracemodel::pytorch_tree{}, tracemodel::correlation_device_links{});
//
// Its kind is named by a member type, `using policy_kind = tracemodel::tree_policy_kind;` (or
// `fwd_bwd_policy_kind`, `device_link_policy_kind`): the library's policies have it, a policy
// derived from one inherits it, and `analyze` tells its arguments apart by it alone.
//
// Each entry point checks its policies with one `static_assert` per missing piece, whose message
// names the piece, and compiles nothing else for a policy that fails (no wall of template text
// after the message). tests/compile_fail/ holds one program per policy kind that must fail with
// its message.
#pragma once

#include <concepts>
#include <cstdint>
#include <optional>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "tracemodel/config.hpp"
#include "tracemodel/fwd.hpp"
#include "tracemodel/model/event.hpp"
#include "tracemodel/model/types.hpp"

TRACEMODEL_BEGIN_NAMESPACE

// ---- kinds ------------------------------------------------------------------------------------

/// The kinds of the algorithms' policies (a policy's `policy_kind`).
struct tree_policy_kind {};
struct fwd_bwd_policy_kind {};
struct device_link_policy_kind {};

/// `P` says it is a policy of kind `Kind`.
template <class P, class Kind>
concept policy_of_kind = requires {
  typename P::policy_kind;
}
&&std::same_as<typename P::policy_kind, Kind>;

// ---- the tree builder (algo/tree.hpp) -------------------------------------------------------

/// Which events share a stack: `key(pid, tid)` names the stack.
template <class P>
concept thread_key_policy = requires(process_key pid, thread_key tid) {
  { P::key(pid, tid) } -> std::same_as<std::pair<std::uint64_t, std::uint64_t>>;
};
/// Where an event with nothing open on its thread looks next: a thread, or none.
template <class P>
concept fallback_policy = requires(const basic_event<default_schema>& e) {
  { P::thread(e) } -> std::same_as<std::optional<thread_key>>;
};
/// Whether an op that never ended borrows its parent's end.
template <class P>
concept missing_end_policy = requires {
  { P::borrow } -> std::convertible_to<bool>;
};
/// Whether ends at t close before starts at t.
template <class P>
concept tie_policy = requires {
  { P::close_first } -> std::convertible_to<bool>;
};
/// A tree builder's policy: the four above as member types (see `tree_policy`).
template <class P>
concept tree_builder_policy = policy_of_kind<P, tree_policy_kind> && requires {
  typename P::thread_key_type;
  typename P::fallback_type;
  typename P::missing_end_type;
  typename P::ties_type;
} && thread_key_policy<typename P::thread_key_type> && fallback_policy<typename P::fallback_type> &&
    missing_end_policy<typename P::missing_end_type> && tie_policy<typename P::ties_type>;

// ---- the forward/backward linker (algo/fwd_bwd.hpp) -----------------------------------------

/// How a backward op's forward thread id names a thread of the table.
template <class P>
concept thread_resolver_policy = requires(std::uint64_t id,
                                          const std::vector<thread_key>& threads) {
  { P::resolve(id, threads) } -> std::same_as<thread_key>;
};
template <class P>
concept fwd_bwd_policy = policy_of_kind<P, fwd_bwd_policy_kind> && requires {
  { P::wrapper_prefix } -> std::convertible_to<std::string_view>;
  { P::visit_by_end } -> std::convertible_to<bool>;
  { P::consume_on_match } -> std::convertible_to<bool>;
  typename P::thread_resolver;
} && thread_resolver_policy<typename P::thread_resolver>;

// ---- the host/device linker (algo/flows.hpp) ------------------------------------------------

template <class P>
concept device_link_policy = policy_of_kind<P, device_link_policy_kind> && requires {
  { P::use_flows } -> std::convertible_to<bool>;
  { P::use_correlation } -> std::convertible_to<bool>;
  { P::use_external_id } -> std::convertible_to<bool>;
  { P::link_runtime_calls } -> std::convertible_to<bool>;
  { P::inherit_thread } -> std::convertible_to<bool>;
};

// ---- patterns (algo/patterns.hpp) -----------------------------------------------------------

template <class Schema>
class tree_view;
/// Traversal orders of the pattern matcher.
struct depth_first {};
struct breadth_first {};
namespace detail {
template <class P>
struct traversal_of {
  using type = depth_first;
};
template <class P>
requires requires { typename P::traversal; }
struct traversal_of<P> {
  using type = typename P::traversal;
};
}  // namespace detail
template <class P>
using traversal_of_t = typename detail::traversal_of<std::remove_cvref_t<P>>::type;

/// Something that can be asked about one node.
template <class P, class Schema = default_schema>
concept tree_predicate = requires(P& p, const tree_view<Schema>& v, event_index i) {
  { p.match(v, i) } -> std::convertible_to<bool>;
};
/// A pattern: a named, described predicate.
template <class P, class Schema = default_schema>
concept pattern = tree_predicate<P, Schema> && requires(const P& p) {
  { p.name() } -> std::convertible_to<std::string_view>;
  { p.description() } -> std::convertible_to<std::string_view>;
};

// ---- event filters (algo/key_averages.hpp) ---------------------------------------------------

/// Which events of a table count: `f(table, event)` says.
template <class F, class Schema>
concept event_filter = requires(F& f, const basic_event_table<Schema>& t,
                                const basic_event<Schema>& e) {
  { f(t, e) } -> std::convertible_to<bool>;
};

// ---- the checks -----------------------------------------------------------------------------

namespace detail {

template <class P>
consteval bool check_tree_policy() {
  static_assert(policy_of_kind<P, tree_policy_kind>,
                "tracemodel tree policy: needs `using policy_kind = "
                "tracemodel::tree_policy_kind` (tree_policy<...> has it)");
  constexpr bool key = requires { typename P::thread_key_type; };
  constexpr bool fallback = requires { typename P::fallback_type; };
  constexpr bool missing = requires { typename P::missing_end_type; };
  constexpr bool ties = requires { typename P::ties_type; };
  static_assert(key,
                "tracemodel tree policy: needs `using thread_key_type = ...` (pid_tid_key, "
                "tid_key, or a type with `static std::pair<uint64_t, uint64_t> "
                "key(process_key, thread_key)`)");
  static_assert(fallback,
                "tracemodel tree policy: needs `using fallback_type = ...` "
                "(forward_thread_fallback, no_fallback, or a fallback_policy)");
  static_assert(missing,
                "tracemodel tree policy: needs `using missing_end_type = ...` "
                "(borrow_parent_end, keep_missing_end, or a missing_end_policy)");
  static_assert(ties,
                "tracemodel tree policy: needs `using ties_type = ...` (ties_child, "
                "ties_sibling, or a tie_policy)");
  if constexpr (key)
    static_assert(thread_key_policy<typename P::thread_key_type>,
                  "tracemodel tree policy: thread_key_type needs `static std::pair<uint64_t, "
                  "uint64_t> key(process_key, thread_key)`");
  if constexpr (fallback)
    static_assert(fallback_policy<typename P::fallback_type>,
                  "tracemodel tree policy: fallback_type needs `static "
                  "std::optional<thread_key> thread(const Event&)`");
  if constexpr (missing)
    static_assert(missing_end_policy<typename P::missing_end_type>,
                  "tracemodel tree policy: missing_end_type needs `static constexpr bool borrow`");
  if constexpr (ties)
    static_assert(tie_policy<typename P::ties_type>,
                  "tracemodel tree policy: ties_type needs `static constexpr bool close_first`");
  return tree_builder_policy<P>;
}

template <class P>
consteval bool check_fwd_bwd_policy() {
  static_assert(policy_of_kind<P, fwd_bwd_policy_kind>,
                "tracemodel forward/backward policy: needs `using policy_kind = "
                "tracemodel::fwd_bwd_policy_kind` (derive from pytorch_links to have it)");
  static_assert(
      requires {
        { P::wrapper_prefix } -> std::convertible_to<std::string_view>;
      },
      "tracemodel forward/backward policy: needs `static constexpr std::string_view "
      "wrapper_prefix` (\"\" for no wrappers)");
  static_assert(
      requires {
        { P::visit_by_end } -> std::convertible_to<bool>;
      },
      "tracemodel forward/backward policy: needs `static constexpr bool visit_by_end`");
  static_assert(
      requires {
        { P::consume_on_match } -> std::convertible_to<bool>;
      },
      "tracemodel forward/backward policy: needs `static constexpr bool "
      "consume_on_match`");
  constexpr bool resolver = requires { typename P::thread_resolver; };
  static_assert(resolver,
                "tracemodel forward/backward policy: needs `using thread_resolver = "
                "...` (runtime_thread_ids, literal_thread_ids)");
  if constexpr (resolver)
    static_assert(thread_resolver_policy<typename P::thread_resolver>,
                  "tracemodel forward/backward policy: thread_resolver needs `static thread_key "
                  "resolve(std::uint64_t, const std::vector<thread_key>&)`");
  return fwd_bwd_policy<P>;
}

template <class P>
consteval bool check_device_link_policy() {
  static_assert(policy_of_kind<P, device_link_policy_kind>,
                "tracemodel device link policy: needs `using policy_kind = "
                "tracemodel::device_link_policy_kind` (derive from pytorch_device_links to have "
                "it)");
  static_assert(
      requires {
        { P::use_flows } -> std::convertible_to<bool>;
      },
      "tracemodel device link policy: needs `static constexpr bool use_flows`");
  static_assert(
      requires {
        { P::use_correlation } -> std::convertible_to<bool>;
      },
      "tracemodel device link policy: needs `static constexpr bool use_correlation`");
  static_assert(
      requires {
        { P::use_external_id } -> std::convertible_to<bool>;
      },
      "tracemodel device link policy: needs `static constexpr bool use_external_id`");
  static_assert(
      requires {
        { P::link_runtime_calls } -> std::convertible_to<bool>;
      },
      "tracemodel device link policy: needs `static constexpr bool "
      "link_runtime_calls`");
  static_assert(
      requires {
        { P::inherit_thread } -> std::convertible_to<bool>;
      },
      "tracemodel device link policy: needs `static constexpr bool inherit_thread`");
  return device_link_policy<P>;
}

template <class F, class Schema>
consteval bool check_event_filter() {
  static_assert(event_filter<F, Schema>,
                "tracemodel event filter: needs `bool operator()(const Table&, const Event&)` "
                "(count_ops, count_spans, or a callable of a table and one of its events)");
  return event_filter<F, Schema>;
}

template <class P, class Schema>
consteval bool check_pattern() {
  static_assert(
      requires(const P& p) {
        { p.name() } -> std::convertible_to<std::string_view>;
      },
      "tracemodel pattern: needs `name() const` returning a string (the name in reports)");
  static_assert(
      requires(const P& p) {
        { p.description() } -> std::convertible_to<std::string_view>;
      },
      "tracemodel pattern: needs `description() const` returning a string (the advice)");
  static_assert(
      requires(P & p, const tree_view<Schema>& v, event_index i) {
        { p.match(v, i) } -> std::convertible_to<bool>;
      },
      "tracemodel pattern: needs `bool match(const tracemodel::tree_view<Schema>&, event_index)`");
  static_assert(std::is_same_v<traversal_of_t<P>, depth_first> ||
                    std::is_same_v<traversal_of_t<P>, breadth_first>,
                "tracemodel pattern: `traversal` must be depth_first or breadth_first");
  return pattern<P, Schema>;
}

}  // namespace detail
TRACEMODEL_END_NAMESPACE
