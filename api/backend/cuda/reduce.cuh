#pragma once
// A reduction of a term per index on the GPU, its result handed to a functor on the device: CUB's TransformReduce
// with the terms and operations of api/backend/math/ that the CPU backend adds up in its own loops (the losses'
// sums, find_invalid_class, find_invalid_index). Deterministic run to run. Device code: include from .cu files only.
#include <cub/device/device_reduce.cuh>
#include <thrust/iterator/counting_iterator.h>

#include <string>

#include "api/backend/cuda/launch.cuh"

namespace tower::backend::cuda {

// finish(*result) on the device, after a reduction wrote result.
template <class T, class Finish>
struct FinishFrom {
  Finish finish;
  const T* result;
  TOWER_HD void operator()(Index) const { finish(*result); }
};

// finish(value) on the device: the sum of no terms.
template <class T, class Finish>
struct FinishWith {
  Finish finish;
  T value;
  TOWER_HD void operator()(Index) const { finish(value); }
};

inline std::string shape_text(const char* op, Index n) {
  return std::string(op) + " (n=" + std::to_string(n) + ")";
}

// finish(init op term(0) op ... op term(n - 1)): CUB reduces into the start of the workspace, its temporary storage
// after it, and a one-thread kernel applies finish.
template <class T, class Term, class Op, class Finish>
void reduce(CudaBackend& backend, Index n, const Term& term, Op op, T init, const Finish& finish, const char* what) {
  const cudaStream_t stream = backend.stream();
  if (n == 0) return for_each(1, FinishWith<T, Finish>{finish, init}, stream, what);
  const thrust::counting_iterator<Index> indices(0);
  std::size_t temp_bytes = 0;
  check_cuda(cub::DeviceReduce::TransformReduce(nullptr, temp_bytes, indices, static_cast<T*>(nullptr), n, op, term,
                                                init, stream),
             shape_text(what, n));
  constexpr std::size_t kResultBytes = (sizeof(T) + 255) / 256 * 256;
  char* workspace = static_cast<char*>(backend.workspace(kResultBytes + temp_bytes));
  T* result = reinterpret_cast<T*>(workspace);
  check_cuda(cub::DeviceReduce::TransformReduce(workspace + kResultBytes, temp_bytes, indices, result, n, op, term,
                                                init, stream),
             shape_text(what, n));
  for_each(1, FinishFrom<T, Finish>{finish, result}, stream, what);
}

}  // namespace tower::backend::cuda
