// tracemodel/collect — materialization: from a record queue to an event table.
//
//   tracemodel::event_table t = tracemodel::materialize(queue);
//
// Converts approximate-clock ticks to ns since the Unix epoch with a converter calibrated
// between the queue's creation and now, interns names, decodes inputs, zips the side streams
// back onto their ops, and returns the events sorted by start time (stable: events with equal
// starts keep the order thread by thread, kind by kind, record by record).
//
// Destructive: the queue is emptied, its blocks go back to the pool for the next session, and
// handles from before become stale. An op that never ended is kept, flagged
// `op_flag::unfinished` with end `no_end_ns` (the tree builder lets it borrow its parent's
// end), and counted in `table.anomalies`. Misuse of end_op since the previous call is counted
// there too. Materialize while no thread records into the queue.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string_view>
#include <utility>
#include <vector>

#include "tracemodel/collect/kind_records.hpp"
#include "tracemodel/collect/record_queue.hpp"
#include "tracemodel/config.hpp"
#include "tracemodel/detail/flat_map.hpp"
#include "tracemodel/detail/radix_sort.hpp"
#include "tracemodel/model/table.hpp"

TRACEMODEL_BEGIN_NAMESPACE
namespace detail {

template <class Schema, record_features F, class P>
class materializer {
  using table_t = basic_event_table<Schema>;
  using event_t = typename table_t::event_type;
  using subqueue_t = thread_subqueue<Schema, F, usable_policies<P>>;
  using subqueues_t = std::vector<std::unique_ptr<subqueue_t>>;

 public:
  using window = typename record_queue<Schema, F, P>::recording_window;

  materializer(table_t& t, time_converter conv, std::vector<window> windows)
      : t_(t),
        conv_(conv),
        windows_(std::move(windows)),
        keep_all_(windows_.size() == 1 && windows_[0].begin == 0 &&
                  windows_[0].end == ~approx_time{0}) {}

  void run(const subqueues_t& sqs) {
    for (const auto& sq : sqs) {
      os_to_tid_.try_emplace(sq->os_tid, sq->tid);
      pthread_to_tid_.try_emplace(sq->pthread_id32, sq->tid);
    }
    if constexpr (Schema::template contains<event_kind::device_activity>) judge_device_records(sqs);
    // Pass 1: start times in record order.
    for (const auto& sq : sqs)
      for_each_kind(*sq, [this](auto& store, auto kind) { this->collect_starts(store, kind); });
    const std::size_t n = starts_.size();
    if (n >= no_event) throw usage_error("tracemodel::materialize: more than 2^32-1 events");
    {
      const auto order = stable_order(starts_);
      rank_.resize(n);
      for (std::size_t r = 0; r < n; ++r) rank_[order[r]] = static_cast<event_index>(r);
    }
    // Pass 2: build every event at its rank (the slots are default-constructed once here), its
    // start the one pass 1 converted.
    t_.events.resize(n);
    seq_ = 0;
    for (const auto& sq : sqs) {
      build_side_maps(*sq);
      for_each_kind(*sq, [this, &sq](auto& store, auto kind) { this->build(*sq, store, kind); });
    }
  }

 private:
  struct cached_name {
    name_id id;
    std::uint32_t len;
  };

  template <auto K>
  struct kind_tag {
    static constexpr auto value = K;
  };

  template <class Fn>
  static void for_each_kind(subqueue_t& sq, Fn&& fn) {
    for_each_kind_impl(sq, fn, std::make_index_sequence<Schema::size>{});
  }
  template <class Fn, std::size_t... I>
  static void for_each_kind_impl(subqueue_t& sq, Fn& fn, std::index_sequence<I...>) {
    (fn(std::get<I>(sq.stores), kind_tag<Schema::kinds[I]>{}), ...);
  }

  void push_key(std::int64_t start) { starts_.push_back(start); }

