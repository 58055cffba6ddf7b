// The device side of examples/cupti_kernels (kernels.cu), as plain C++ declarations.
#pragma once

namespace gpu {
int init(int n);                             // 0 or a cudaError_t
int copy_in(const float* host, int stream);  // cudaMemcpyAsync, host to device
int zero_y(int stream);                      // cudaMemsetAsync
int scale_x(float a, int stream);            // kernel
int saxpy_xy(float a, int stream);           // kernel
int sum_y(int stream);                       // memset + kernel
int launch_empty();                          // an empty kernel (launch cost)
int synchronize();
void release();
}  // namespace gpu
