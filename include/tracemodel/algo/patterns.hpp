// tracemodel/algo — the pattern matcher: find anti-patterns in a built call tree.
//
// A pattern is any type with
//
//   std::string_view name() const;          // printed in reports ("For Loop Indexing Pattern")
//   std::string_view description() const;   // what to do about a match
//   bool match(const tree_view<S>&, event_index);
//
// and, optionally,
//
//   std::optional<std::string> skip(const pattern_context&) const;  // a reason to skip, or none
//   void prepare(const tree_view<S>&, const pattern_context&);      // before each traversal
//   std::string report(const tree_view<S>&, event_index, std::string_view location) const;
//   using traversal = breadth_first;                                 // default: depth_first
//   bool enabled;                                                    // false: skipped
//
// `find_patterns(view, context, p1, p2, ...)` evaluates a compile-time list of patterns in one
// traversal per order (one depth-first walk for all depth-first patterns, one breadth-first walk
// for the rest); a pattern may keep state between calls of `match` (a visited set, say).
// `pattern<P>` is the concept; `find_patterns` checks each requirement with its own message.
//
// Building blocks compose without new types: `all_of`, `any_of`, `not_`, `sibling_sequence`,
// `name_is`, `name_starts_with`, `name_ends_with`, `name_matches`, `kind_is`, `parent_is`,
// `first_child_is`, `last_child_is`, `has_descendant`, and `rule(name, description, predicate,
// needs)` makes a pattern of a predicate. PyTorch's patterns are in `pytorch_patterns.hpp`.
//
// The view needs a built tree (`build_tree` or `analyze`). Children are in the tree's order
// (start time); the roots of a thread, in start order, are siblings of each other.
#pragma once

#include <algorithm>
#include <array>
#include <concepts>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <regex>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <unordered_set>
#include <utility>
#include <vector>

#include "tracemodel/algo/concepts.hpp"
#include "tracemodel/config.hpp"
#include "tracemodel/model/device.hpp"
#include "tracemodel/model/table.hpp"

TRACEMODEL_BEGIN_NAMESPACE

// ---- what a trace offers --------------------------------------------------------------------

/// What the patterns' skip conditions look at, and their options.
struct pattern_context {
  bool has_shapes = false;  ///< some op carries its inputs (PyTorch: record_shapes)
  bool has_stack = false;   ///< script frames were recorded (PyTorch: with_stack)
  std::vector<device_info> devices;
  /// Frames whose file starts with this are the framework's, not the user's.
  std::string framework_prefix = "torch/";

  [[nodiscard]] bool has_tf32_device() const noexcept {
    return std::any_of(devices.begin(), devices.end(),
                       [](const device_info& d) { return d.supports_tf32(); });
  }
};

/// Reads `has_shapes` and `has_stack` off a table; the devices come from the caller (a trace
/// file's `deviceProperties`, or what the runtime knows).
template <class Schema>
pattern_context context_of(const basic_event_table<Schema>& t,
                           std::vector<device_info> devices = {}) {
  pattern_context c;
  c.devices = std::move(devices);
  for (const auto& e : t.events) {
    if (const auto* op = e.template get_if<event_kind::op>(); op != nullptr && op->inputs.size > 0)
      c.has_shapes = true;
    if (e.template is<event_kind::script_call>()) c.has_stack = true;
    if (c.has_shapes && c.has_stack) break;
  }
  return c;
}

/// What a pattern needs of the trace; a pattern whose needs are not met is skipped.
namespace needs {
inline constexpr unsigned nothing = 0;
inline constexpr unsigned shapes = 1;       ///< ops with inputs
inline constexpr unsigned stack = 2;        ///< script frames
inline constexpr unsigned tf32_device = 4;  ///< a device that supports TF32
}  // namespace needs

