#pragma once
// The one generic kernel of the CUDA backend: f(i) for every i in [0, n) in a grid-stride loop, f a functor of
// api/backend/math/ that the CPU backend runs in its own loops. Device code: include from .cu files only.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "api/backend/cuda/cuda_backend.h"
#include "api/backend/math/hd.h"

namespace tower::backend::cuda {

template <class F>
__global__ void for_each_kernel(Index n, F f) {
  const Index stride = static_cast<Index>(gridDim.x) * blockDim.x;
  for (Index i = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) f(i);
}

// Whether p may be read and written 16 bytes at a time (the functors' V = 4 forms, math/hd.h's Floats<4>).
inline bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

// Launches f over [0, n) on `stream`; `op` names the op in a launch error.
template <class F>
void for_each(Index n, const F& f, cudaStream_t stream, const char* op) {
  if (n <= 0) return;
  constexpr int kThreads = 256;
  // Enough blocks to fill any current GPU several times over; the loop covers the rest.
  const Index blocks = std::min<Index>((n + kThreads - 1) / kThreads, Index{1} << 16);
  for_each_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(n, f);
  check_cuda(cudaGetLastError(), std::string(op) + " (n=" + std::to_string(n) + ")");
}

}  // namespace tower::backend::cuda
