// tracemodel/collect — the record queue: where a runtime records what it does.
//
// Each recording thread writes only to its own sub-queue. A thread-local cache keyed by the
// queue's unique id finds that sub-queue without a lock or a map lookup; the cache stays safe
// when a queue is destroyed and another created on the same thread, because ids are never
// reused and a stale key simply misses.
//
// Hot path (steady state): one relaxed load of the active flag, one thread-local compare,
// a pointer bump into a recycled block, two clock reads. No allocation, lock, virtual call
// or formatting; a block (1023 op records of 64 bytes) is taken from the pool once per block.
//
// Compile-time configuration:
//   record_queue<Schema, Features, Policies>
//   * Schema: which kinds can be recorded; a kind not in the schema has no storage.
//   * Features (record_features, a structural value): optional per-op side streams, each of
//     which has no storage at all when off (see the sizeof checks in the tests).
//   * Policies: clock, correlation-ID source, value traits of the runtime's values (inputs),
//     op hooks (called at begin and end of every op; the CUPTI adapter pushes external
//     correlation ids there).
//
// Malformed use has documented behaviour and never touches other events:
//   * end_op twice: the first end is kept, the call returns false (anomaly op_ended_twice);
//   * end_op with a handle from another queue: ignored, returns false (foreign_handle);
//   * end_op with a handle from before the last materialize: ignored (stale_handle);
//   * materialize twice: each call takes what was recorded since the previous one, so a second
//     call right after the first returns an empty table.
// Materialize requires that no thread is recording into the queue at the same time (stop the
// queue and join or quiesce the recording threads first): this is the one rule the hot path
// does not check.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <vector>

#include "tracemodel/collect/clock.hpp"
#include "tracemodel/collect/concepts.hpp"
#include "tracemodel/collect/encoder.hpp"
#include "tracemodel/collect/records.hpp"
#include "tracemodel/collect/string_arena.hpp"
#include "tracemodel/config.hpp"
#include "tracemodel/detail/assert.hpp"
#include "tracemodel/detail/flat_map.hpp"
#include "tracemodel/detail/os.hpp"
#include "tracemodel/model/schema.hpp"
#include "tracemodel/storage/append_only_list.hpp"
#include "tracemodel/storage/id_source.hpp"

TRACEMODEL_BEGIN_NAMESPACE

/// Optional per-op side streams. Off by default: an op then costs one 64-byte record.
struct record_features {
  bool inputs = false;            ///< op inputs through the encoder (needs value traits)
  bool call_stack = false;        ///< a list of frames per op
  bool module_hierarchy = false;  ///< a list of module frames per op (exported joined by '.')
  bool extra_args = false;        ///< key/value pairs per op
  static constexpr record_features all() { return {true, true, true, true}; }
};

/// Value traits of a queue that records no inputs.
struct no_value_traits {};

/// Op hooks that do nothing (the default).
struct no_op_hooks {
  static constexpr bool enabled = false;
  static void on_begin(std::uint64_t /*correlation_id*/, op_scope) noexcept {}
  static void on_end(op_scope) noexcept {}
};

struct default_record_policies {
  using clock = default_clock;
  using id_source = process_id_source;
  using value_traits = no_value_traits;
  using op_hooks = no_op_hooks;
};

namespace detail {
// `P` with each piece that is missing or fails its concept replaced by the default's: the
// queue's checks say what is wrong (collect/concepts.hpp), and the rest of the class then
// compiles instead of adding pages of errors after the message.
template <class P>
struct clock_of {
  using type = default_clock;
};
template <class P>
requires approx_clock<typename P::clock>
struct clock_of<P> {
  using type = typename P::clock;
};
template <class P>
struct id_source_of {
  using type = process_id_source;
};
template <class P>
requires id_source<typename P::id_source>
struct id_source_of<P> {
  using type = typename P::id_source;
};
template <class P>
struct value_traits_of {
  using type = no_value_traits;
};
template <class P>
requires requires { typename P::value_traits; }
struct value_traits_of<P> {
  using type = typename P::value_traits;
};
template <class P>
struct op_hooks_of {
  using type = no_op_hooks;
};
template <class P>
requires op_hooks_policy<typename P::op_hooks>
struct op_hooks_of<P> {
  using type = typename P::op_hooks;
};
template <class P>
struct usable_policies {
  using clock = typename clock_of<P>::type;
  using id_source = typename id_source_of<P>::type;
  using value_traits = typename value_traits_of<P>::type;
  using op_hooks = typename op_hooks_of<P>::type;
};
}  // namespace detail