/// The reason a pattern with `needs_mask` is skipped in `c`, or none.
inline std::optional<std::string> unmet_needs(unsigned needs_mask, const pattern_context& c) {
  if ((needs_mask & needs::shapes) != 0 && !c.has_shapes)
    return "needs input shapes; the trace has none";
  if ((needs_mask & needs::stack) != 0 && !c.has_stack)
    return "needs script frames; the trace has none";
  if ((needs_mask & needs::tf32_device) != 0 && !c.has_tf32_device())
    return "needs a device that supports TF32; the trace shows none";
  return std::nullopt;
}

// ---- the read-only tree view ----------------------------------------------------------------

template <class Schema = default_schema>
class tree_view {
 public:
  using table_type = basic_event_table<Schema>;
  using event_type = typename table_type::event_type;

  explicit tree_view(const table_type& t)
      : t_(&t), pos_(t.size(), 0), key_(t.size(), 0), parent_(t.size()) {
    const std::size_t n = t.size();
    const auto strings = static_cast<std::uint32_t>(t.strings.size());
    for (std::size_t i = 0; i < n; ++i) {
      const auto& e = t.events[i];
      parent_[i] = e.parent;
      key_[i] = e.visit([&](const auto& f) -> std::uint32_t {
        if constexpr (requires { f.name; }) {
          if constexpr (std::is_same_v<std::remove_cvref_t<decltype(f.name)>, name_id>)
            return static_cast<std::uint32_t>(f.name);
        }
        return strings + static_cast<std::uint32_t>(e.fields.index());
      });
      const auto kids = t.children_of(static_cast<event_index>(i));
      for (std::uint32_t k = 0; k < kids.size(); ++k) pos_[kids[k]] = k;
    }
    keys_ = strings + static_cast<std::uint32_t>(Schema::size);
    // Roots grouped by thread (threads in order of their first root), each group in start order.
    std::vector<event_index> all;
    for (std::size_t i = 0; i < n; ++i)
      if (parent_[i] == no_event) all.push_back(static_cast<event_index>(i));
    std::stable_sort(all.begin(), all.end(), [&t](event_index a, event_index b) {
      return t.events[a].start_ns < t.events[b].start_ns;
    });
    std::map<std::pair<process_key, thread_key>, std::vector<event_index>> by_thread;
    std::vector<std::pair<process_key, thread_key>> order;
    for (event_index r : all) {
      const auto key = std::make_pair(t.events[r].pid, t.events[r].tid);
      auto [it, inserted] = by_thread.try_emplace(key);
      if (inserted) order.push_back(key);
      it->second.push_back(r);
    }
    for (const auto& key : order) {
      const auto& members = by_thread[key];
      const auto first = static_cast<std::uint32_t>(roots_.size());
      groups_.push_back({first, static_cast<std::uint32_t>(members.size())});
      for (std::uint32_t k = 0; k < members.size(); ++k) {
        roots_.push_back(members[k]);
        pos_[members[k]] = k;
        root_group_.emplace_back(members[k], static_cast<std::uint32_t>(groups_.size() - 1));
      }
    }
    std::sort(root_group_.begin(), root_group_.end());
    all_roots_ = std::move(all);
  }

  [[nodiscard]] const table_type& table() const noexcept { return *t_; }
  [[nodiscard]] std::size_t size() const noexcept { return t_->size(); }
  [[nodiscard]] const event_type& event(event_index i) const noexcept { return t_->events[i]; }
  [[nodiscard]] std::string_view name(event_index i) const noexcept {
    return t_->name(t_->events[i]);
  }
  /// A number per distinct name (the name's string id; kinds without a name field get one per
  /// kind), below `name_keys()`: lets a pattern cache facts per name instead of per event.
  [[nodiscard]] std::uint32_t name_key(event_index i) const noexcept { return key_[i]; }
  [[nodiscard]] std::uint32_t name_keys() const noexcept { return keys_; }

