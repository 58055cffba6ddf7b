// tracemodel/formats/chrome_trace — the table builder: the one part of the reader that depends
// on the schema. It takes the parser's records batch by batch (a `record_sink`) and builds the
// events of the table:
//  * complete (`X`), instant (`i`/`I`) and begin/end (`B`/`E`) records become events; metadata
//    (`M`) records are kept for the writer; flow records are bound once every event is built
//    (flow_binder.hpp); other phases are counted as unsupported;
//  * categories map onto kinds: `cpu_op`/`user_annotation` (or no category) -> op,
//    `python_function` -> script call (native call for "<built-in ...>"), `cpu_instant_event`
//    "[memory]"/"[OutOfMemory]" -> allocation/out-of-memory, anything else -> device activity
//    with its category kept; a kind the schema lacks is counted as unsupported;
//  * args with a field (formats/args.hpp) fill it; op inputs come from op_inputs.hpp; every
//    other arg is kept as an attribute;
//  * after the last record: `B` without `E` are unfinished ops, the events are sorted by start
//    (stable, in place; nothing to do when the file is in order), the flows are bound.
#pragma once

#include <cstdint>
#include <iterator>
#include <limits>
#include <span>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "tracemodel/config.hpp"
#include "tracemodel/detail/big_allocator.hpp"
#include "tracemodel/detail/flat_map.hpp"
#include "tracemodel/detail/radix_sort.hpp"
#include "tracemodel/formats/args.hpp"
#include "tracemodel/formats/chrome_trace/flow_binder.hpp"
#include "tracemodel/formats/chrome_trace/op_inputs.hpp"
#include "tracemodel/formats/chrome_trace/parse.hpp"
#include "tracemodel/formats/chrome_trace/records.hpp"
#include "tracemodel/formats/json_scan.hpp"
#include "tracemodel/model/reflect.hpp"
#include "tracemodel/model/table.hpp"

TRACEMODEL_BEGIN_NAMESPACE
namespace detail::chrome_trace {

template <class Schema>
class table_builder final : public record_sink, public flow_events {
  using table_t = basic_event_table<Schema>;
  using event_t = typename table_t::event_type;

 public:
  /// `len`: the length of the text (room for flow records is reserved from what is left).
  table_builder(table_t& t, std::size_t len, const thread_options& opt)
      : t_(t), len_(len), opt_(opt), inputs_(t.strings, t.inputs, t.ints) {}

  /// Keep the file's order of the events in `trace_info::file_order` (read_options).
  void keep_file_order(bool keep) noexcept { keep_file_order_ = keep; }

  /// After the parse: repairs what is left open, sorts the events, binds the flows.
  void finish() {
    if (t_.info.base_time_ns != base_) shift_times(t_.info.base_time_ns - base_, base_at_);
    for (const event_index i : open_) {  // `B` without `E`: an op that never ended
      event_t& e = t_.events[i];
      if (auto* op = e.template get_if<event_kind::op>()) {
        op->flags |= op_flag::unfinished;
        t_.anomalies.add(anomaly::unfinished_op);
      }
    }
    open_.clear();
    sort_events();
    if (!flows_.empty()) {
      // What the binder needs of each event (its track and key), taken in table order now
      // rather than kept beside each event as it was read: 20 bytes an event less while reading.
      const std::size_t n = t_.events.size();
      detail::scratch_vector<std::uint32_t> track(n);
      detail::scratch_vector<bind_key> keys(n);
      for (std::size_t i = 0; i < n; ++i) {
        const event_t& e = t_.events[i];
        track[i] = tracks_.id(static_cast<std::uint64_t>(e.pid), e.tid);
        keys[i] = bind_key_of(e);
      }
      bind_flows({flows_, std::move(track), std::move(keys), tracks_.size()}, t_.strings, opt_,
                 *this, t_.anomalies, t_.links);
    }
  }

