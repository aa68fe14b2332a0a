// CudaBackend's ops of synchronized batch normalization: the functors of math/sync_batch_norm.h, which the CPU
// tests run, in for_each kernels; the per-channel sums in the same two deterministic passes as the CPU's, their
// partials in the backend's workspace.
#include <string>

#include "api/backend/cuda/launch.cuh"
#include "api/backend/math/sync_batch_norm.h"

namespace tower::backend::cuda {

namespace {
std::string label(const char* op, Index rows, Index channels) {
  std::string s = op;
  s += " (rows, channels) [";
  s += std::to_string(rows);
  s += ", ";
  s += std::to_string(channels);
  s += ']';
  return s;
}
}  // namespace

void CudaBackend::batch_norm_sums(const float* x, Index rows, Index channels, double* sums) {
  const std::string op = label("batch_norm_sums", rows, channels);
  const math::ColumnBlocks blocks = math::column_blocks(rows);
  auto* partial =
      static_cast<double*>(workspace(static_cast<std::size_t>(blocks.blocks * 2 * channels) * sizeof(double)));
  for_each(blocks.blocks * channels, math::ChannelMomentPartials{x, partial, rows, channels, blocks.rows_per_block},
           stream(), op.c_str());
  for_each(2 * channels + 1, math::SumOfPartials{partial, sums, blocks.blocks, 2 * channels, static_cast<double>(rows)},
           stream(), op.c_str());
}

void CudaBackend::batch_norm_statistics(const double* sums, Index channels, float* mean, float* variance) {
  for_each(channels, math::MomentsFromSums{sums, mean, variance, channels}, stream(), "batch_norm_statistics");
}

void CudaBackend::batch_norm_grad_sums(const float* x, const float* dy, const float* mean, const float* variance,
                                       float epsilon, Index rows, Index channels, double* sums, float* dgamma,
                                       float* dbeta) {
  const std::string op = label("batch_norm_grad_sums", rows, channels);
  const math::ColumnBlocks blocks = math::column_blocks(rows);
  auto* partial =
      static_cast<double*>(workspace(static_cast<std::size_t>(blocks.blocks * 2 * channels) * sizeof(double)));
  for_each(blocks.blocks * channels,
           math::ChannelGradPartials{x, dy, mean, variance, epsilon, partial, rows, channels, blocks.rows_per_block},
           stream(), op.c_str());
  for_each(2 * channels, math::SumOfPartials{partial, sums, blocks.blocks, 2 * channels, 0.0}, stream(), op.c_str());
  for_each(channels, math::RoundGradSums{sums, dgamma, dbeta, channels}, stream(), op.c_str());
}

void CudaBackend::batch_norm_sync_dx(const float* x, const float* dy, const float* gamma, const float* mean,
                                     const float* variance, float epsilon, const double* grad_sums,
                                     const double* count, Index rows, Index channels, float* dx) {
  const std::string op = label("batch_norm_sync_dx", rows, channels);
  for_each(rows * channels,
           math::SyncBatchNormDx{x, dy, gamma, mean, variance, epsilon, grad_sums, count, dx, channels}, stream(),
           op.c_str());
}

}  // namespace tower::backend::cuda