  [[nodiscard]] event_index parent(event_index i) const noexcept { return parent_[i]; }
  [[nodiscard]] std::span<const event_index> children(event_index i) const noexcept {
    return t_->children_of(i);
  }
  /// The children of `i`'s parent, or the roots of `i`'s thread; `i` is among them.
  [[nodiscard]] std::span<const event_index> siblings(event_index i) const noexcept {
    const event_index p = parent(i);
    if (p != no_event) return children(p);
    const auto it = std::lower_bound(root_group_.begin(), root_group_.end(),
                                     std::make_pair(i, std::uint32_t{0}));
    const group g = groups_[it->second];
    return {roots_.data() + g.first, g.size};
  }
  /// `i`'s position among its siblings.
  [[nodiscard]] std::size_t position(event_index i) const noexcept { return pos_[i]; }
  [[nodiscard]] std::span<const event_index> siblings_before(event_index i) const noexcept {
    return siblings(i).first(pos_[i]);
  }
  [[nodiscard]] std::span<const event_index> siblings_after(event_index i) const noexcept {
    return siblings(i).subspan(pos_[i] + 1);
  }
  [[nodiscard]] event_index prev_sibling(event_index i) const noexcept {
    return pos_[i] == 0 ? no_event : siblings(i)[pos_[i] - 1];
  }
  [[nodiscard]] event_index next_sibling(event_index i) const noexcept {
    const auto s = siblings(i);
    return pos_[i] + 1 < s.size() ? s[pos_[i] + 1] : no_event;
  }
  [[nodiscard]] event_index root_of(event_index i) const noexcept {
    while (parent(i) != no_event) i = parent(i);
    return i;
  }
  /// Every root, in start order.
  [[nodiscard]] std::span<const event_index> roots() const noexcept { return all_roots_; }
  /// The roots of one thread; threads are numbered in order of their first root.
  [[nodiscard]] std::size_t thread_count() const noexcept { return groups_.size(); }
  [[nodiscard]] std::span<const event_index> thread_roots(std::size_t k) const noexcept {
    return {roots_.data() + groups_[k].first, groups_[k].size};
  }

 private:
  struct group {
    std::uint32_t first;
    std::uint32_t size;
  };
  const table_type* t_;
  detail::scratch_vector<std::uint32_t> pos_;
  detail::scratch_vector<std::uint32_t> key_;
  // The parents, copied out of the 112-byte events so that walks touch 4 bytes per event (the
  // children ranges are the table's own `child_offsets`).
  detail::scratch_vector<event_index> parent_;
  std::uint32_t keys_ = 0;
  std::vector<event_index> roots_;  // grouped by thread
  std::vector<group> groups_;
  std::vector<std::pair<event_index, std::uint32_t>> root_group_;  // root -> its group, sorted
  std::vector<event_index> all_roots_;
};

template <class Schema>
tree_view(const basic_event_table<Schema>&) -> tree_view<Schema>;

// (The concepts `tree_predicate` and `pattern`, and the checks, are in algo/concepts.hpp.)

namespace detail {
template <class P, class Schema>
void prepare(P& p, const tree_view<Schema>& v, const pattern_context& c) {
  if constexpr (requires { p.prepare(v, c); })
    p.prepare(v, c);
  else if constexpr (requires { p.prepare(v); })
    p.prepare(v);
}
}  // namespace detail

// ---- the source location of a match ---------------------------------------------------------

/// Splits a script frame name "dir/file.py(12): fn" into its file; empty when it is not one.
inline std::string_view frame_file(std::string_view frame) noexcept {
  const std::size_t close = frame.find("): ");
  if (close == std::string_view::npos) return {};
  const std::size_t open = frame.rfind('(', close);
  if (open == std::string_view::npos || open == 0) return {};
  for (std::size_t k = open + 1; k < close; ++k)
    if (frame[k] < '0' || frame[k] > '9') return {};
  return frame.substr(0, open);
}

inline constexpr std::string_view no_source_location = "no source location";

/// The nearest user-code frame at or above `i`: the first script frame, walking up, whose file
/// is outside `framework_prefix`; `no_event` when there is none.
template <class Schema>
event_index user_frame(const tree_view<Schema>& v, event_index i,
                       std::string_view framework_prefix) {
  for (; i != no_event; i = v.parent(i)) {
    if (!v.event(i).template is<event_kind::script_call>()) continue;
    const std::string_view file = frame_file(v.name(i));
    if (!file.empty() && !file.starts_with(framework_prefix)) return i;
  }
  return no_event;
}

