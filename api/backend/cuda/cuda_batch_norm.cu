#include "api/backend/cuda/launch.cuh"

namespace tower::backend::cuda {

namespace {

// inv_std[c] = 1 / sqrt(variance[c] + epsilon): what cuDNN's batch-norm backward takes as its saved statistic.
struct InverseStd {
  const float* variance;
  float epsilon;
  float* inv_std;
  __device__ void operator()(Index c) const { inv_std[c] = 1.f / sqrtf(variance[c] + epsilon); }
};

}  // namespace

// Declared in cuda_batch_norm.cpp, its one caller.
void batch_norm_inverse_std(const float* variance, float epsilon, float* inv_std, Index channels, cudaStream_t stream) {
  for_each(channels, InverseStd{variance, epsilon, inv_std}, stream, "BatchNormalization backward: 1/sqrt(var+eps)");
}

}  // namespace tower::backend::cuda