  // ---- the sink's side ---------------------------------------------------------------------
  void base_time(std::int64_t ns, std::size_t at) override {
    t_.info.base_time_ns = ns;
    t_.info.has_base_time = true;
    base_at_ = at;
  }
  void metadata(std::string_view key, std::string_view raw) override {
    t_.info.metadata.emplace_back(t_.strings.intern(key), t_.strings.intern(raw));
  }
  // Times read from here on are relative to the base time so far; one that comes after the
  // events (as Kineto writes it) shifts them at the end.
  void events_begin() override { base_ = t_.info.base_time_ns; }
  void build(const batch_view& b) override {
    for (const fields& f : b.events) build_event(f, b);
  }
  /// Reserves the table's arrays for the rest of the events array (with a margin): growing a
  /// vector of hundreds of megabytes copies it and touches twice the memory. Reserved pages
  /// that stay unused are never touched.
  void expect(double scale) override {
    scale *= 1.25;
    auto grow = [scale](auto& v) {
      v.reserve(static_cast<std::size_t>(static_cast<double>(v.size()) * scale) + 64);
    };
    grow(t_.events);
    grow(t_.inputs);
    grow(t_.ints);
    grow(t_.attrs);
    grow(t_.name_lists);
    grow(flows_);
  }

  // ---- flow_events -------------------------------------------------------------------------
  std::int64_t end_ns(event_index i) const override { return t_.events[i].end_ns(); }
  std::uint64_t correlation_id(event_index i) const override {
    return t_.events[i].correlation_id();
  }
  void set_device_flow([[maybe_unused]] event_index i, [[maybe_unused]] std::uint64_t id,
                       [[maybe_unused]] bool start) override {
    // (Only device activities get here: bind keys mark them.)
    if constexpr (Schema::template contains<event_kind::device_activity>) {
      auto& d = t_.events[i].template get<event_kind::device_activity>();
      d.flow_id = id;
      d.flow_type = flow_kind::async_cpu_gpu;
      d.flow_start = start;
    }
  }

 private:
  std::uint64_t key(const key_value& k) { return k.is_string ? t_.string_key(k.text) : k.number; }

  /// Builds one record into the table.
  void build_event(const fields& f, const batch_view& b) {
    const std::uint64_t pid = key(f.pid), tid = key(f.tid);
    switch (const char ph = f.ph[0]) {
      case 'X':
      case 'i':
      case 'I':
      case 'B':
        add_event(f, b, ph, pid, tid);
        break;
      case 'E':
        if (f.slice != 0)
          end_slice(f);
        else
          end_event(f, pid, tid);
        break;
      case 's':
      case 'f':
      case 't':
        if (flows_.size() == flows_.capacity()) reserve_flows(f.at);
        flows_.push_back({f.id, absolute(base_, f.ts, f.at), f.at, t_.strings.intern(f.cat),
                          tracks_.id(pid, tid), ph, f.bp == "e"});
        break;
      case 'M':
        t_.info.records.push_back({t_.strings.intern(f.name), static_cast<process_key>(pid), tid,
                                   t_.strings.intern(f.raw_args)});
        break;
      default:
        t_.anomalies.add(anomaly::unsupported_record);
        break;
    }
  }

  /// Room for the flow records still to come. Writers put them together, often after all the
  /// events (so the first batch says nothing about their number): rather than doubling (a
  /// copy of every record so far each time), room for as many as the rest of the text can
  /// hold at 64 bytes each, in pages that stay untouched until used.
  void reserve_flows(std::size_t at) {
    const std::size_t rest = len_ > at ? len_ - at : 0;
    flows_.reserve(flows_.size() + std::max(flows_.size(), rest / 64) + 64);
  }

