// Test support: every real trace of the test data (tests/data/README.md says where each comes
// from), relative to the data directory.
#pragma once

namespace tmtest {

inline constexpr const char* real_traces[] = {
    "kineto/amd_trace_mi250_minitoy_train_ROCm6_2_kineto.json.gz",
    "kineto/call_stack_backward_thread.json",
    "kineto/cpu_only_rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz",
    "kineto/critical_path_alexnet_benchmark_result_2869224_1695835535_trace.json.gz",
    "kineto/critical_path_cuda_event_sync_event_sync_trace.json.gz",
    "kineto/execution_trace_benchmark_simple_add_trace.json.gz",
    "kineto/triton_example_triton_example.json.gz",
    "pytorch-1.13-kineto/adamw_zero_grad.kineto.json",
    "pytorch-1.13-kineto/conv_bn_infer.kineto.json",
    "pytorch-1.13-kineto/dataloader_sync.kineto.json",
    "pytorch-1.13-kineto/for_loop_indexing.kineto.json",
    "pytorch-1.13-kineto/memory_profile.kineto.json",
    "pytorch-1.13-kineto/mlp_train.kineto.json",
    "pytorch-1.13-kineto/nested_scopes_64.kineto.json",
    "pytorch-1.13-kineto/script_module.kineto.json",
    "pytorch-1.13-kineto/threads_fork.kineto.json",
    "pytorch-1.13/adamw_zero_grad.chrome_trace.json",
    "pytorch-1.13/conv_bn_infer.chrome_trace.json",
    "pytorch-1.13/dataloader_sync.chrome_trace.json",
    "pytorch-1.13/for_loop_indexing.chrome_trace.json",
    "pytorch-1.13/memory_profile.chrome_trace.json",
    "pytorch-1.13/mlp_train.chrome_trace.json",
    "pytorch-1.13/nested_scopes_64.chrome_trace.json",
    "pytorch-1.13/script_module.chrome_trace.json",
    "pytorch-1.13/threads_fork.chrome_trace.json",
};

}  // namespace tmtest