/// Returned by begin_op; pass it to end_op. Cheap to copy (16 bytes).
struct op_handle {
  op_record* record = nullptr;
  std::uint32_t queue = 0;
  std::uint32_t generation = 0;
  explicit operator bool() const noexcept { return record != nullptr; }
};

namespace detail {
inline std::atomic<std::uint32_t> next_queue_id{1};

template <int N>
struct feature_off {};

struct frame_stream {
  append_only_list<side_entry> entries;
  append_only_list<string_ref> items;
  void clear() noexcept {
    entries.clear();
    items.clear();
  }
};
struct arg_stream {
  append_only_list<side_entry> entries;
  append_only_list<arg_record> items;
  void clear() noexcept {
    entries.clear();
    items.clear();
  }
};

template <record_features F, class P>
struct op_store {
  append_only_list<op_record, typename P::id_source> ops;
  [[no_unique_address]] std::conditional_t<F.inputs, io_encoder, feature_off<0>> inputs;
  [[no_unique_address]] std::conditional_t<F.call_stack, frame_stream, feature_off<1>> call_stack;
  [[no_unique_address]] std::conditional_t<F.module_hierarchy, frame_stream, feature_off<2>>
      modules;
  [[no_unique_address]] std::conditional_t<F.extra_args, arg_stream, feature_off<3>> extra_args;
  void clear() noexcept {
    ops.clear();
    if constexpr (F.inputs) inputs.clear();
    if constexpr (F.call_stack) call_stack.clear();
    if constexpr (F.module_hierarchy) modules.clear();
    if constexpr (F.extra_args) extra_args.clear();
  }
};

template <class R>
struct list_store {
  append_only_list<R> list;
  void clear() noexcept { list.clear(); }
};

/// Storage of one kind in a sub-queue. Keyed on the kind's enum type as well as its value:
/// clang 14 matches partial specializations on `auto` parameters by value alone, so
/// `kind_store<my_enum{0}>` would otherwise pick the `event_kind::op` storage.
template <class KindType, KindType K, record_features F, class P>
struct kind_store_impl : list_store<generic_record<K>> {
  static_assert(std::is_trivially_copyable_v<extra_fields<K>>,
                "tracemodel::record_queue: the payload extra_fields<K> of a recorded kind must be "
                "trivially copyable");
};
template <record_features F, class P>
struct kind_store_impl<event_kind, event_kind::op, F, P> : op_store<F, P> {};
template <record_features F, class P>
struct kind_store_impl<event_kind, event_kind::allocation, F, P> : list_store<allocation_record> {};
template <record_features F, class P>
struct kind_store_impl<event_kind, event_kind::out_of_memory, F, P> : list_store<oom_record> {};
template <record_features F, class P>
struct kind_store_impl<event_kind, event_kind::backend, F, P> : list_store<backend_record> {};
template <record_features F, class P>
struct kind_store_impl<event_kind, event_kind::script_call, F, P> : list_store<call_record> {};
template <record_features F, class P>
struct kind_store_impl<event_kind, event_kind::native_call, F, P> : list_store<call_record> {};
template <record_features F, class P>
struct kind_store_impl<event_kind, event_kind::device_activity, F, P> : list_store<device_record> {
};

template <auto K, record_features F, class P>
using kind_store = kind_store_impl<decltype(K), K, F, P>;

template <class Schema, record_features F, class P>
struct thread_subqueue;

/// Everything one thread recorded into one queue.
template <auto... K, record_features F, class P>
struct thread_subqueue<schema<K...>, F, P> {
  using schema_type = schema<K...>;
  std::uint64_t tid = 0;           ///< the runtime's small thread id
  std::uint64_t os_tid = 0;        ///< the operating system's thread id
  std::uint64_t pthread_id32 = 0;  ///< the thread as CUPTI's API records name it
  string_arena arena;
  std::tuple<kind_store<K, F, P>...> stores;

