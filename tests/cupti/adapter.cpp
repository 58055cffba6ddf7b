// The CUPTI adapter without a GPU: hand-made activity buffers walked by CUPTI's own iterator,
// decoded, recorded, linked; the callback-id registry; what enabling says on a machine without
// a driver.
#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <vector>

#include <unistd.h>

#include <tracemodel/adapters/cupti.hpp>
#include <tracemodel/algo/analyze.hpp>
#include <tracemodel/collect.hpp>
#include <tracemodel/formats/chrome_trace_writer.hpp>

using namespace tracemodel;
namespace tc = tracemodel::cupti;

namespace {

using policies = tc::record_policies<>;
using queue_type = record_queue<default_schema, record_features{}, policies>;

/// A CUPTI activity buffer built by hand: records at 8-byte aligned offsets.
struct buffer {
  alignas(8) std::uint8_t bytes[8192] = {};
  std::size_t used = 0;
  template <class R>
  R& add(CUpti_ActivityKind kind) {
    used = (used + 7) & ~std::size_t{7};
    REQUIRE(used + sizeof(R) <= sizeof bytes);
    R* r = reinterpret_cast<R*>(bytes + used);
    std::memset(static_cast<void*>(r), 0, sizeof(R));
    r->kind = kind;
    used += sizeof(R);
    return *r;
  }
  void external(std::uint32_t correlation, std::uint64_t op) {
    auto& r = add<CUpti_ActivityExternalCorrelation>(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION);
    r.externalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0;
    r.externalId = op;
    r.correlationId = correlation;
  }
  void api(std::uint32_t cbid, std::uint64_t start, std::uint64_t end, std::uint32_t correlation) {
    auto& r = add<CUpti_ActivityAPI>(CUPTI_ACTIVITY_KIND_RUNTIME);
    r.cbid = cbid;
    r.start = start;
    r.end = end;
    r.processId = static_cast<std::uint32_t>(::getpid());
    r.threadId =
        static_cast<std::uint32_t>(tracemodel::detail::pthread_thread_id32());  // as CUPTI does
    r.correlationId = correlation;
  }
};

std::int64_t int_attr(const event_table& t, event_index i, std::string_view key) {
  for (const attribute& a : t.attrs_of(t.events[i]))
    if (t.strings.view(a.key) == key) return a.i;
  return -1;
}
std::vector<std::int64_t> list_attr(const event_table& t, event_index i, std::string_view key) {
  for (const attribute& a : t.attrs_of(t.events[i]))
    if (t.strings.view(a.key) == key) {
      const auto l = t.int_list(a);
      return {l.begin(), l.end()};
    }
  return {};
}

}  // namespace