/// `user_frame` as text: the frame's name ("train.py(40): step"), or `no_source_location`.
template <class Schema>
std::string_view source_location(const tree_view<Schema>& v, event_index i,
                                 std::string_view framework_prefix) {
  const event_index f = user_frame(v, i, framework_prefix);
  return f == no_event ? no_source_location : v.name(f);
}

// ---- evaluation -----------------------------------------------------------------------------

/// What one pattern found.
struct pattern_result {
  std::string name;
  std::string description;
  std::optional<std::string> skipped;  ///< why it was not evaluated
  std::vector<event_index> matches;    ///< in traversal order
  std::vector<event_index> frames;     ///< per match: its `user_frame` (no_event: none)
  std::vector<std::string> reports;    ///< the distinct report messages, in order of first match
};

/// The location text of match `k` of `r`.
template <class Schema>
std::string_view location_of(const tree_view<Schema>& v, const pattern_result& r, std::size_t k) {
  return r.frames[k] == no_event ? no_source_location : v.name(r.frames[k]);
}

namespace detail {
template <class P>
std::optional<std::string> skip_reason(const P& p, const pattern_context& c) {
  if constexpr (requires { p.enabled; })
    if (!p.enabled) return "disabled by configuration";
  if constexpr (requires { p.skip(c); }) return p.skip(c);
  return std::nullopt;
}

/// The report messages of a pattern's matches, each distinct message once. A pattern's own
/// `report(view, index, location)` is asked per match; the default message (the description,
/// then the location unless the pattern says `report_location = false`) depends on the frame
/// only, so it is made once per distinct frame.
template <class P, class Schema>
void make_reports(const P& p, const tree_view<Schema>& v, pattern_result& r) {
  auto add = [&r](std::string msg) {
    if (std::find(r.reports.begin(), r.reports.end(), msg) == r.reports.end())
      r.reports.push_back(std::move(msg));
  };
  if constexpr (requires(std::string_view loc) { p.report(v, event_index{}, loc); }) {
    for (std::size_t k = 0; k < r.matches.size(); ++k)
      add(std::string(p.report(v, r.matches[k], location_of(v, r, k))));
  } else {
    constexpr bool with_location = [] {
      if constexpr (requires { P::report_location; })
        return static_cast<bool>(P::report_location);
      else
        return true;
    }();
    if (r.matches.empty()) return;
    if constexpr (!with_location) {
      add(std::string(p.description()));
    } else {
      std::unordered_set<event_index> seen;
      for (event_index f : r.frames) {
        if (!seen.insert(f).second) continue;
        std::string msg(p.description());
        msg += "\n[Source Code Location] ";
        msg += f == no_event ? no_source_location : v.name(f);
        add(std::move(msg));
      }
    }
  }
}

template <class Schema, class Visit>
void visit_depth_first(const tree_view<Schema>& v, Visit&& visit) {
  std::vector<event_index> stack(v.roots().rbegin(), v.roots().rend());
  while (!stack.empty()) {
    const event_index i = stack.back();
    stack.pop_back();
    visit(i);
    const auto kids = v.children(i);
    for (auto it = kids.rbegin(); it != kids.rend(); ++it) stack.push_back(*it);
  }
}
template <class Schema, class Visit>
void visit_breadth_first(const tree_view<Schema>& v, Visit&& visit) {
  std::deque<event_index> queue(v.roots().begin(), v.roots().end());
  while (!queue.empty()) {
    const event_index i = queue.front();
    queue.pop_front();
    visit(i);
    for (event_index c : v.children(i)) queue.push_back(c);
  }
}
}  // namespace detail