  template <auto Kind>
  auto& store() noexcept {
    return std::get<schema_type::template index_of<Kind>>(stores);
  }
  void clear() noexcept {
    std::apply([](auto&... s) { (s.clear(), ...); }, stores);
    arena.clear();
  }
};
}  // namespace detail

template <class Schema = default_schema, record_features Features = record_features{},
          class Policies = default_record_policies>
class record_queue {
  // One message per missing piece of the policies (collect/concepts.hpp), before anything else
  // (the check's own assertions carry the messages).
  static_assert(((void)detail::check_record_policies<Policies>(), true));
  using usable = detail::usable_policies<Policies>;  // Policies, defaulted where they fail

 public:
  using schema_type = Schema;
  using policies = Policies;
  using clock = typename usable::clock;
  using value_traits_type = typename usable::value_traits;
  using hooks = typename usable::op_hooks;
  using subqueue_type = detail::thread_subqueue<Schema, Features, usable>;
  static constexpr record_features features = Features;
  static constexpr bool records_ops = Schema::template contains<event_kind::op>;
  static_assert(
      !Features.inputs || !std::is_same_v<value_traits_type, no_value_traits>,
      "record_queue: recording inputs needs Policies::value_traits (collect/encoder.hpp)");

  record_queue() : id_(detail::next_queue_id.fetch_add(1, std::memory_order_relaxed)) {
    origin_ = clock_sync_point::take<clock>();
  }
  record_queue(const record_queue&) = delete;
  record_queue& operator=(const record_queue&) = delete;
  ~record_queue() = default;

  // ---- session -------------------------------------------------------------------------
  /// Starts (or resumes) recording. Each start opens a recording window: device records
  /// (`record_device`) are kept by materialize when their launch, or without one their own
  /// start, lies in a window, whenever they are decoded. A queue records from its creation.
  void start() {
    std::lock_guard lock(window_mutex_);
    if (active_.load(std::memory_order_relaxed)) return;
    windows_.push_back({clock::now(), ~approx_time{0}});
    active_.store(true, std::memory_order_relaxed);
  }
  /// Stops recording and closes the current window.
  void stop() noexcept {
    std::lock_guard lock(window_mutex_);
    if (!active_.load(std::memory_order_relaxed)) return;
    windows_.back().end = clock::now();
    active_.store(false, std::memory_order_relaxed);
  }
  /// One relaxed load: a stopped queue only needs to be seen as stopped eventually.
  [[nodiscard]] bool active() const noexcept {
    return collection_enabled && active_.load(std::memory_order_relaxed);
  }
  /// A stretch of time (clock ticks, both ends included) during which the queue recorded.
  struct recording_window {
    approx_time begin;
    approx_time end;  ///< all ones while the window is open
  };
  /// The recording windows so far, oldest first (the first one opens at the queue's creation).
  [[nodiscard]] std::vector<recording_window> recording_windows() const {
    std::lock_guard lock(window_mutex_);
    return windows_;
  }
  [[nodiscard]] std::uint32_t id() const noexcept { return id_; }
  [[nodiscard]] static approx_time now() noexcept { return clock::now(); }

  // ---- ops -----------------------------------------------------------------------------
  TRACEMODEL_ALWAYS_INLINE op_handle begin_op(const op_info& info) requires records_ops {
    if (!active()) return {};
    subqueue_type& sq = subqueue();
    auto& store = sq.template store<event_kind::op>();
    op_record* r = begin_record(sq, store, info);
    if constexpr (Features.inputs) store.inputs.push_empty();
    return finish_begin(r, info.scope);
  }

  template <class V>
  TRACEMODEL_ALWAYS_INLINE op_handle begin_op(const op_info& info,
                                              std::span<const V> inputs) requires records_ops {
    if (!active()) return {};
    subqueue_type& sq = subqueue();
    auto& store = sq.template store<event_kind::op>();
    op_record* r = begin_record(sq, store, info);
    if constexpr (Features.inputs)
      store.inputs.template push<value_traits_type>(inputs);
    else
      (void)inputs;
    return finish_begin(r, info.scope);
  }

