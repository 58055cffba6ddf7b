// tracemodel/adapters/cupti — CUPTI activity records to tracemodel device records.
//
// Decoding is apart from subscription, so it runs (and is tested) without a GPU: give it
// records, it gives `device_record`s for a record queue's `record_device`.
//
//   runtime / driver API     -> cuda_runtime / cuda_driver on the calling host thread; a call
//                               whose callback id starts work on the device (registry.hpp)
//                               starts an `ac2g` flow whose id is CUPTI's correlation id
//   kernel, memcpy (+ peer), memset
//                            -> kernel (its name demangled, as Kineto does) / gpu_memcpy /
//                               gpu_memset on (device, stream), ending
//                               the flow of their launch; grid, block, registers, shared
//                               memory, bytes, copy kind, context
//   synchronization, CUDA event, overhead
//                            -> cuda_sync / cuda_event / overhead
//   external correlation     -> remembered: the runtime/driver record it precedes and the
//                               device records of the same correlation id get the op's
//                               correlation id as `external_id` (CUSTOM0: ops, CUSTOM1: scopes)
//
// Records are read through the CUDA 13 structs (Kernel10, Memcpy6, MemcpyPtoP4, Memset4,
// API, ExternalCorrelation, Synchronization2, CudaEvent2, Overhead3); fields the adapter reads
// keep their offsets in the older versions. Timestamps are taken as they are: the adapter points
// CUPTI's clock at the record queue's clock, so they are already in its ticks.
#pragma once

#include <cxxabi.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include <cupti_activity.h>
#include <cupti_callbacks.h>

#include "tracemodel/adapters/cupti/registry.hpp"
#include "tracemodel/collect/records.hpp"
#include "tracemodel/config.hpp"

TRACEMODEL_BEGIN_NAMESPACE
namespace cupti {

inline std::string_view copy_kind_name(std::uint32_t k) noexcept {
  constexpr std::string_view names[] = {"Unknown", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA",
                                        "AtoD",    "DtoA", "DtoD", "HtoH", "PtoP"};
  return k < std::size(names) ? names[k] : "Unknown";
}
inline std::string_view memory_kind_name(std::uint32_t k) noexcept {
  constexpr std::string_view names[] = {"Unknown", "Pageable", "Pinned",        "Device",
                                        "Array",   "Managed",  "Device Static", "Managed Static"};
  return k < std::size(names) ? names[k] : "Unknown";
}
inline std::string_view sync_name(std::uint32_t t) noexcept {
  switch (t) {
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE:
      return "Event Sync";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT:
      return "Stream Wait Event";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE:
      return "Stream Sync";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE:
      return "Context Sync";
    default:
      return "Sync";
  }
}

/// Counts of what the decoder saw.
struct decode_stats {
  std::uint64_t records = 0;       ///< records given to `decode`
  std::uint64_t decoded = 0;       ///< device records made
  std::uint64_t correlations = 0;  ///< external correlation records
  std::uint64_t unknown_kind = 0;  ///< records of kinds the adapter does not decode
};

class decoder {
 public:
  /// `api_name(domain, cbid)` names runtime/driver calls; by default CUPTI's own table
  /// (`cuptiGetCallbackName`), with the version suffix ("_v7000") taken off.
  explicit decoder(std::uint32_t host_pid = 0) : host_pid_(host_pid) {}