/// Evaluates the patterns in one traversal per order; results come in the patterns' order.
template <class Schema, class... Ps>
std::vector<pattern_result> find_patterns(const tree_view<Schema>& v, const pattern_context& c,
                                          Ps&... ps) {
  constexpr bool ok = (detail::check_pattern<Ps, Schema>() && ...);
  if constexpr (!ok)
    return {};
  else {
    std::vector<pattern_result> out(sizeof...(Ps));
    std::array<bool, sizeof...(Ps) + 1> active{};
    {
      std::size_t k = 0;
      ((out[k].name = std::string(ps.name()), out[k].description = std::string(ps.description()),
        out[k].skipped = detail::skip_reason(ps, c), active[k] = !out[k].skipped,
        active[k] ? detail::prepare(ps, v, c) : void(), ++k),
       ...);
    }
    auto run = [&]<class Order>(Order) {
      constexpr bool any = (std::is_same_v<traversal_of_t<Ps>, Order> || ...);
      if constexpr (any) {
        bool some = false;
        {
          std::size_t k = 0;
          ((some = some || (std::is_same_v<traversal_of_t<Ps>, Order> && active[k]), ++k), ...);
        }
        if (!some) return;
        auto visit = [&](event_index i) {
          std::size_t k = 0;
          (
              [&] {
                if constexpr (std::is_same_v<traversal_of_t<Ps>, Order>)
                  if (active[k] && static_cast<bool>(ps.match(v, i))) out[k].matches.push_back(i);
                ++k;
              }(),
              ...);
        };
        if constexpr (std::is_same_v<Order, depth_first>)
          detail::visit_depth_first(v, visit);
        else
          detail::visit_breadth_first(v, visit);
      }
    };
    run(depth_first{});
    run(breadth_first{});
    {
      std::size_t k = 0;
      (
          [&] {
            out[k].frames.reserve(out[k].matches.size());
            event_index last_parent = no_event, last_frame = no_event;
            for (event_index i : out[k].matches) {
              // Siblings share their frame: ask once per parent run.
              const event_index p = v.parent(i);
              if (p == no_event || p != last_parent ||
                  v.event(i).template is<event_kind::script_call>()) {
                last_frame = user_frame(v, i, c.framework_prefix);
                last_parent = v.event(i).template is<event_kind::script_call>() ? no_event : p;
              }
              out[k].frames.push_back(last_frame);
            }
            detail::make_reports(ps, v, out[k]);
            ++k;
          }(),
          ...);
    }
    return out;
  }
}

/// The same for a tuple of patterns (see `pytorch_patterns()`).
template <class Schema, class... Ps>
std::vector<pattern_result> find_patterns(const tree_view<Schema>& v, const pattern_context& c,
                                          std::tuple<Ps...>& ps) {
  return std::apply([&](auto&... p) { return find_patterns(v, c, p...); }, ps);
}

// ---- the report -----------------------------------------------------------------------------

struct report_options {
  std::string title = "TorchTidy Report";  ///< PyTorch's title, so the layout reads the same
};

/// Header, each distinct report message once (in pattern order; a message two patterns share
/// is printed once), a summary line per pattern that matched, footer: the layout of PyTorch's
/// `report_all_anti_patterns`.
inline std::string format_pattern_report(const std::vector<pattern_result>& results,
                                         const report_options& o = {}) {
  const std::string rule = std::string(40, '-') + o.title + std::string(40, '-');
  std::string s = rule + "\nMatched Events:\n";
  std::vector<std::string_view> seen;
  std::string summary;
  for (const auto& r : results) {
    if (r.skipped || r.matches.empty()) continue;
    summary += r.name + ": " + std::to_string(r.matches.size()) + " events matched.\n";
    for (const auto& msg : r.reports) {
      if (std::find(seen.begin(), seen.end(), std::string_view(msg)) != seen.end()) continue;
      seen.emplace_back(msg);
      s += msg;
      s += '\n';
    }
  }
  s += "Summary:\n";
  s += summary;
  s += rule;
  s += '\n';
  return s;
}

// ---- building blocks ------------------------------------------------------------------------