  void add_event(const fields& f, const batch_view& b, char ph, std::uint64_t pid,
                 std::uint64_t tid) {
    const activity_type act = f.cat.empty() ? activity_type::cpu_op : activity_type_from(f.cat);
    event_t& e = t_.events.emplace_back();
    e.start_ns = absolute(base_, f.ts, f.at);
    e.pid = static_cast<process_key>(pid);
    e.tid = tid;
    std::int64_t end = e.start_ns;
    if (ph == 'X') {
      end = absolute(e.start_ns, f.has_dur && f.dur > 0 ? f.dur : 0, f.at);
      if (f.dur < 0) {
        t_.anomalies.add(anomaly::end_before_start);
        end = e.start_ns;
      }
    } else if (ph == 'i' || ph == 'I') {
      e.instant_scope = f.scope.empty() ? 't' : f.scope[0];
    }
    const bool begin = ph == 'B';
    bool built = false;
    if (act == activity_type::cpu_op || act == activity_type::user_annotation) {
      if constexpr (Schema::template contains<event_kind::op>) {
        auto& op = e.template new_fields<event_kind::op>();
        op.name = t_.strings.intern(f.name);
        op.scope =
            act == activity_type::user_annotation ? op_scope::user_scope : op_scope::function;
        op.end_ns = begin ? no_end_ns : end;
        op.end_tid = e.tid;
        fill_payload(e, f, b, op);
        op.inputs = inputs_.build(f, b);
        built = true;
      }
    } else if (act == activity_type::python_function) {
      if (f.name.starts_with("<built-in")) {
        if constexpr (Schema::template contains<event_kind::native_call>) {
          auto& c = e.fields.template emplace<Schema::template index_of<event_kind::native_call>>();
          c.name = t_.strings.intern(f.name);
          c.end_ns = end;
          fill_payload(e, f, b, c);
          built = true;
        }
      } else if constexpr (Schema::template contains<event_kind::script_call>) {
        auto& c = e.fields.template emplace<Schema::template index_of<event_kind::script_call>>();
        c.name = t_.strings.intern(f.name);
        c.end_ns = end;
        fill_payload(e, f, b, c);
        built = true;
      }
    } else if (act == activity_type::cpu_instant_event && f.name == "[memory]") {
      if constexpr (Schema::template contains<event_kind::allocation>) {
        fill_payload(
            e, f, b,
            e.fields.template emplace<Schema::template index_of<event_kind::allocation>>());
        built = true;
      }
    } else if (act == activity_type::cpu_instant_event && f.name == "[OutOfMemory]") {
      if constexpr (Schema::template contains<event_kind::out_of_memory>) {
        fill_payload(
            e, f, b,
            e.fields.template emplace<Schema::template index_of<event_kind::out_of_memory>>());
        built = true;
      }
    }
    if (!built) {
      if constexpr (Schema::template contains<event_kind::device_activity>) {
        auto& d =
            e.fields.template emplace<Schema::template index_of<event_kind::device_activity>>();
        d.name = t_.strings.intern(f.name);
        d.category = t_.strings.intern(f.cat);
        d.activity = act;
        d.end_ns = end;
        fill_payload(e, f, b, d);
        built = true;
      }
    }
    if (!built) {  // the schema has no kind for it
      t_.events.pop_back();
      t_.anomalies.add(anomaly::unsupported_record);
      return;
    }
    if (begin) {
      const auto i = static_cast<event_index>(t_.events.size() - 1);
      open_.push_back(i);
      if (f.slice != 0 && f.slice != no_slice) {
        if (slices_.size() <= f.slice) slices_.resize(std::size_t{f.slice} + 1, no_event);
        slices_[f.slice] = i;
      }
    }
    in_order_ = in_order_ && e.start_ns >= last_start_;
    last_start_ = e.start_ns;
    (void)tracks_.id(pid, tid);  // numbered in the order first seen, flows' tracks among them
  }

  void end_event(const fields& f, std::uint64_t pid, std::uint64_t tid) {
    // The innermost open `B` of the same pid and tid.
    for (auto it = open_.rbegin(); it != open_.rend(); ++it) {
      const event_t& e = t_.events[*it];
      if (static_cast<std::uint64_t>(e.pid) != pid || e.tid != tid) continue;
      close(it, f);
      return;
    }
    t_.anomalies.add(anomaly::unmatched_end);
  }

  /// The end of the slice a format numbered (fields::slice).
  void end_slice(const fields& f) {
    const event_index i = f.slice < slices_.size() ? slices_[f.slice] : no_event;
    if (i == no_event) {
      t_.anomalies.add(anomaly::unmatched_end);
      return;
    }
    slices_[f.slice] = no_event;
    for (auto it = open_.rbegin(); it != open_.rend(); ++it)
      if (*it == i) return close(it, f);
  }

  /// Ends the open event at `it` at the end record `f`'s time.
  void close(const std::vector<event_index>::reverse_iterator& it, const fields& f) {
    event_t& e = t_.events[*it];
    std::int64_t end = absolute(base_, f.ts, f.at);
    if (end < e.start_ns) {
      t_.anomalies.add(anomaly::end_before_start);
      end = e.start_ns;
    }
    e.visit([end](auto& p) {
      if constexpr (requires { p.end_ns; }) p.end_ns = end;
    });
    open_.erase(std::next(it).base());
  }

