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