namespace detail {
/// Caches a fact about names per name key, computed the first time a name is met.
template <class Fn>
struct name_fact {
  Fn fn;
  std::vector<std::uint8_t> cache;  // 0 unknown, 1 false, 2 true
  template <class Schema>
  void prepare(const tree_view<Schema>& v) {
    cache.assign(v.name_keys(), 0);
  }
  template <class Schema>
  bool match(const tree_view<Schema>& v, event_index i) {
    const std::uint32_t k = v.name_key(i);
    if (k >= cache.size()) cache.resize(v.name_keys(), 0);
    if (cache[k] == 0) cache[k] = fn(v.name(i)) ? 2 : 1;
    return cache[k] == 2;
  }
};
template <class Fn>
name_fact(Fn) -> name_fact<Fn>;
}  // namespace detail

/// A test of a name against a text: equal, starts with, or ends with.
struct name_text {
  enum class how : std::uint8_t { equal, prefix, suffix };
  how test = how::equal;
  std::string text;
  bool operator()(std::string_view n) const noexcept {
    switch (test) {
      case how::equal:
        return n == text;
      case how::prefix:
        return n.starts_with(text);
      case how::suffix:
        return n.ends_with(text);
    }
    return false;
  }
};
/// A predicate on the name (cached per distinct name).
using name_test = detail::name_fact<name_text>;

/// The name equals `s`.
inline name_test name_is(std::string s) { return {{name_text::how::equal, std::move(s)}, {}}; }
inline name_test name_starts_with(std::string s) {
  return {{name_text::how::prefix, std::move(s)}, {}};
}
inline name_test name_ends_with(std::string s) {
  return {{name_text::how::suffix, std::move(s)}, {}};
}
/// A regular expression found anywhere in the name (ECMAScript syntax).
inline auto name_matches(const std::string& re) {
  auto test = [r = std::regex(re)](std::string_view n) {
    return std::regex_search(n.begin(), n.end(), r);
  };
  return detail::name_fact<decltype(test)>{std::move(test), {}};
}

/// The event is of kind `K`.
template <auto K>
struct kind_is_t {
  template <class Schema>
  bool match(const tree_view<Schema>& v, event_index i) const {
    return v.event(i).template is<K>();
  }
};
template <auto K>
inline constexpr kind_is_t<K> kind_is{};

namespace detail {
template <class... Ps>
struct combinator {
  std::tuple<Ps...> parts;
  template <class Schema>
  void prepare(const tree_view<Schema>& v, const pattern_context& c) {
    std::apply([&](auto&... p) { (detail::prepare(p, v, c), ...); }, parts);
  }
};
}  // namespace detail

template <class... Ps>
struct all_of_t : detail::combinator<Ps...> {
  template <class Schema>
  bool match(const tree_view<Schema>& v, event_index i) {
    return std::apply([&](auto&... p) { return (static_cast<bool>(p.match(v, i)) && ...); },
                      this->parts);
  }
};
template <class... Ps>
struct any_of_t : detail::combinator<Ps...> {
  template <class Schema>
  bool match(const tree_view<Schema>& v, event_index i) {
    return std::apply([&](auto&... p) { return (static_cast<bool>(p.match(v, i)) || ...); },
                      this->parts);
  }
};
template <class P>
struct not_t : detail::combinator<P> {
  template <class Schema>
  bool match(const tree_view<Schema>& v, event_index i) {
    return !static_cast<bool>(std::get<0>(this->parts).match(v, i));
  }
};
/// The event matches the first predicate, its next sibling the second, and so on.
template <class... Ps>
struct sibling_sequence_t : detail::combinator<Ps...> {
  template <class Schema>
  bool match(const tree_view<Schema>& v, event_index i) {
    return std::apply(
        [&](auto&... p) {
          bool ok = true;
          ((ok = ok && i != no_event && static_cast<bool>(p.match(v, i)),
            i = ok ? v.next_sibling(i) : i),
           ...);
          return ok;
        },
        this->parts);
  }
};
/// The parent exists and matches.
template <class P>
struct parent_is_t : detail::combinator<P> {
  template <class Schema>
  bool match(const tree_view<Schema>& v, event_index i) {
    const event_index p = v.parent(i);
    return p != no_event && static_cast<bool>(std::get<0>(this->parts).match(v, p));
  }
};
/// The first (or last) child exists and matches.
template <class P, bool Last>
struct child_is_t : detail::combinator<P> {
  template <class Schema>
  bool match(const tree_view<Schema>& v, event_index i) {
    const auto kids = v.children(i);
    return !kids.empty() &&
           static_cast<bool>(std::get<0>(this->parts).match(v, Last ? kids.back() : kids.front()));
  }
};
/// Some event below this one matches.
template <class P>
struct has_descendant_t : detail::combinator<P> {
  std::vector<event_index> stack;
  template <class Schema>
  bool match(const tree_view<Schema>& v, event_index i) {
    stack.clear();
    for (event_index c : v.children(i)) stack.push_back(c);
    while (!stack.empty()) {
      const event_index k = stack.back();
      stack.pop_back();
      if (std::get<0>(this->parts).match(v, k)) return true;
      for (event_index c : v.children(k)) stack.push_back(c);
    }
    return false;
  }
};