  /// Fills payload fields from the args, keeps the other args as attributes.
  template <class P>
  void fill_payload(event_t& e, const fields& f, const batch_view& b, P& payload) {
    for (const raw_arg& a : std::span(b.args).subspan(f.args_first, f.args_count)) {
      if constexpr (std::is_same_v<P, extra_fields<event_kind::op>>) {
        if (a.key == "finished") {
          if ((a.kind == raw_arg::type::boolean && !a.b) ||
              (a.kind == raw_arg::type::string && a.text == "false"))
            payload.flags |= op_flag::unfinished;
          continue;
        }
      }
      if (assign_field(payload, a)) continue;
      add_attr(e, a);
    }
  }

  template <class P>
  bool assign_field(P& payload, const raw_arg& a) {
    if constexpr (!reflectable<P>) {
      return false;
    } else if constexpr (has_field_table<export_args<P>>) {
      // The key's spec at run time, its member at compile time.
      constexpr auto& specs = export_args<P>::fields;
      std::size_t which = std::size(specs);
      for (std::size_t k = 0; k < std::size(specs); ++k)
        if (specs[k].key == a.key) which = k;
      bool done = false;
      [&]<std::size_t... S>(std::index_sequence<S...>) {
        (void)((which == S &&
                (done = set_value(field_at<field_index<P>(specs[S].field)>(payload), a), true)) ||
               ...);
      }
      (std::make_index_sequence<std::size(specs)>{});
      return done;
    } else {
      if (is_record_field(a.key)) return false;
      bool done = false;
      for_each_field(payload, [&](std::string_view name, auto& v) {
        if (!done && name == a.key) done = set_value(v, a);
      });
      return done;
    }
  }

  /// Sets a field from an arg; false (the arg is kept as an attribute instead) when the value
  /// does not fit the field: real profilers write ids as hex strings and the like.
  template <class V>
  bool set_value(V& v, const raw_arg& a) {
    using T = std::remove_cvref_t<V>;
    if constexpr (std::is_same_v<T, bool>) {
      if (a.kind != raw_arg::type::boolean) return false;
      v = a.b;
    } else if constexpr (std::is_integral_v<T>) {
      std::int64_t i = 0;
      std::uint64_t u = 0;
      bool is_unsigned = false;
      switch (a.kind) {
        case raw_arg::type::integer:
          i = a.i;
          break;
        case raw_arg::type::unsigned_integer:
          u = a.u;
          is_unsigned = true;
          break;
        case raw_arg::type::string:  // ids written as decimal strings above 2^53
          if (!parse_uint64(a.text, u)) return false;
          is_unsigned = true;
          break;
        default:
          return false;
      }
      if (is_unsigned) {
        if (u > static_cast<std::uint64_t>(std::numeric_limits<T>::max())) return false;
        v = static_cast<T>(u);
      } else {
        if (i < static_cast<std::int64_t>(std::numeric_limits<T>::min()) ||
            (i > 0 && static_cast<std::uint64_t>(i) >
                          static_cast<std::uint64_t>(std::numeric_limits<T>::max())))
          return false;
        v = static_cast<T>(i);
      }
    } else if constexpr (std::is_floating_point_v<T>) {
      if (a.kind == raw_arg::type::floating)
        v = a.f;
      else if (a.kind == raw_arg::type::integer)
        v = static_cast<T>(a.i);
      else if (a.kind == raw_arg::type::unsigned_integer)
        v = static_cast<T>(a.u);
      else
        return false;
    } else if constexpr (std::is_same_v<T, name_id>) {
      if (a.kind != raw_arg::type::string) return false;
      v = t_.strings.intern(a.text);
    } else {
      return false;
    }
    return true;
  }

  void add_attr(event_t& e, const raw_arg& a) {
    attribute& at = t_.add_attr(e, a.key, attr_type::integer);
    switch (a.kind) {
      case raw_arg::type::integer:
        at.i = a.i;
        break;
      case raw_arg::type::unsigned_integer:
        at.type = attr_type::unsigned_integer;
        at.u = a.u;
        break;
      case raw_arg::type::floating:
        at.type = attr_type::floating;
        at.f = a.f;
        break;
      case raw_arg::type::boolean:
        at.type = attr_type::boolean;
        at.b = a.b;
        break;
      case raw_arg::type::string:
        if (a.key == "Call stack" || a.key == "Module Hierarchy") {
          add_joined_list(at, a.text, a.key == "Call stack" ? ';' : '.');
        } else {
          at.type = attr_type::string;
          at.s = t_.strings.intern(a.text);
        }
        break;
      case raw_arg::type::null:
        at.type = attr_type::verbatim;
        at.s = t_.strings.intern("null");
        break;
      case raw_arg::type::json:
        at.type = attr_type::verbatim;
        at.s = t_.strings.intern(a.text);
        break;
    }
  }