  template <class Store, class Tag>
  void collect_starts(Store& store, Tag) {
    static constexpr auto K = Tag::value;
    if constexpr (same_kind<K, event_kind::op>) {
      store.ops.for_each_block([this](const op_record* a, const op_record* b, std::uint64_t) {
        for (; a != b; ++a) push_key(conv_(a->start));
      });
    } else if constexpr (same_kind<K, event_kind::backend>) {
      for (const auto& r : store.list) push_key(r.start_ns);
    } else if constexpr ((same_kind<K, event_kind::allocation> ||
                          same_kind<K, event_kind::out_of_memory>)) {
      for (const auto& r : store.list) push_key(conv_(r.time));
    } else if constexpr (same_kind<K, event_kind::device_activity>) {
      for (const device_record& r : store.list)
        if (keep(r)) push_key(conv_(r.start));
    } else {
      for (const auto& r : store.list) push_key(conv_(r.start));
    }
  }

  // Device records arrive whenever an adapter decodes them, often after the queue stopped.
  // Those of a recording window are kept: a host call (a runtime or driver API record) by its
  // start; a device activity by its launching call's verdict (a kernel may run after `stop`),
  // or by its own start when no host call carries its correlation id. The rest are dropped and
  // counted (anomaly::outside_recording).
  bool in_window(approx_time t) const noexcept {
    auto w = std::upper_bound(windows_.begin(), windows_.end(), t,
                              [](approx_time v, const window& x) { return v < x.begin; });
    return w != windows_.begin() && t <= std::prev(w)->end;
  }
  bool keep(const device_record& r) const noexcept {
    if (keep_all_) return true;  // never stopped: every record belongs
    if (!r.host_thread && r.correlation_id != 0)
      if (const std::uint8_t* v = launch_kept_.find(r.correlation_id)) return *v != 0;
    return in_window(r.start);
  }
  void judge_device_records(const subqueues_t& sqs) {
    for (const auto& sq : sqs)
      for (const device_record& r : sq->template store<event_kind::device_activity>().list)
        if (r.host_thread && r.correlation_id != 0)
          launch_kept_.try_emplace(r.correlation_id,
                                   static_cast<std::uint8_t>(in_window(r.start) ? 1 : 0));
    std::uint64_t dropped = 0;
    for (const auto& sq : sqs)
      for (const device_record& r : sq->template store<event_kind::device_activity>().list)
        dropped += keep(r) ? 0 : 1;
    t_.anomalies.add(anomaly::outside_recording, dropped);
  }

  name_id intern(const char* p, std::uint32_t len) {
    if (p == nullptr || len == 0) return empty_name;
    auto [v, inserted] = names_.try_emplace(reinterpret_cast<std::uintptr_t>(p), cached_name{});
    if (inserted || v->len != len) {
      const name_id id = t_.strings.intern(std::string_view(p, len));
      if (inserted) *v = {id, len};
      return id;
    }
    return v->id;
  }

  /// A name by its text: device records' names are copies, one address each, which a cache
  /// by address would only grow with (a table of millions at 10M events).
  name_id intern_text(const char* p, std::uint32_t len) {
    return p == nullptr || len == 0 ? empty_name : t_.strings.intern(std::string_view(p, len));
  }

  /// The next record's event, at its rank, with its start from pass 1 (the records come in the
  /// order of pass 1).
  event_t& slot() {
    const std::size_t k = seq_++;
    event_t& e = t_.events[rank_[k]];
    e.start_ns = starts_[k];
    return e;
  }

  /// The end of a span, repaired when it lies before its start.
  std::int64_t checked_end(std::int64_t start, std::int64_t end) {
    if (end < start) {
      t_.anomalies.add(anomaly::end_before_start);
      return start;
    }
    return end;
  }