TEST_SUITE("cupti") {
  TEST_CASE("registry: launches, graph launches, memcpy and memset by callback id") {
    using tc::launch;
    CHECK(tc::runtime_launch(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000) ==
          launch::kernel_launch);
    CHECK(tc::runtime_launch(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000) ==
          launch::kernel_launch);
    CHECK(tc::runtime_launch(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060) ==
          launch::kernel_launch);
    CHECK(tc::runtime_launch(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000) ==
          launch::kernel_launch);
    CHECK(tc::runtime_launch(CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000) ==
          launch::graph_launch);
    CHECK(tc::runtime_launch(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020) == launch::memcpy);
    CHECK(tc::runtime_launch(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyPeerAsync_v4000) ==
          launch::memcpy_peer);
    CHECK(tc::runtime_launch(CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020) == launch::memset);
    CHECK(tc::runtime_launch(CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020) == launch::none);
    CHECK(tc::runtime_launch(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchHostFunc_v10000) == launch::none);
    CHECK(tc::runtime_launch(CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020) == launch::none);
    // Triton and other JITs launch through the driver.
    CHECK(tc::driver_launch(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel) == launch::kernel_launch);
    CHECK(tc::driver_launch(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx) == launch::kernel_launch);
    CHECK(tc::driver_launch(CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch) == launch::graph_launch);
    CHECK(tc::driver_launch(CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2) == launch::memcpy);
    CHECK(tc::driver_launch(CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async) == launch::memset);
    CHECK(tc::driver_launch(CUPTI_DRIVER_TRACE_CBID_cuCtxGetCurrent) == launch::none);
  }

  TEST_CASE("decoding hand-made buffers: each kernel under its launch, the launch under its op") {
    queue_type q;
    q.start();
    std::uint64_t mm_corr = 0, fill_corr = 0;
    buffer b;
    {
      const op_handle mm = q.begin_op({.name = "aten::mm"});
      mm_corr = queue_type::correlation_id(mm);
      const std::uint64_t t0 = queue_type::now();
      b.external(100, mm_corr);
      b.api(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, t0, queue_type::now(), 100);
      q.end_op(mm);
    }
    {
      const op_handle fill = q.begin_op({.name = "aten::fill_"});
      fill_corr = queue_type::correlation_id(fill);
      b.external(101, fill_corr);
      const std::uint64_t t1 = queue_type::now();
      b.api(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020, t1, queue_type::now(), 101);
      b.external(102, fill_corr);
      const std::uint64_t t2 = queue_type::now();
      b.api(CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020, t2, queue_type::now(), 102);
      b.external(103, fill_corr);
      const std::uint64_t t3 = queue_type::now();
      b.api(CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020, t3, queue_type::now(), 103);  // no flow
      q.end_op(fill);
    }
    const std::uint64_t d0 = queue_type::now();
    auto& k = b.add<CUpti_ActivityKernel10>(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    k.start = d0 + 100;
    k.end = d0 + 900;
    k.deviceId = 0;
    k.contextId = 1;
    k.streamId = 7;
    k.gridX = 4, k.gridY = 2, k.gridZ = 1;
    k.blockX = 128, k.blockY = 1, k.blockZ = 1;
    k.registersPerThread = 32;
    k.staticSharedMemory = 1024;
    k.dynamicSharedMemory = 512;
    k.correlationId = 100;
    k.name = "sm90_gemm_kernel";
    auto& m = b.add<CUpti_ActivityMemcpy6>(CUPTI_ACTIVITY_KIND_MEMCPY);
    m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
    m.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
    m.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    m.bytes = 4096;
    m.start = d0 + 1000;
    m.end = d0 + 1500;
    m.deviceId = 0;
    m.contextId = 1;
    m.streamId = 8;
    m.correlationId = 101;
    auto& s = b.add<CUpti_ActivityMemset4>(CUPTI_ACTIVITY_KIND_MEMSET);
    s.bytes = 256;
    s.start = d0 + 1600;
    s.end = d0 + 1700;
    s.deviceId = 0;
    s.contextId = 1;
    s.streamId = 8;
    s.correlationId = 102;
    s.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    auto& y = b.add<CUpti_ActivitySynchronization2>(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION);
    y.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE;
    y.start = d0 + 1800;
    y.end = d0 + 1900;
    y.streamId = 8;
    y.contextId = 1;
    y.correlationId = 104;

    // The documented order: the queue stops (after the GPU work), then the adapter decodes.
    while (queue_type::now() <= d0 + 2000) {
    }
    q.stop();
    tc::decoder dec(static_cast<std::uint32_t>(::getpid()));
    const std::size_t walked = tc::decode_buffer(
        dec, b.bytes, b.used, [&q](const device_record& r) { q.record_device(r); });
    CHECK(walked == 12);
    CHECK(dec.stats().records == 12);
    CHECK(dec.stats().correlations == 4);
    CHECK(dec.stats().decoded == 8);

    event_table t = materialize(q);
    analyze(t);
    REQUIRE(t.size() == 10);  // 2 ops, 4 runtime calls, kernel, memcpy, memset, sync
    CHECK(t.anomalies[anomaly::outside_recording] == 0);
    CHECK(t.anomalies[anomaly::dangling_correlation] ==
          1);  // the sync: its call is not in the buffer
    CHECK(t.anomalies.total() == 1);
    auto find = [&t](std::string_view name) {
      for (event_index i = 0; i < t.size(); ++i)
        if (t.name(i) == name) return i;
      FAIL("no event named " << name);
      return no_event;
    };
    const event_index mm = find("aten::mm"), fill = find("aten::fill_");
    const event_index launch = find("cudaLaunchKernel"), copy = find("cudaMemcpyAsync"),
                      set = find("cudaMemsetAsync"), get = find("cudaGetDevice");
    const event_index kernel = find("sm90_gemm_kernel"),
                      memcpy_ev = find("Memcpy HtoD (Pageable -> Device)"),
                      memset_ev = find("Memset (Device)"), sync = find("Stream Sync");
    // The tree: kernel under its launch under its op.
    CHECK(t.events[kernel].parent == launch);
    CHECK(t.events[launch].parent == mm);
    CHECK(t.events[memcpy_ev].parent == copy);
    CHECK(t.events[memset_ev].parent == set);
    CHECK(t.events[copy].parent == fill);
    CHECK(t.events[set].parent == fill);
    CHECK(t.events[get].parent == fill);
    // Fields.
    const auto& kd = t.events[kernel].get<event_kind::device_activity>();
    CHECK(kd.activity == activity_type::kernel);
    CHECK(kd.device == 0);
    CHECK(kd.stream == 7);
    CHECK(kd.correlation_id == 100);
    CHECK(kd.external_id == mm_corr);
    CHECK(t.events[kernel].pid == 0);
    CHECK(t.events[kernel].tid == 7);
    CHECK(t.events[kernel].duration_ns() > 0);
    CHECK(list_attr(t, kernel, "grid") == std::vector<std::int64_t>{4, 2, 1});
    CHECK(list_attr(t, kernel, "block") == std::vector<std::int64_t>{128, 1, 1});
    CHECK(int_attr(t, kernel, "registers per thread") == 32);
    CHECK(int_attr(t, kernel, "shared memory") == 1536);
    CHECK(int_attr(t, kernel, "context") == 1);
    const auto& ld = t.events[launch].get<event_kind::device_activity>();
    CHECK(ld.activity == activity_type::cuda_runtime);
    CHECK(ld.external_id == mm_corr);
    CHECK(int_attr(t, launch, "cbid") == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000);
    CHECK(t.events[launch].tid ==
          t.events[mm].tid);  // CUPTI's thread id (pthread_self) mapped to the runtime's id
    const auto& md = t.events[memcpy_ev].get<event_kind::device_activity>();
    CHECK(md.bytes == 4096);
    CHECK(md.external_id == fill_corr);
    CHECK(int_attr(t, memcpy_ev, "copy kind") == CUPTI_ACTIVITY_MEMCPY_KIND_HTOD);
    CHECK(t.events[memset_ev].get<event_kind::device_activity>().bytes == 256);
    CHECK(t.events[sync].get<event_kind::device_activity>().activity == activity_type::cuda_sync);
    // The Chrome trace: one ac2g flow per launch (kernel, memcpy, memset), none for cudaGetDevice.
    const std::string json = chrome_trace_string(t);
    std::size_t starts = 0, ends = 0;
    for (std::size_t p = json.find("\"cat\":\"ac2g\""); p != std::string::npos;
         p = json.find("\"cat\":\"ac2g\"", p + 1)) {
      const std::size_t line = json.rfind('\n', p);
      starts += json.compare(line + 1, 8, "{\"ph\":\"s") == 0 ? 1 : 0;
      ends += json.compare(line + 1, 8, "{\"ph\":\"f") == 0 ? 1 : 0;
    }
    CHECK(starts == 3);
    CHECK(ends == 3);
  }

  TEST_CASE("decode: kernel names demangled as Kineto writes them, once per name") {
    tc::decoder dec;
    auto name_of = [&dec](const char* mangled) {
      CUpti_ActivityKernel10 k{};
      k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
      k.name = mangled;
      k.start = 10;
      k.end = 20;
      const auto d = dec.decode(reinterpret_cast<const CUpti_Activity*>(&k));
      REQUIRE(d.has_value());
      return std::string(d->name, d->name_len);
    };
    CHECK(name_of("_Z5scalePffi") == "scale(float*, float, int)");
    // What nvcc made of a kernel in an anonymous namespace (seen on an H100).
    CHECK(name_of("_ZN43_GLOBAL__N__098e4a98_10_kernels_cu_256051665scaleEPffi") ==
          "(anonymous namespace)::scale(float*, float, int)");
    CHECK(name_of("_Z9gemm_tileILi128EEvPKfPfi") ==
          "void gemm_tile<128>(float const*, float*, int)");
    CHECK(name_of("_Z5scalePffi") == "scale(float*, float, int)");  // from the cache
    CHECK(name_of("_Zgarbage") == "_Zgarbage");                     // the demangler refuses: kept
    CHECK(name_of("sm90_xmma_gemm_f32f32") == "sm90_xmma_gemm_f32f32");  // extern "C": as it is
    CHECK(dec.stats().decoded == 6);
  }

  TEST_CASE("decode: kinds the adapter does not decode are counted") {
    tc::decoder dec;
    CUpti_ActivityMarker2 marker{};
    marker.kind = CUPTI_ACTIVITY_KIND_MARKER;
    CHECK_FALSE(dec.decode(reinterpret_cast<const CUpti_Activity*>(&marker)).has_value());
    CHECK(dec.stats().unknown_kind == 1);
    CHECK(tc::copy_kind_name(99) == "Unknown");
  }

  TEST_CASE("enable without a GPU: a clear error, and CPU recording goes on") {
    queue_type q;
    tc::adapter<queue_type> gpu(q);
    const tc::status s = gpu.enable();
    if (tc::driver_available()) {
      // A machine with a GPU: tracing comes on.
      CHECK(s.ok);
      gpu.disable();
      return;
    }
    CHECK_FALSE(s.ok);
    CHECK(s.message.find("GPU tracing unavailable: no NVIDIA driver") == 0);
    CHECK_FALSE(gpu.enabled());
    // Straight to CUPTI: any refusal of the first call is "unavailable", with CUPTI's code.
    tc::adapter<queue_type> direct(q, {.check_driver = false});
    const tc::status d = direct.enable();
    CHECK_FALSE(d.ok);
    CHECK(d.code != 0);
    CHECK(d.message.find(
              "GPU tracing unavailable: cuptiActivityRegisterTimestampCallback failed: ") == 0);
    MESSAGE("without a driver CUPTI says: " << d.message);
    // CPU events are still recorded, and the op hooks did not push anything.
    q.start();
    { TRACEMODEL_SCOPED_OP(q, .name = "aten::add"); }
    q.stop();
    CHECK(materialize(q).size() == 1);
    CHECK(gpu.stats().buffers_completed == 0);
  }
}
