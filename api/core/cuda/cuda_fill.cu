#include <cuda_runtime.h>

#include <algorithm>

#include "api/core/cuda/cuda_device.h"

namespace tower::cuda {

namespace {
__global__ void fill_kernel(float* dst, std::size_t n, float value) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    dst[i] = value;
}
}  // namespace

void fill_floats(float* dst, int index, std::size_t n, float value) {
  if (n == 0) return;
  auto s = static_cast<cudaStream_t>(stream(index));
  set_device(index);
  const unsigned blocks = static_cast<unsigned>(std::min<std::size_t>((n + 255) / 256, 65535));
  fill_kernel<<<blocks, 256, 0, s>>>(dst, n, value);
  check(cudaGetLastError(), "filling " + std::to_string(n) + " floats on cuda:" + std::to_string(index));
}

}  // namespace tower::cuda
