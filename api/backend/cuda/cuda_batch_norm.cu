// The kernels of CudaBackend's BatchNormOp (cuda_batch_norm.cpp): per-channel sums over the rows of a row-major
// [rows, channels] tensor, and the element-wise passes of math/batch_norm.h in for_each kernels.
//
// The sums are taken in double, in a fixed order (so a step gives the same bits every time), in two passes. The
// first covers the tensor with blocks of 32 channels x 8 row lanes, a warp reading 32 consecutive channels of one
// row (128 coalesced bytes); each block sums a chunk of rows, and the chunks are as many as fill the GPU about
// once, so every row is read once whatever the channel count. The second adds each column's partials, 8 lanes per
// column and then across the lanes in order.
#include <algorithm>
#include <initializer_list>
#include <string>

#include "api/backend/cuda/launch.cuh"
#include "api/backend/math/batch_norm.h"
#include "api/backend/math/sync_batch_norm.h"

namespace tower::backend::cuda {

namespace {

constexpr int kLanes = 32, kRowLanes = 8;

// The chunks of rows the first pass sums, one block row each.
struct Chunks {
  Index rows_per_chunk, chunks;
};

Chunks chunks_for(Index rows, Index channels) {
  const Index tiles = (channels + kLanes - 1) / kLanes;
  // About 2^18 threads: enough to cover any current GPU's resident threads.
  Index chunks = std::max<Index>(1, (Index{1} << 18) / (tiles * kLanes * kRowLanes));
  chunks = std::min<Index>({chunks, (rows + kRowLanes - 1) / kRowLanes, 65535});
  chunks = std::max<Index>(chunks, 1);
  const Index per = (rows + chunks - 1) / chunks;
  return {per, (rows + per - 1) / per};
}

// x's terms: x and x^2.
struct MomentTerms {
  const float* x;
  __device__ void prepare(Index) {}
  __device__ void add(Index i, double& a, double& b) const {
    const double v = x[i];
    a += v;
    b += v * v;
  }
};

// The gradient's terms: dy and dy * x_hat.
struct GradTerms {
  const float *x, *dy, *mean, *variance;
  float epsilon;
  double m = 0, inv = 0;
  __device__ void prepare(Index c) {
    m = mean[c];
    inv = math::inverse_std(variance[c], epsilon);
  }
  __device__ void add(Index i, double& a, double& b) const {
    const double d = dy[i];
    a += d;
    b += d * (x[i] - m) * inv;
  }
};

// partial[chunk, c] and partial[chunk, channels + c]: the two terms summed over the chunk's rows. Block (32, 8),
// grid (channel tiles, chunks).
template <class Terms>
__global__ void channel_partials(Terms terms, Index rows, Index channels, Index rows_per_chunk, double* partial) {
  __shared__ double sum_a[kRowLanes][kLanes], sum_b[kRowLanes][kLanes];
  const Index c = static_cast<Index>(blockIdx.x) * kLanes + threadIdx.x;
  const Index chunk = blockIdx.y, first = chunk * rows_per_chunk;
  const Index last = first + rows_per_chunk < rows ? first + rows_per_chunk : rows;
  double a = 0, b = 0;
  if (c < channels) {
    terms.prepare(c);
#pragma unroll 4
    for (Index r = first + threadIdx.y; r < last; r += kRowLanes) terms.add(r * channels + c, a, b);
  }
  sum_a[threadIdx.y][threadIdx.x] = a;
  sum_b[threadIdx.y][threadIdx.x] = b;
  __syncthreads();
  if (threadIdx.y == 0 && c < channels) {
    for (int l = 1; l < kRowLanes; ++l) {
      a += sum_a[l][threadIdx.x];
      b += sum_b[l][threadIdx.x];
    }
    partial[chunk * 2 * channels + c] = a;
    partial[chunk * 2 * channels + channels + c] = b;
  }
}

// out[j] = sum of partial[chunk, j] over the chunks for j < width; out[width] = count. Block (32, 8), grid
// (column tiles).
__global__ void column_sums(const double* partial, Index chunks, Index width, double count, double* out) {
  __shared__ double lane[kRowLanes][kLanes];
  const Index j = static_cast<Index>(blockIdx.x) * kLanes + threadIdx.x;
  double s = 0;
  if (j < width)
    for (Index k = threadIdx.y; k < chunks; k += kRowLanes) s += partial[k * width + j];
  lane[threadIdx.y][threadIdx.x] = s;
  __syncthreads();
  if (threadIdx.y == 0 && j < width) {
    for (int l = 1; l < kRowLanes; ++l) s += lane[l][threadIdx.x];
    out[j] = s;
  }
  if (blockIdx.x == 0 && threadIdx.x == 0 && threadIdx.y == 0) out[width] = count;
}

// sums = [sum a | sum b | rows] over the rows of [rows, channels], with terms' a and b.
template <class Terms>
void channel_sums(const Terms& terms, Index rows, Index channels, double* partial, double* sums, cudaStream_t stream,
                  const std::string& op) {
  const Chunks k = chunks_for(rows, channels);
  const dim3 block(kLanes, kRowLanes);
  channel_partials<<<dim3(static_cast<unsigned>((channels + kLanes - 1) / kLanes), static_cast<unsigned>(k.chunks)),
                     block, 0, stream>>>(terms, rows, channels, k.rows_per_chunk, partial);
  check_cuda(cudaGetLastError(), op + ": the partial sums");
  column_sums<<<static_cast<unsigned>((2 * channels + kLanes - 1) / kLanes), block, 0, stream>>>(
      partial, k.chunks, 2 * channels, static_cast<double>(rows), sums);
  check_cuda(cudaGetLastError(), op + ": the sums");
}

// Whether the element passes may take four channels an item: the channels a multiple of 4 and every array
// 16-byte aligned.
bool by_four(Index channels, std::initializer_list<const void*> arrays) {
  if (channels % 4 != 0) return false;
  for (const void* a : arrays)
    if (!aligned16(a)) return false;
  return true;
}

void apply(const float* x, const float* mean, const float* scale, const float* beta, float* y, Index rows,
           Index channels, cudaStream_t stream, const std::string& op) {
  if (by_four(channels, {x, mean, scale, beta, y}))
    for_each(rows * channels / 4, math::BatchNormApply<4>{x, mean, scale, beta, y, channels}, stream, op.c_str());
  else
    for_each(rows * channels, math::BatchNormApply<1>{x, mean, scale, beta, y, channels}, stream, op.c_str());
}

}  // namespace

// Declared in cuda_batch_norm.cpp, the one caller of these.
std::size_t batch_norm_partial_bytes(Index rows, Index channels) {
  return static_cast<std::size_t>(chunks_for(rows, channels).chunks * 2 * channels) * sizeof(double);
}

void batch_norm_training_forward(const float* x, const float* gamma, const float* beta, float* y, float* mean,
                                 float* variance, float epsilon, Index rows, Index channels, double* partial,
                                 double* sums, float* scale, cudaStream_t stream, const std::string& op) {
  channel_sums(MomentTerms{x}, rows, channels, partial, sums, stream, op);
  for_each(channels, math::MomentsFromSums{sums, mean, variance, channels}, stream, op.c_str());
  for_each(channels, math::BatchNormScale{gamma, variance, epsilon, scale}, stream, op.c_str());
  apply(x, mean, scale, beta, y, rows, channels, stream, op);
}

void batch_norm_inference_forward(const float* x, const float* gamma, const float* beta, const float* mean,
                                  const float* variance, float* y, float epsilon, Index rows, Index channels,
                                  float* scale, cudaStream_t stream, const std::string& op) {
  for_each(channels, math::BatchNormScale{gamma, variance, epsilon, scale}, stream, op.c_str());
  apply(x, mean, scale, beta, y, rows, channels, stream, op);
}

void batch_norm_backward(const float* x, const float* dy, const float* gamma, const float* mean,
                         const float* variance, float epsilon, Index rows, Index channels, float* dx, float* dgamma,
                         float* dbeta, double* partial, double* sums, float* factors, cudaStream_t stream,
                         const std::string& op) {
  channel_sums(GradTerms{x, dy, mean, variance, epsilon}, rows, channels, partial, sums, stream, op);
  for_each(channels,
           math::BatchNormGradFactors{sums, static_cast<double>(rows), gamma, variance, epsilon, dgamma, dbeta,
                                      factors, channels},
           stream, op.c_str());
  if (by_four(channels, {x, dy, mean, factors, dx}))
    for_each(rows * channels / 4, math::BatchNormDx<4>{x, dy, mean, factors, dx, channels}, stream, op.c_str());
  else
    for_each(rows * channels, math::BatchNormDx<1>{x, dy, mean, factors, dx, channels}, stream, op.c_str());
}

}  // namespace tower::backend::cuda
