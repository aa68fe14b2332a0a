// The CPU's ops of synchronized batch normalization: the functors of math/sync_batch_norm.h in host loops, with
// the same two passes and block sizes as the CUDA backend, so both add in the same order.
#include <vector>

#include "api/backend/cpu/cpu_backend.h"
#include "api/backend/cpu/loops.h"
#include "api/backend/math/sync_batch_norm.h"

namespace tower::backend::cpu {

namespace {

// f(i) for i in [0, n), threaded; each call loops over a block of rows, so the loop is not vectorised.
template <class F>
void for_each_index(Index n, const F& f, Index grain) {
  parallel_ranges(n, [&](Index begin, Index end) {
    for (Index i = begin; i < end; ++i) f(i);
  }, grain);
}

// The scratch of the first pass: one per calling thread (replicas call one backend from several threads).
std::vector<double>& partials(std::size_t n) {
  thread_local std::vector<double> scratch;
  if (scratch.size() < n) scratch.resize(n);
  return scratch;
}

}  // namespace

void CpuBackend::batch_norm_sums(const float* x, Index rows, Index channels, double* sums) {
  const math::ColumnBlocks blocks = math::column_blocks(rows);
  double* partial = partials(static_cast<std::size_t>(blocks.blocks * 2 * channels)).data();
  const Index grain = kParallelGrain / std::max<Index>(blocks.rows_per_block, 1);
  for_each_index(blocks.blocks * channels,
                 math::ChannelMomentPartials{x, partial, rows, channels, blocks.rows_per_block}, grain);
  for_each_index(2 * channels + 1,
                 math::SumOfPartials{partial, sums, blocks.blocks, 2 * channels, static_cast<double>(rows)},
                 kParallelGrain);
}

void CpuBackend::batch_norm_statistics(const double* sums, Index channels, float* mean, float* variance) {
  for_each_index(channels, math::MomentsFromSums{sums, mean, variance, channels}, kParallelGrain);
}

void CpuBackend::batch_norm_grad_sums(const float* x, const float* dy, const float* mean, const float* variance,
                                      float epsilon, Index rows, Index channels, double* sums, float* dgamma,
                                      float* dbeta) {
  const math::ColumnBlocks blocks = math::column_blocks(rows);
  double* partial = partials(static_cast<std::size_t>(blocks.blocks * 2 * channels)).data();
  const Index grain = kParallelGrain / std::max<Index>(blocks.rows_per_block, 1);
  for_each_index(blocks.blocks * channels,
                 math::ChannelGradPartials{x, dy, mean, variance, epsilon, partial, rows, channels,
                                           blocks.rows_per_block},
                 grain);
  for_each_index(2 * channels, math::SumOfPartials{partial, sums, blocks.blocks, 2 * channels, 0.0}, kParallelGrain);
  for_each_index(channels, math::RoundGradSums{sums, dgamma, dbeta, channels}, kParallelGrain);
}

void CpuBackend::batch_norm_sync_dx(const float* x, const float* dy, const float* gamma, const float* mean,
                                    const float* variance, float epsilon, const double* grad_sums, const double* count,
                                    Index rows, Index channels, float* dx) {
  elementwise(rows * channels,
              math::SyncBatchNormDx{x, dy, gamma, mean, variance, epsilon, grad_sums, count, dx, channels});
}

}  // namespace tower::backend::cpu