  void add_joined_list(attribute& at, std::string_view text, char sep) {
    const auto first = static_cast<std::uint32_t>(t_.name_lists.size());
    std::size_t p = 0;
    while (true) {
      const std::size_t q = text.find(sep, p);
      t_.name_lists.push_back(
          t_.strings.intern(text.substr(p, q == std::string_view::npos ? q : q - p)));
      if (q == std::string_view::npos) break;
      p = q + 1;
    }
    at.type = attr_type::string_list;
    at.list = {first, static_cast<std::uint32_t>(t_.name_lists.size() - first)};
  }

  /// Adds `d` to every time read so far (the base time came after the events).
  void shift_times(std::int64_t d, std::size_t at) {
    auto add = [d, at](std::int64_t& x) {
      if (__builtin_add_overflow(x, d, &x))
        throw input_error("baseTimeNanoseconds: times out of range with this base", at);
    };
    for (event_t& e : t_.events) {
      add(e.start_ns);
      e.visit([&](auto& f) {
        if constexpr (requires { f.end_ns; })
          if (f.end_ns != no_end_ns) add(f.end_ns);
      });
    }
    for (raw_flow& f : flows_) add(f.ts);
    base_ += d;
  }

  /// `base_ + ts` for the record at `at`, or an error when it does not fit.
  static std::int64_t absolute(std::int64_t base, std::int64_t ts, std::size_t at) {
    std::int64_t r = 0;
    if (__builtin_add_overflow(base, ts, &r))
      throw input_error("ts, dur: times out of range with baseTimeNanoseconds", at);
    return r;
  }

  // ---- after the last record -----------------------------------------------------------
  void sort_events() {
    // Files are usually written in start order: then the table is in order as built (times
    // shifted by a late base time all move together), and there is nothing to sort.
    if (in_order_) return;
    const std::size_t n = t_.events.size();
    const auto order = start_order(t_.events);
    if (keep_file_order_) t_.info.file_order.assign(order.begin(), order.end());
    // Apply the permutation in place, cycle by cycle: no second copy of the events.
    std::vector<bool> done(n, false);
    for (std::size_t i = 0; i < n; ++i) {
      if (done[i] || order[i] == i) continue;
      event_t tmp = std::move(t_.events[i]);
      std::size_t j = i;
      while (true) {
        const std::size_t k = order[j];
        done[j] = true;
        if (k == i) {
          t_.events[j] = std::move(tmp);
          break;
        }
        t_.events[j] = std::move(t_.events[k]);
        j = k;
      }
    }
  }

  static bind_key bind_key_of(const event_t& e) noexcept {
    bind_key k{e.start_ns, 0, 0, mark_none};
    if (const auto* d = e.template get_if<event_kind::device_activity>()) {
      const bool fits = d->correlation_id <= 0xffffffffu;
      k.correlation = fits ? static_cast<std::uint32_t>(d->correlation_id) : 0;
      k.cls = static_cast<std::uint8_t>(bind_device | (fits ? bind_corr32 : 0) |
                                        (is_runtime_call(d->activity) ? bind_runtime : 0) |
                                        (is_device_side(d->activity) ? bind_device_side : 0));
      k.mark = d->flow_type != flow_kind::none ? mark_before : mark_none;
    } else if (e.template is<event_kind::op>()) {
      k.cls = bind_op;
    }
    return k;
  }

  table_t& t_;
  std::size_t len_;
  thread_options opt_;
  input_builder inputs_;
  std::int64_t base_ = 0;            // the base time the times read so far are relative to
  std::size_t base_at_ = 0;          // where baseTimeNanoseconds is (for its error)
  std::vector<event_index> open_;    // `B` records waiting for their `E`
  std::vector<event_index> slices_;  // numbered slices (fields::slice) still open: their events
  std::int64_t last_start_ = std::numeric_limits<std::int64_t>::min();  // of the last event built
  bool in_order_ = true;  // every event built so far started at or after the one before
  bool keep_file_order_ = false;
  // The tracks (pid, tid) of events and flows, numbered in order of first appearance (each
  // event's is looked up again at the end, when the file has flows).
  pair_ids tracks_;
  scratch_vector<raw_flow> flows_;
};

}  // namespace detail::chrome_trace
TRACEMODEL_END_NAMESPACE