  // ---- side streams: per-op data recorded on any thread, keyed by correlation id ---------
  void build_side_maps(subqueue_t& sq) {
    if constexpr (Schema::template contains<event_kind::op>) {
      auto& store = sq.template store<event_kind::op>();
      if constexpr (F.call_stack) map_frames(store.call_stack, stacks_);
      if constexpr (F.module_hierarchy) map_frames(store.modules, modules_);
      if constexpr (F.extra_args) {
        auto item = store.extra_args.items.begin();
        for (const side_entry& e : store.extra_args.entries) {
          const auto first = static_cast<std::uint32_t>(args_.size());
          for (std::uint32_t i = 0; i < e.count; ++i, ++item) args_.push_back(*item);
          args_map_.insert_or_assign(e.correlation_id, index_range{first, e.count});
        }
      }
    } else {
      (void)sq;
    }
  }
  template <class Stream>
  void map_frames(Stream& s, flat_map<index_range>& out) {
    auto item = s.items.begin();
    for (const side_entry& e : s.entries) {
      const auto first = static_cast<std::uint32_t>(t_.name_lists.size());
      for (std::uint32_t i = 0; i < e.count; ++i, ++item)
        t_.name_lists.push_back(t_.strings.intern(std::string_view(item->data, item->size)));
      out.insert_or_assign(e.correlation_id, index_range{first, e.count});
    }
  }
  void attach_side_data(event_t& e, std::uint64_t corr) {
    if constexpr (F.call_stack)
      if (const index_range* r = stacks_.find(corr))
        t_.add_attr(e, "Call stack", attr_type::string_list).list = *r;
    if constexpr (F.module_hierarchy)
      if (const index_range* r = modules_.find(corr))
        t_.add_attr(e, "Module Hierarchy", attr_type::string_list).list = *r;
    if constexpr (F.extra_args)
      if (const index_range* r = args_map_.find(corr))
        for (std::uint32_t i = 0; i < r->size; ++i) {
          const arg_record& a = args_[r->first + i];
          attribute& at = t_.add_attr(e, std::string_view(a.key, a.key_len), a.type);
          switch (a.type) {
            case attr_type::floating:
              at.f = a.f;
              break;
            case attr_type::boolean:
              at.b = a.i != 0;
              break;
            case attr_type::string:
              at.s = t_.strings.intern(std::string_view(a.str, a.str_len));
              break;
            default:
              at.i = a.i;
              break;
          }
        }
    (void)e;
    (void)corr;
  }

  // ---- pass 2 ---------------------------------------------------------------------------
  template <class Store, class Tag>
  void build(subqueue_t& sq, Store& store, Tag) {
    static constexpr auto K = Tag::value;
    constexpr std::size_t I = Schema::template index_of<K>;
    const process_key pid = process_id();
    if constexpr (same_kind<K, event_kind::op>) {
      [[maybe_unused]] auto decoder = make_decoder(store);
      store.ops.for_each_block([&](const op_record* a, const op_record* b, std::uint64_t id) {
        for (; a != b; ++a, ++id) {
          event_t& e = slot();
          e.tid = sq.tid;
          e.pid = pid;
          auto& f = e.fields.template emplace<I>();
          f.name = intern(a->name, a->name_len);
          f.scope = a->scope;
          f.flags = a->flags;
          f.sequence_number = a->sequence_number;
          f.fwd_thread_id = a->fwd_thread_id;
          f.correlation_id = id;
          f.debug_handle = a->debug_handle;
          f.depth = a->depth;
          if (a->end == 0) {
            f.flags |= op_flag::unfinished;
            f.end_ns = no_end_ns;
            f.end_tid = sq.tid;
            t_.anomalies.add(anomaly::unfinished_op);
          } else {
            f.end_ns = checked_end(e.start_ns, conv_(a->end));
            f.end_tid = a->end_tid;
          }
          if constexpr (F.inputs) {
            const auto first = static_cast<std::uint32_t>(t_.inputs.size());
            const std::uint32_t count =
                decoder.next(t_.inputs, t_.ints, scalar_dtype(),
                             [this](std::uint8_t code) { return dtype_id(code); });
            f.inputs = {first, count};
          }
          attach_side_data(e, id);
        }
      });
    } else if constexpr (same_kind<K, event_kind::backend>) {
      for (const backend_record& r : store.list) {
        event_t& e = slot();
        e.tid = sq.tid;
        e.pid = pid;
        auto& f = e.fields.template emplace<I>();
        f.name = intern(r.name, r.name_len);
        f.backend = intern(r.backend, r.backend_len);
        f.scope = r.scope;
        f.end_ns = checked_end(r.start_ns, r.end_ns);
        f.debug_handle = r.debug_handle;
      }
    } else if constexpr (same_kind<K, event_kind::allocation>) {
      for (const allocation_record& r : store.list) {
        event_t& e = slot();
        e.tid = sq.tid;
        e.pid = pid;
        allocation_fields(e, r);
      }
    } else if constexpr (same_kind<K, event_kind::out_of_memory>) {
      for (const oom_record& r : store.list) {
        event_t& e = slot();
        e.tid = sq.tid;
        e.pid = pid;
        oom_fields(e, r);
      }
    } else if constexpr ((same_kind<K, event_kind::script_call> ||
                          same_kind<K, event_kind::native_call>)) {
      for (const call_record& r : store.list) {
        event_t& e = slot();
        e.tid = sq.tid;
        e.pid = pid;
        auto& f = e.fields.template emplace<I>();
        f.name = intern(r.name, r.name_len);
        f.end_ns = checked_end(e.start_ns, conv_(r.end));
        f.script_id = r.script_id;
        f.script_parent_id = r.script_parent_id;
        if constexpr (K == event_kind::script_call) f.module_id = r.module_id;
      }
    } else if constexpr (same_kind<K, event_kind::device_activity>) {
      for (const device_record& r : store.list)
        if (keep(r)) build_device(r, pid);
    } else {
      for (const auto& r : store.list) {
        event_t& e = slot();
        e.tid = sq.tid;
        e.pid = pid;
        auto& f = e.fields.template emplace<I>(r.fields);
        if constexpr (requires { f.end_ns; })
          f.end_ns = r.end == 0 ? e.start_ns : checked_end(e.start_ns, conv_(r.end));
      }
    }
  }

