// tracemodel/adapters/cupti — GPU activities from CUPTI into a record queue.
//
//   using policies = tracemodel::cupti::record_policies<>;   // pushes external correlation
//   tracemodel::record_queue<tracemodel::default_schema, {}, policies> queue;
//   tracemodel::cupti::adapter<decltype(queue)> gpu(queue);
//   if (auto s = gpu.enable(); !s) std::fprintf(stderr, "GPU tracing off: %s\n",
//   s.message.c_str()); queue.start();  ... run ...  queue.stop(); gpu.disable(); // forced flush,
//   decode, dropped records counted auto table = tracemodel::materialize(queue);
//
// Records decoded after `queue.stop()` are not lost: the queue stores them and materialize keeps
// those of its recording windows (a launch inside one keeps its kernel, whenever that ran); the
// others are counted as `anomaly::outside_recording`.
//
// `enable` checks for a driver and a device first (dlopen libcuda.so.1, cuInit,
// cuDeviceGetCount), then treats any failure of the first CUPTI enable as "unavailable" and
// says which call failed with CUPTI's code and text (999 CUPTI_ERROR_UNKNOWN without a driver,
// other codes elsewhere). The profiler goes on recording CPU events either way.
//
// While enabled, `record_policies` make `begin_op` push the op's correlation id as external
// correlation (CUSTOM0 for ops, CUSTOM1 for user scopes) and `end_op` pop it; when no adapter
// is enabled that is one relaxed load per op, and a queue with the default policies has no hook
// at all. CUPTI's clock is pointed at the queue's clock, so host and device times share one
// time base. One adapter is enabled at a time (CUPTI's callbacks are process-wide).
#pragma once

#include <dlfcn.h>

#include <unistd.h>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <string>

#include <cupti.h>

#include "tracemodel/adapters/cupti/buffers.hpp"
#include "tracemodel/adapters/cupti/decode.hpp"
#include "tracemodel/collect/record_queue.hpp"
#include "tracemodel/config.hpp"

TRACEMODEL_BEGIN_NAMESPACE
namespace cupti {

/// The outcome of `enable`: converts to true when GPU tracing is on.
struct status {
  bool ok = false;
  int code = 0;         ///< CUPTI's or the driver's code, 0 when none applies
  std::string message;  ///< what is missing or what failed
  explicit operator bool() const noexcept { return ok; }
};

namespace detail {
inline std::atomic<bool> external_correlation{false};
}

/// Op hooks for a record queue: external correlation while an adapter is enabled.
struct op_hooks {
  static constexpr bool enabled = true;
  static void on_begin(std::uint64_t correlation_id, op_scope scope) noexcept {
    if (!detail::external_correlation.load(std::memory_order_relaxed)) return;
    cuptiActivityPushExternalCorrelationId(scope == op_scope::user_scope
                                               ? CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM1
                                               : CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0,
                                           correlation_id);
  }
  static void on_end(op_scope scope) noexcept {
    if (!detail::external_correlation.load(std::memory_order_relaxed)) return;
    std::uint64_t last = 0;
    cuptiActivityPopExternalCorrelationId(scope == op_scope::user_scope
                                              ? CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM1
                                              : CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0,
                                          &last);
  }
};

/// Record-queue policies with the CUPTI op hooks; the rest from `Base`.
template <class Base = default_record_policies>
struct record_policies : Base {
  using op_hooks = cupti::op_hooks;
};

/// Is there an NVIDIA driver with at least one device? (Kineto asks cudaGetDeviceCount; this
/// asks the driver directly, so it needs no CUDA runtime.)
inline status driver_available() {
  void* lib = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) return {false, 0, "no NVIDIA driver: libcuda.so.1 cannot be loaded"};
  using init_fn = int (*)(unsigned);
  using count_fn = int (*)(int*);
  auto init = reinterpret_cast<init_fn>(::dlsym(lib, "cuInit"));
  auto count = reinterpret_cast<count_fn>(::dlsym(lib, "cuDeviceGetCount"));
  if (init == nullptr || count == nullptr)
    return {false, 0, "the NVIDIA driver library lacks cuInit/cuDeviceGetCount"};
  if (const int rc = init(0); rc != 0)
    return {false, rc, "cuInit failed with code " + std::to_string(rc)};
  int n = 0;
  if (const int rc = count(&n); rc != 0)
    return {false, rc, "cuDeviceGetCount failed with code " + std::to_string(rc)};
  if (n == 0) return {false, 0, "the NVIDIA driver reports no device"};
  return {true, 0, std::to_string(n) + " device(s)"};
}

inline std::string cupti_error(const char* call, CUptiResult rc) {
  const char* text = nullptr;
  cuptiGetResultString(rc, &text);
  return std::string(call) + " failed: " + std::to_string(static_cast<int>(rc)) + " " +
         (text ? text : "");
}

struct options {
  std::size_t buffer_size = 4u << 20;  ///< bytes per activity buffer (Kineto: 4 MiB)
  std::uint32_t max_buffers = 32;      ///< at most this many at once (128 MiB by default)
  bool driver_api = false;             ///< also driver API records (runtime API always)
  bool check_driver = true;            ///< false: go straight to CUPTI (tests of its refusal)
};

/// Counts of a session.
struct adapter_stats {
  decode_stats decoding;
  std::uint64_t buffers_completed = 0;
  std::uint64_t dropped = 0;          ///< records CUPTI reported dropped
  std::uint64_t buffers_refused = 0;  ///< buffer requests refused at the cap (CUPTI drops then)
};