  TRACEMODEL_ALWAYS_INLINE bool end_op(op_handle h) noexcept requires records_ops {
    const approx_time t = clock::now();
    if (h.record == nullptr) return false;
    if (h.queue != id_ || h.generation != generation_.load(std::memory_order_acquire))
        [[unlikely]] {
      misuse_[h.queue != id_ ? 0 : 1].fetch_add(1, std::memory_order_relaxed);
      return false;
    }
    op_record* r = h.record;
    if (r->end != 0) [[unlikely]] {
      misuse_[2].fetch_add(1, std::memory_order_relaxed);
      return false;
    }
    detail::end_op_record(r, t);
    if constexpr (hooks::enabled) hooks::on_end(r->scope);
    return true;
  }

  /// The correlation id of the op behind a handle (0 for an empty handle).
  [[nodiscard]] static std::uint64_t correlation_id(op_handle h) noexcept {
    if (h.record == nullptr) return 0;
    return append_only_list<op_record, typename usable::id_source>::id_of(h.record);
  }

  /// Frames of the op's call stack, outermost first. Frames are copied.
  void record_call_stack(op_handle h, std::span<const std::string_view> frames) {
    static_assert(Features.call_stack,
                  "record_queue::record_call_stack: enable record_features::call_stack");
    if (h.record == nullptr || h.queue != id_) return;
    auto& sq = subqueue();
    record_frames(sq, sq.template store<event_kind::op>().call_stack, h, frames);
  }
  /// Module frames of the op, outermost first (exported joined by '.'). Frames are copied.
  void record_module_hierarchy(op_handle h, std::span<const std::string_view> frames) {
    static_assert(
        Features.module_hierarchy,
        "record_queue::record_module_hierarchy: enable record_features::module_hierarchy");
    if (h.record == nullptr || h.queue != id_) return;
    auto& sq = subqueue();
    record_frames(sq, sq.template store<event_kind::op>().modules, h, frames);
  }
  /// Extra key/value arguments of the op. Keys and string values are copied.
  void record_extra_args(op_handle h, std::span<const extra_arg> args) {
    static_assert(Features.extra_args,
                  "record_queue::record_extra_args: enable record_features::extra_args");
    if (h.record == nullptr || h.queue != id_) return;
    auto& sq = subqueue();
    auto& s = sq.template store<event_kind::op>().extra_args;
    s.entries.emplace_back(side_entry{correlation_id(h), static_cast<std::uint32_t>(args.size())});
    for (const extra_arg& a : args) {
      const std::string_view k = sq.arena.copy(a.key);
      const std::string_view v = sq.arena.copy(a.s);
      s.items.emplace_back(arg_record{k.data(), v.data(), static_cast<std::uint32_t>(k.size()),
                                      static_cast<std::uint32_t>(v.size()), a.i, a.f, a.type});
    }
  }

  // ---- other kinds ---------------------------------------------------------------------
  void record_allocation(
      std::uint64_t ptr, std::int64_t alloc_size, std::int64_t total_allocated,
      std::int64_t total_reserved, std::int8_t device_type = 0,
      std::int8_t device_index = -1) requires(Schema::template contains<event_kind::allocation>) {
    if (!active()) return;
    subqueue().template store<event_kind::allocation>().list.emplace_back(allocation_record{
        clock::now(), ptr, alloc_size, total_allocated, total_reserved, device_type, device_index});
  }

  void record_out_of_memory(std::int64_t alloc_size, std::int64_t total_allocated,
                            std::int64_t total_reserved, std::int8_t device_type = 0,
                            std::int8_t device_index =
                                -1) requires(Schema::template contains<event_kind::out_of_memory>) {
    if (!active()) return;
    subqueue().template store<event_kind::out_of_memory>().list.emplace_back(oom_record{
        clock::now(), alloc_size, total_allocated, total_reserved, device_type, device_index});
  }