  void build_device(const device_record& r, process_key pid) {
    event_t& e = slot();  // (default-constructed, as every slot)
    if (r.host_thread) {
      const std::uint64_t* small = os_to_tid_.find(r.tid);
      if (small == nullptr) small = pthread_to_tid_.find(r.tid);
      e.tid = small != nullptr ? *small : r.tid;
      e.pid = pid;
    } else {
      e.tid = r.tid;
      e.pid = r.pid;
    }
    detail::device_fields(t_, e, r, intern_text(r.name, r.name_len),
                          checked_end(e.start_ns, conv_(r.end)), keys_);
  }

  template <class Store>
  static auto make_decoder(Store& store) {
    if constexpr (F.inputs)
      return io_encoder::decoder(store.inputs);
    else
      return 0;
  }
  name_id scalar_dtype() {
    if (scalar_name_ == empty_name) scalar_name_ = t_.strings.intern("Scalar");
    return scalar_name_;
  }
  name_id dtype_id(std::uint8_t code) {
    if constexpr (F.inputs) {
      if (!dtype_known_[code]) {
        dtype_names_[code] =
            t_.strings.intern(std::string_view(usable_policies<P>::value_traits::dtype_name(code)));
        dtype_known_[code] = true;
      }
      return dtype_names_[code];
    } else {
      (void)code;
      return empty_name;
    }
  }

  table_t& t_;
  time_converter conv_;
  scratch_vector<std::int64_t> starts_;
  scratch_vector<event_index> rank_;
  std::size_t seq_ = 0;
  flat_map<cached_name> names_;
  flat_map<std::uint64_t> os_to_tid_, pthread_to_tid_;  // a host call's thread -> the runtime's id
  std::vector<window> windows_;
  bool keep_all_;
  flat_map<std::uint8_t> launch_kept_;  // correlation id of a host call -> kept
  flat_map<index_range> stacks_, modules_, args_map_;
  std::vector<arg_record> args_;
  name_id scalar_name_{};
  device_keys keys_;  // attribute keys of device records
  name_id dtype_names_[256]{};
  bool dtype_known_[256]{};
};

}  // namespace detail

template <class Schema, record_features F, class P>
basic_event_table<Schema> materialize(record_queue<Schema, F, P>& q) {
  using clock = typename record_queue<Schema, F, P>::clock;
  basic_event_table<Schema> t;
  const time_converter conv =
      time_converter::between<clock>(q.origin(), clock_sync_point::take<clock>());
  detail::materializer<Schema, F, P> m(t, conv, q.recording_windows());
  const auto misuse = q.consume([&](const auto& sqs) { m.run(sqs); });
  t.anomalies.add(anomaly::foreign_handle, misuse.foreign_handle);
  t.anomalies.add(anomaly::stale_handle, misuse.stale_handle);
  t.anomalies.add(anomaly::op_ended_twice, misuse.ended_twice);
  return t;
}

TRACEMODEL_END_NAMESPACE
