#pragma once
// TOWER_HD marks the functions both backends run: `__host__ __device__` under nvcc, plain inline functions for
// the host compiler. The functors of api/backend/math/ are written once with it; the CPU backend calls them in
// its loops (cpu/loops.h) and the CUDA backend in its grid-stride kernels (cuda/launch.cuh), so the CPU suite
// runs every line of arithmetic and indexing a kernel runs.
#if defined(__CUDACC__)
#define TOWER_HD __host__ __device__ __forceinline__
#else
#define TOWER_HD inline
#endif

#include <cstring>

#include "api/core/shape.h"

namespace tower::backend::math {

// V consecutive floats loaded and stored as one (a 128-bit access for V = 4 on the GPU, where p must be 4V-byte
// aligned: the launchers check before choosing V > 1); on the host a plain copy.
template <int V>
struct alignas(4 * V) Floats {
  float v[V];
};
template <int V>
TOWER_HD Floats<V> load(const float* p) {
#if defined(__CUDA_ARCH__)
  return *reinterpret_cast<const Floats<V>*>(p);
#else
  Floats<V> r;
  std::memcpy(r.v, p, sizeof r.v);
  return r;
#endif
}
template <int V>
TOWER_HD void store(float* p, const Floats<V>& value) {
#if defined(__CUDA_ARCH__)
  *reinterpret_cast<Floats<V>*>(p) = value;
#else
  std::memcpy(p, value.v, sizeof value.v);
#endif
}

// a / b and a % b for a >= 0, b > 0, by 32-bit division when both fit: a GPU divides 32-bit numbers several times
// faster than 64-bit ones, and element indices almost always fit.
struct Division {
  Index quotient, remainder;
};
TOWER_HD Division divide(Index a, Index b) {
  if (((a | b) >> 32) == 0) {
    const auto a32 = static_cast<unsigned>(a), b32 = static_cast<unsigned>(b), q = a32 / b32;
    return {static_cast<Index>(q), static_cast<Index>(a32 - q * b32)};
  }
  return {a / b, a % b};
}

}  // namespace tower::backend::math