  /// Decodes one record; `std::nullopt` for records that only carry information (external
  /// correlation) or kinds the adapter does not decode (counted).
  std::optional<device_record> decode(const CUpti_Activity* a) {
    ++stats_.records;
    switch (a->kind) {
      case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
        CUpti_ActivityExternalCorrelation r;
        std::memcpy(&r, a, sizeof r);
        auto& m = r.externalKind == CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM1 ? user_ : op_;
        m[r.correlationId] = r.externalId;
        ++stats_.correlations;
        return std::nullopt;
      }
      case CUPTI_ACTIVITY_KIND_RUNTIME:
      case CUPTI_ACTIVITY_KIND_DRIVER: {
        CUpti_ActivityAPI r;
        std::memcpy(&r, a, sizeof r);
        const bool runtime = a->kind == CUPTI_ACTIVITY_KIND_RUNTIME;
        device_record d = base(r.start, r.end, r.correlationId);
        d.activity = runtime ? activity_type::cuda_runtime : activity_type::cuda_driver;
        d.cbid = r.cbid;
        d.pid = r.processId;
        d.tid = r.threadId;
        d.host_thread = true;
        d.device = -1;
        d.stream = -1;
        set_name(d, api_name(runtime ? CUPTI_CB_DOMAIN_RUNTIME_API : CUPTI_CB_DOMAIN_DRIVER_API,
                             r.cbid));
        const launch l = runtime ? runtime_launch(r.cbid) : driver_launch(r.cbid);
        if (l != launch::none) {
          d.flow_type = flow_kind::async_cpu_gpu;
          d.flow_start = true;
          d.flow_id = r.correlationId;
        }
        return done(d);
      }
      case CUPTI_ACTIVITY_KIND_KERNEL:
      case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
        CUpti_ActivityKernel10 r;
        std::memcpy(&r, a, sizeof r);
        device_record d =
            on_device(r.start, r.end, r.correlationId, r.deviceId, r.streamId, r.contextId);
        d.activity = activity_type::kernel;
        set_name(d, r.name != nullptr ? demangled(r.name) : std::string_view("kernel"));
        d.grid[0] = static_cast<std::uint32_t>(r.gridX);
        d.grid[1] = static_cast<std::uint32_t>(r.gridY);
        d.grid[2] = static_cast<std::uint32_t>(r.gridZ);
        d.block[0] = static_cast<std::uint32_t>(r.blockX);
        d.block[1] = static_cast<std::uint32_t>(r.blockY);
        d.block[2] = static_cast<std::uint32_t>(r.blockZ);
        d.registers = r.registersPerThread;
        d.shared_memory = static_cast<std::uint32_t>(r.staticSharedMemory + r.dynamicSharedMemory);
        return done(d);
      }
      case CUPTI_ACTIVITY_KIND_MEMCPY: {
        CUpti_ActivityMemcpy6 r;
        std::memcpy(&r, a, sizeof r);
        device_record d =
            on_device(r.start, r.end, r.correlationId, r.deviceId, r.streamId, r.contextId);
        d.activity = activity_type::gpu_memcpy;
        d.bytes = r.bytes;
        d.copy_kind = r.copyKind;
        name_ = "Memcpy ";
        name_ += copy_kind_name(r.copyKind);
        name_ += " (";
        name_ += memory_kind_name(r.srcKind);
        name_ += " -> ";
        name_ += memory_kind_name(r.dstKind);
        name_ += ")";
        set_name(d, name_);
        return done(d);
      }
      case CUPTI_ACTIVITY_KIND_MEMCPY2: {
        CUpti_ActivityMemcpyPtoP4 r;
        std::memcpy(&r, a, sizeof r);
        device_record d =
            on_device(r.start, r.end, r.correlationId, r.deviceId, r.streamId, r.contextId);
        d.activity = activity_type::gpu_memcpy;
        d.bytes = r.bytes;
        d.copy_kind = r.copyKind;
        name_ = "Memcpy PtoP (device " + std::to_string(r.srcDeviceId) + " -> device " +
                std::to_string(r.dstDeviceId) + ")";
        set_name(d, name_);
        return done(d);
      }
      case CUPTI_ACTIVITY_KIND_MEMSET: {
        CUpti_ActivityMemset4 r;
        std::memcpy(&r, a, sizeof r);
        device_record d =
            on_device(r.start, r.end, r.correlationId, r.deviceId, r.streamId, r.contextId);
        d.activity = activity_type::gpu_memset;
        d.bytes = r.bytes;
        name_ = "Memset (";
        name_ += memory_kind_name(r.memoryKind);
        name_ += ")";
        set_name(d, name_);
        return done(d);
      }
      case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
        CUpti_ActivitySynchronization2 r;
        std::memcpy(&r, a, sizeof r);
        device_record d = base(r.start, r.end, r.correlationId);
        d.activity = activity_type::cuda_sync;
        d.context = r.contextId;
        d.stream = r.streamId == CUPTI_SYNCHRONIZATION_INVALID_VALUE
                       ? -1
                       : static_cast<std::int64_t>(r.streamId);
        d.pid = host_pid_;
        d.tid = d.stream < 0 ? 0 : static_cast<thread_key>(d.stream);
        set_name(d, sync_name(r.type));
        return done(d);
      }
      case CUPTI_ACTIVITY_KIND_CUDA_EVENT: {
        CUpti_ActivityCudaEvent2 r;
        std::memcpy(&r, a, sizeof r);
        device_record d = on_device(r.deviceTimestamp, r.deviceTimestamp, r.correlationId,
                                    r.deviceId, r.streamId, r.contextId);
        d.activity = activity_type::cuda_event;
        d.flow_type = flow_kind::none;
        d.flow_id = 0;
        set_name(d, "CUDA Event Record");
        return done(d);
      }
      case CUPTI_ACTIVITY_KIND_OVERHEAD: {
        CUpti_ActivityOverhead3 r;
        std::memcpy(&r, a, sizeof r);
        device_record d = base(r.start, r.end, r.correlationId);
        d.activity = activity_type::overhead;
        d.pid = host_pid_;
        if (r.objectKind == CUPTI_ACTIVITY_OBJECT_THREAD) {
          d.tid = r.objectId.pt.threadId;
          d.host_thread = true;
        }
        set_name(d, overhead_name(r.overheadKind));
        return done(d);
      }
      default:
        ++stats_.unknown_kind;
        return std::nullopt;
    }
  }

  [[nodiscard]] const decode_stats& stats() const noexcept { return stats_; }
  /// Forgets external correlations (between sessions).
  void clear() {
    op_.clear();
    user_.clear();
  }

 private:
  static std::string_view overhead_name(std::uint32_t k) {
    switch (k) {
      case CUPTI_ACTIVITY_OVERHEAD_DRIVER_COMPILER:
        return "Overhead: driver compiler";
      case CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH:
        return "Overhead: CUPTI buffer flush";
      case CUPTI_ACTIVITY_OVERHEAD_CUPTI_INSTRUMENTATION:
        return "Overhead: CUPTI instrumentation";
      case CUPTI_ACTIVITY_OVERHEAD_CUPTI_RESOURCE:
        return "Overhead: CUPTI resource";
      default:
        return "Overhead";
    }
  }
  std::string_view api_name(CUpti_CallbackDomain domain, std::uint32_t cbid) {
    const char* n = nullptr;
    if (cuptiGetCallbackName(domain, cbid, &n) != CUPTI_SUCCESS || n == nullptr) {
      name_ = (domain == CUPTI_CB_DOMAIN_RUNTIME_API ? "runtime call " : "driver call ") +
              std::to_string(cbid);
      return name_;
    }
    std::string_view s(n);
    if (const std::size_t v = s.rfind("_v");
        v != std::string_view::npos && v + 2 < s.size() &&
        s.find_first_not_of("0123456789", v + 2) == std::string_view::npos)
      s = s.substr(0, v);
    return s;
  }
  device_record base(std::uint64_t start, std::uint64_t end, std::uint32_t correlation) const {
    device_record d{};
    d.start = start;
    d.end = end;
    d.correlation_id = correlation;
    d.flow_type = flow_kind::none;
    if (const auto it = op_.find(correlation); it != op_.end())
      d.external_id = it->second;
    else if (const auto u = user_.find(correlation); u != user_.end())
      d.external_id = u->second;
    return d;
  }
  device_record on_device(std::uint64_t start, std::uint64_t end, std::uint32_t correlation,
                          std::uint32_t device, std::uint32_t stream, std::uint32_t context) const {
    device_record d = base(start, end, correlation);
    d.device = static_cast<std::int32_t>(device);
    d.stream = stream;
    d.context = context;
    d.pid = device;
    d.tid = stream;
    // Every device record ends the flow its launch started (when its launch was a flow start).
    d.flow_type = flow_kind::async_cpu_gpu;
    d.flow_start = false;
    d.flow_id = correlation;
    return d;
  }
  /// A kernel's name as Kineto writes it: demangled when it is a mangled C++ name, as it is
  /// otherwise (extern "C" kernels, or a name the demangler refuses). Each name is demangled
  /// once: a kernel is launched many times.
  std::string_view demangled(const char* mangled) {
    const std::string_view m(mangled);
    if (!m.starts_with("_Z")) return m;
    if (auto it = demangled_.find(m); it != demangled_.end()) return it->second;
    int rc = -1;
    char* d = abi::__cxa_demangle(mangled, nullptr, nullptr, &rc);
    std::string text = rc == 0 && d != nullptr ? std::string(d) : std::string(m);
    std::free(d);
    return demangled_.emplace(std::string(m), std::move(text)).first->second;
  }
  struct string_hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept {
      return std::hash<std::string_view>{}(s);
    }
  };

  static void set_name(device_record& d, std::string_view n) {
    d.name = n.data();
    d.name_len = static_cast<std::uint32_t>(n.size());
  }
  std::optional<device_record> done(const device_record& d) {
    ++stats_.decoded;
    return d;
  }

  std::uint32_t host_pid_;
  std::unordered_map<std::uint32_t, std::uint64_t> op_, user_;
  std::string name_;  // names made here live until the next decode; record_device copies them
  std::unordered_map<std::string, std::string, string_hash, std::equal_to<>> demangled_;
  decode_stats stats_;
};

/// Decodes every record of a completed buffer, walking it with CUPTI's own iterator, and
/// hands each device record to `sink`. Returns the number of records walked.
template <class Sink>
std::size_t decode_buffer(decoder& dec, std::uint8_t* buffer, std::size_t valid, Sink&& sink) {
  CUpti_Activity* rec = nullptr;
  std::size_t n = 0;
  while (cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) {
    ++n;
    if (auto d = dec.decode(rec)) sink(*d);
  }
  return n;
}

}  // namespace cupti
TRACEMODEL_END_NAMESPACE