template <class Queue>
class adapter {
 public:
  explicit adapter(Queue& q, options o = {})
      : q_(&q),
        opt_(o),
        pool_(o.buffer_size, o.max_buffers),
        dec_(static_cast<std::uint32_t>(::getpid())) {}
  adapter(const adapter&) = delete;
  adapter& operator=(const adapter&) = delete;
  ~adapter() {
    if (enabled_) disable();
  }

  /// Turns GPU tracing on, or says why it cannot be.
  status enable() {
    if (enabled_) return {true, 0, "already enabled"};
    if (active().load() != nullptr)
      return {false, 0, "another tracemodel CUPTI adapter is enabled"};
    if (opt_.check_driver)
      if (status d = driver_available(); !d)
        return {false, d.code, "GPU tracing unavailable: " + d.message};
    adapter* expected = nullptr;
    if (!active().compare_exchange_strong(expected, this))
      return {false, 0, "another tracemodel CUPTI adapter is enabled"};
    CUptiResult rc = cuptiActivityRegisterTimestampCallback(&timestamp);
    if (rc != CUPTI_SUCCESS) return fail("cuptiActivityRegisterTimestampCallback", rc);
    rc = cuptiActivityRegisterCallbacks(&buffer_requested, &buffer_completed);
    if (rc != CUPTI_SUCCESS) return fail("cuptiActivityRegisterCallbacks", rc);
    const CUpti_ActivityKind kinds[] = {CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION,
                                        CUPTI_ACTIVITY_KIND_RUNTIME,
                                        CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
                                        CUPTI_ACTIVITY_KIND_MEMCPY,
                                        CUPTI_ACTIVITY_KIND_MEMCPY2,
                                        CUPTI_ACTIVITY_KIND_MEMSET,
                                        CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,
                                        CUPTI_ACTIVITY_KIND_CUDA_EVENT,
                                        CUPTI_ACTIVITY_KIND_OVERHEAD,
                                        CUPTI_ACTIVITY_KIND_DRIVER};
    for (const CUpti_ActivityKind k : kinds) {
      if (k == CUPTI_ACTIVITY_KIND_DRIVER && !opt_.driver_api) continue;
      rc = cuptiActivityEnable(k);
      if (rc != CUPTI_SUCCESS) return fail("cuptiActivityEnable", rc);
      enabled_kinds_[enabled_count_++] = k;
    }
    enabled_ = true;
    detail::external_correlation.store(true, std::memory_order_relaxed);
    return {true, 0, "GPU tracing on"};
  }

  /// Stops tracing: forced flush, every buffer decoded into the queue, kinds disabled.
  void disable() {
    if (!enabled_) return;
    detail::external_correlation.store(false, std::memory_order_relaxed);
    cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    drain();
    std::size_t dropped = 0;
    if (cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped) == CUPTI_SUCCESS)
      stats_.dropped += dropped;
    for (std::size_t k = 0; k < enabled_count_; ++k) cuptiActivityDisable(enabled_kinds_[k]);
    enabled_count_ = 0;
    enabled_ = false;
    active().store(nullptr);
  }

  /// Decodes the buffers CUPTI has completed so far into the queue (also done by `disable`).
  void drain() {
    for (const auto& b : pool_.take_completed()) {
      decode_buffer(dec_, b.data, b.valid,
                    [this](const device_record& r) { q_->record_device(r); });
      ++stats_.buffers_completed;
      pool_.release(b.data);
    }
  }

  [[nodiscard]] adapter_stats stats() const {
    adapter_stats s = stats_;
    s.decoding = dec_.stats();
    s.buffers_refused = pool_.refused();
    return s;
  }
  [[nodiscard]] bool enabled() const noexcept { return enabled_; }

 private:
  status fail(const char* call, CUptiResult rc) {
    for (std::size_t k = 0; k < enabled_count_; ++k) cuptiActivityDisable(enabled_kinds_[k]);
    enabled_count_ = 0;
    active().store(nullptr);
    return {false, static_cast<int>(rc), "GPU tracing unavailable: " + cupti_error(call, rc)};
  }
  static std::atomic<adapter*>& active() {
    static std::atomic<adapter*> a{nullptr};
    return a;
  }
  static std::uint64_t CUPTIAPI timestamp() { return static_cast<std::uint64_t>(Queue::now()); }
  static void CUPTIAPI buffer_requested(std::uint8_t** buffer, std::size_t* size,
                                        std::size_t* max_records) {
    adapter* a = active().load();
    *buffer = a != nullptr ? a->pool_.acquire() : nullptr;
    *size = *buffer != nullptr ? a->pool_.buffer_size() : 0;
    *max_records = 0;
  }
  static void CUPTIAPI buffer_completed(CUcontext, std::uint32_t, std::uint8_t* buffer, std::size_t,
                                        std::size_t valid) {
    adapter* a = active().load();
    if (a != nullptr && buffer != nullptr) a->pool_.push_completed(buffer, valid);
  }

  Queue* q_;
  options opt_;
  buffer_pool pool_;
  decoder dec_;
  adapter_stats stats_;
  bool enabled_ = false;
  CUpti_ActivityKind enabled_kinds_[16]{};
  std::size_t enabled_count_ = 0;
};

}  // namespace cupti
TRACEMODEL_END_NAMESPACE