  /// A span a backend measured itself, in ns since the Unix epoch. Names are copied when
  /// `copy_names` is set; otherwise they must outlive the next materialize.
  void record_backend(
      std::string_view name, std::string_view backend, std::int64_t start_ns, std::int64_t end_ns,
      op_scope scope = op_scope::function, std::int64_t debug_handle = -1,
      bool copy_names = false) requires(Schema::template contains<event_kind::backend>) {
    if (!active()) return;
    auto& sq = subqueue();
    if (copy_names) {
      name = sq.arena.copy(name);
      backend = sq.arena.copy(backend);
    }
    sq.template store<event_kind::backend>().list.emplace_back(
        backend_record{start_ns, end_ns, debug_handle, name.data(), backend.data(),
                       static_cast<std::uint32_t>(name.size()),
                       static_cast<std::uint32_t>(backend.size()), scope});
  }

  /// A call of the runtime's scripting language (start and end from `now()`); name copied.
  void record_script_call(
      std::string_view name, approx_time start, approx_time end, std::int64_t script_id = -1,
      std::int64_t parent_id = -1,
      std::int64_t module_id = -1) requires(Schema::template contains<event_kind::script_call>) {
    record_call<event_kind::script_call>(name, start, end, script_id, parent_id, module_id);
  }
  /// A native function called from the script; name copied.
  void record_native_call(
      std::string_view name, approx_time start, approx_time end, std::int64_t script_id = -1,
      std::int64_t parent_id = -1) requires(Schema::template contains<event_kind::native_call>) {
    record_call<event_kind::native_call>(name, start, end, script_id, parent_id, -1);
  }

  /// Stores a device-side record (a GPU activity or a runtime call, usually decoded by an
  /// adapter after the fact): it is stored whether or not the queue is recording now, and
  /// materialize keeps it when it belongs to a recording window (see `start`). The name is copied.
  void record_device(const device_record& r) requires(
      Schema::template contains<event_kind::device_activity>) {
    if constexpr (!collection_enabled) return;
    auto& sq = subqueue();
    const std::string_view n = sq.arena.copy(std::string_view(r.name, r.name_len));
    sq.template store<event_kind::device_activity>().list.emplace_back(r)->name = n.data();
  }

  /// Records an event of a kind without a dedicated recorder, at `now()`.
  template <auto K>
  void record(const extra_fields<K>& fields) {
    record_span<K>(clock::now(), 0, fields);
  }
  /// Records an event of a kind without a dedicated recorder, from `start` to `end` (ticks of
  /// `now()`; end 0 for an instant). A payload member `end_ns` receives the converted end.
  template <auto K>
  void record_span(approx_time start, approx_time end, const extra_fields<K>& fields) {
    static_assert(Schema::template contains<K>,
                  "record_queue::record<K>: K is not a kind of the queue's schema");
    if (!active()) return;
    subqueue().template store<K>().list.emplace_back(generic_record<K>{start, end, fields});
  }

  // ---- misuse counters -----------------------------------------------------------------
  struct misuse_counts {
    std::uint64_t foreign_handle = 0;
    std::uint64_t stale_handle = 0;
    std::uint64_t ended_twice = 0;
  };
  [[nodiscard]] misuse_counts misuse() const noexcept {
    return {misuse_[0].load(std::memory_order_relaxed), misuse_[1].load(std::memory_order_relaxed),
            misuse_[2].load(std::memory_order_relaxed)};
  }

  [[nodiscard]] std::size_t thread_count() const {
    std::lock_guard lock(mutex_);
    return subqueues_.size();
  }

