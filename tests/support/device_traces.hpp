// Small device traces computed by hand, shared by the tests of the exact rules (tests/algo/) and
// of HTA's (tests/hta/); and a generator of deep nestings.
#pragma once

#include <string>

namespace tmtest {

// Two devices, streams 7 and 8: a computation kernel [10, 20) us, a communication kernel
// [15, 30), a copy [28, 35), a kernel on device 1 [40, 41.5), a stream wait [50, 51), and a CPU
// op that carries `stream: 0` (as Triton's do) [60, 61).
// clang-format off
const char* const small_trace = R"json({"traceEvents":[
{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":0,"dur":2,"args":{"correlation":1}},
{"ph":"X","cat":"kernel","name":"gemm","pid":0,"tid":7,"ts":10,"dur":10,"args":{"device":0,"stream":7,"correlation":1}},
{"ph":"X","cat":"kernel","name":"ncclKernel_AllReduce_RING_LL_Sum_float","pid":0,"tid":8,"ts":15,"dur":15,"args":{"device":0,"stream":8,"correlation":2}},
{"ph":"X","cat":"gpu_memcpy","name":"Memcpy HtoD (Pageable to Device)","pid":0,"tid":8,"ts":28,"dur":7,"args":{"device":0,"stream":8,"correlation":3}},
{"ph":"X","cat":"kernel","name":"gemm","pid":1,"tid":7,"ts":40,"dur":1.5,"args":{"device":1,"stream":7,"correlation":4}},
{"ph":"X","cat":"cuda_sync","name":"Stream Wait Event","pid":0,"tid":7,"ts":50,"dur":1,"args":{"device":0,"stream":7,"correlation":5}},
{"ph":"X","cat":"cpu_op","name":"triton_op","pid":1,"tid":1,"ts":60,"dur":1,"args":{"stream":0}}
]})json";
// clang-format on

// clang-format off
// Four launches on device 0, stream 7, a memset without its call, and a kernel of device 1.
const char* const launches_trace = R"json({"traceEvents":[
{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":100,"dur":2,"args":{"correlation":1}},
{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":105,"dur":2,"args":{"correlation":2}},
{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":150,"dur":2,"args":{"correlation":4}},
{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":200,"dur":2,"args":{"correlation":3}},
{"ph":"X","cat":"kernel","name":"k1","pid":0,"tid":7,"ts":110,"dur":10,"args":{"device":0,"stream":7,"correlation":1}},
{"ph":"X","cat":"kernel","name":"k2","pid":0,"tid":7,"ts":125,"dur":5,"args":{"device":0,"stream":7,"correlation":2}},
{"ph":"X","cat":"kernel","name":"k3","pid":0,"tid":7,"ts":210,"dur":10,"args":{"device":0,"stream":7,"correlation":3}},
{"ph":"X","cat":"kernel","name":"k4","pid":0,"tid":7,"ts":300,"dur":1,"args":{"device":0,"stream":7,"correlation":4}},
{"ph":"X","cat":"gpu_memset","name":"Memset (Device)","pid":0,"tid":7,"ts":301,"dur":1,"args":{"device":0,"stream":7,"correlation":99}},
{"ph":"X","cat":"kernel","name":"k6","pid":1,"tid":7,"ts":0,"dur":5,"args":{"device":1,"stream":7,"correlation":98}}
]})json";
// clang-format on

/// `depth` ops of one thread, each inside the one before it.
inline std::string nested_ops_trace(int depth) {
  std::string text = R"({"traceEvents":[)";
  for (int k = 0; k < depth; ++k)
    text += (k ? "," : "") +
            std::string(R"({"ph":"X","cat":"cpu_op","name":"op","pid":1,"tid":1,"ts":)") +
            std::to_string(k) + ",\"dur\":" + std::to_string(2 * (depth - k)) + "}";
  return text + "]}";
}

}  // namespace tmtest