template <class... Ps>
all_of_t<std::remove_cvref_t<Ps>...> all_of(Ps&&... ps) {
  return {{{std::forward<Ps>(ps)...}}};
}
template <class... Ps>
any_of_t<std::remove_cvref_t<Ps>...> any_of(Ps&&... ps) {
  return {{{std::forward<Ps>(ps)...}}};
}
template <class P>
not_t<std::remove_cvref_t<P>> not_(P&& p) {
  return {{{std::forward<P>(p)}}};
}
template <class... Ps>
sibling_sequence_t<std::remove_cvref_t<Ps>...> sibling_sequence(Ps&&... ps) {
  return {{{std::forward<Ps>(ps)...}}};
}
template <class P>
parent_is_t<std::remove_cvref_t<P>> parent_is(P&& p) {
  return {{{std::forward<P>(p)}}};
}
template <class P>
child_is_t<std::remove_cvref_t<P>, false> first_child_is(P&& p) {
  return {{{std::forward<P>(p)}}};
}
template <class P>
child_is_t<std::remove_cvref_t<P>, true> last_child_is(P&& p) {
  return {{{std::forward<P>(p)}}};
}
template <class P>
has_descendant_t<std::remove_cvref_t<P>> has_descendant(P&& p) {
  return {{{std::forward<P>(p)}}, {}};
}

/// A pattern made of a predicate: a name, a description and what it needs of the trace.
template <class P, class Traversal = depth_first>
struct rule_t {
  using traversal = Traversal;
  std::string name_;
  std::string description_;
  P predicate;
  unsigned needs_mask = needs::nothing;
  bool enabled = true;

  [[nodiscard]] std::string_view name() const noexcept { return name_; }
  [[nodiscard]] std::string_view description() const noexcept { return description_; }
  [[nodiscard]] std::optional<std::string> skip(const pattern_context& c) const {
    return unmet_needs(needs_mask, c);
  }
  template <class Schema>
  void prepare(const tree_view<Schema>& v, const pattern_context& c) {
    detail::prepare(predicate, v, c);
  }
  template <class Schema>
  bool match(const tree_view<Schema>& v, event_index i) {
    return static_cast<bool>(predicate.match(v, i));
  }
};
template <class Traversal = depth_first, class P>
rule_t<std::remove_cvref_t<P>, Traversal> rule(std::string name, std::string description,
                                               P&& predicate,
                                               unsigned needs_mask = needs::nothing) {
  return {std::move(name), std::move(description), std::forward<P>(predicate), needs_mask, true};
}

/// PyTorch's NamePattern: events whose name contains a match of a regular expression; the
/// pattern's name is the expression.
inline auto name_pattern(const std::string& re) {
  return rule(re, "Matched name: " + re, name_matches(re));
}

TRACEMODEL_END_NAMESPACE