  /// For materialization (collect/materialize.hpp): calls `f(subqueues)` with every thread's
  /// sub-queue in order of creation (a range of `std::unique_ptr<subqueue_type>`), then
  /// empties them, returns their blocks to the pool and starts a new generation (handles from
  /// before become stale). Returns the misuse counted since the previous call.
  template <class F>
  misuse_counts consume(F&& f) {
    std::lock_guard lock(mutex_);
    f(static_cast<const std::vector<std::unique_ptr<subqueue_type>>&>(subqueues_));
    for (auto& sq : subqueues_) sq->clear();
    generation_.fetch_add(1, std::memory_order_release);
    const misuse_counts now = misuse();
    const misuse_counts delta{now.foreign_handle - misuse_taken_.foreign_handle,
                              now.stale_handle - misuse_taken_.stale_handle,
                              now.ended_twice - misuse_taken_.ended_twice};
    misuse_taken_ = now;
    return delta;
  }
  /// The clock sync point taken when the queue was created: the converter of every
  /// materialization is calibrated from it to the time of materialization.
  [[nodiscard]] clock_sync_point origin() const noexcept { return origin_; }

 private:
  TRACEMODEL_ALWAYS_INLINE subqueue_type& subqueue() {
    cache& c = cache_;
    if (c.key == id_) [[likely]]
      return *c.ref;
    return subqueue_slow();
  }

  TRACEMODEL_NOINLINE subqueue_type& subqueue_slow() {
    const std::uint64_t tid = current_thread_id();
    std::lock_guard lock(mutex_);
    subqueue_type* sq = nullptr;
    if (auto* i = by_tid_.find(tid)) {
      sq = subqueues_[*i].get();
    } else {
      auto p = std::make_unique<subqueue_type>();
      p->tid = tid;
      p->os_tid = detail::os_thread_id();
      p->pthread_id32 = detail::pthread_thread_id32();
      sq = p.get();
      by_tid_.try_emplace(tid, static_cast<std::uint32_t>(subqueues_.size()));
      subqueues_.push_back(std::move(p));
    }
    cache_ = {id_, sq};
    return *sq;
  }

  template <class Store>
  TRACEMODEL_ALWAYS_INLINE op_record* begin_record(subqueue_type& sq, Store& store,
                                                   const op_info& info) {
    std::string_view name = info.name;
    if (info.copy_name) [[unlikely]]
      name = sq.arena.copy(name);
    op_record* r = store.ops.emplace_back();
    detail::begin_op_record(r, name, info);
    detail::count_open_op(r);
    return r;
  }

  TRACEMODEL_ALWAYS_INLINE op_handle finish_begin(op_record* r, op_scope scope) {
    if constexpr (hooks::enabled) hooks::on_begin(correlation_id(op_handle{r, 0, 0}), scope);
    const std::uint32_t gen = generation_.load(std::memory_order_relaxed);
    // The start is read last so that the bookkeeping above is not part of the op's time.
    r->start = clock::now();
    return {r, id_, gen};
  }

  template <class Stream>
  void record_frames(subqueue_type& sq, Stream& s, op_handle h,
                     std::span<const std::string_view> frames) {
    s.entries.emplace_back(
        side_entry{correlation_id(h), static_cast<std::uint32_t>(frames.size())});
    for (std::string_view f : frames) {
      const std::string_view c = sq.arena.copy(f);
      s.items.emplace_back(string_ref{c.data(), static_cast<std::uint32_t>(c.size())});
    }
  }

  template <auto K>
  void record_call(std::string_view name, approx_time start, approx_time end, std::int64_t id,
                   std::int64_t parent, std::int64_t module) {
    if (!active()) return;
    auto& sq = subqueue();
    const std::string_view n = sq.arena.copy(name);
    sq.template store<K>().list.emplace_back(call_record{
        start, end, n.data(), static_cast<std::uint32_t>(n.size()), id, parent, module});
  }

  struct cache {
    std::uint32_t key = 0;
    subqueue_type* ref = nullptr;
  };
  static inline thread_local cache cache_{};

  const std::uint32_t id_;
  std::atomic<bool> active_{true};
  mutable std::mutex window_mutex_;
  std::vector<recording_window> windows_{recording_window{0, ~approx_time{0}}};
  std::atomic<std::uint32_t> generation_{0};
  std::atomic<std::uint64_t> misuse_[3]{};
  misuse_counts misuse_taken_{};
  clock_sync_point origin_{};
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<subqueue_type>> subqueues_;
  detail::flat_map<std::uint32_t> by_tid_;
};

TRACEMODEL_END_NAMESPACE
