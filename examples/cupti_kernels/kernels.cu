// The device side of examples/cupti_kernels: a few kernels, launched on two streams. Kept apart
// from the host program so that nvcc only sees CUDA code; the host program is plain C++.
#include <cuda_runtime.h>

#include "kernels.hpp"

namespace {
__global__ void scale(float* x, float a, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= a;
}
__global__ void saxpy(const float* x, float* y, float a, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
__global__ void block_sum(const float* x, float* out, int n) {
  __shared__ float partial[256];
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  partial[threadIdx.x] = i < n ? x[i] : 0.0f;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s /= 2) {
    if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) atomicAdd(out, partial[0]);
}
__global__ void empty_kernel() {}

struct state {
  float* x = nullptr;
  float* y = nullptr;
  float* sum = nullptr;
  cudaStream_t streams[2] = {};
  int n = 0;
};
state g;
int blocks() { return (g.n + 255) / 256; }
}  // namespace

namespace gpu {
int init(int n) {
  g.n = n;
  if (cudaError_t e = cudaMalloc(&g.x, n * sizeof(float)); e != cudaSuccess) return e;
  if (cudaError_t e = cudaMalloc(&g.y, n * sizeof(float)); e != cudaSuccess) return e;
  if (cudaError_t e = cudaMalloc(&g.sum, sizeof(float)); e != cudaSuccess) return e;
  for (cudaStream_t& s : g.streams)
    if (cudaError_t e = cudaStreamCreate(&s); e != cudaSuccess) return e;
  return 0;
}
int copy_in(const float* host, int stream) {
  return cudaMemcpyAsync(g.x, host, g.n * sizeof(float), cudaMemcpyHostToDevice, g.streams[stream]);
}
int zero_y(int stream) { return cudaMemsetAsync(g.y, 0, g.n * sizeof(float), g.streams[stream]); }
int scale_x(float a, int stream) {
  scale<<<blocks(), 256, 0, g.streams[stream]>>>(g.x, a, g.n);
  return cudaGetLastError();
}
int saxpy_xy(float a, int stream) {
  saxpy<<<blocks(), 256, 0, g.streams[stream]>>>(g.x, g.y, a, g.n);
  return cudaGetLastError();
}
int sum_y(int stream) {
  cudaMemsetAsync(g.sum, 0, sizeof(float), g.streams[stream]);
  block_sum<<<blocks(), 256, 0, g.streams[stream]>>>(g.y, g.sum, g.n);
  return cudaGetLastError();
}
int launch_empty() {
  empty_kernel<<<1, 1>>>();
  return cudaGetLastError();
}
int synchronize() { return cudaDeviceSynchronize(); }
void release() {
  cudaFree(g.x);
  cudaFree(g.y);
  cudaFree(g.sum);
  for (cudaStream_t s : g.streams) cudaStreamDestroy(s);
}
}  // namespace gpu
