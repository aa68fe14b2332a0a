#pragma once
// The arithmetic of synchronized batch normalization (SyncBN, Backend::batch_norm_sums and the ops after it), as
// both backends run it: the CPU in its loops, the CUDA backend in grid-stride kernels. Per-channel sums over the
// rows of a row-major [rows, channels] tensor are taken in double, in two deterministic passes like bias_grad's
// (math/reductions.h): each block of rows is summed into a [blocks, width] scratch matrix, then each column's
// partials are added in block order. Both backends add in the same order, so they give the same bits.
#include <cmath>

#include "api/backend/math/batch_norm.h"
#include "api/backend/math/hd.h"
#include "api/backend/math/reductions.h"
#include "api/core/shape.h"

namespace tower::backend::math {

// partial[b, c] = sum of x[r, c] and partial[b, channels + c] = sum of x[r, c]^2 over the rows r of block b; over
// blocks * channels items. partial is [blocks, 2 * channels].
struct ChannelMomentPartials {
  const float* x;
  double* partial;
  Index rows, channels, rows_per_block;
  TOWER_HD void operator()(Index i) const {
    const Index c = i % channels, b = i / channels, first = b * rows_per_block;
    const Index last = first + rows_per_block < rows ? first + rows_per_block : rows;
    double s = 0, q = 0;
    for (Index r = first; r < last; ++r) {
      const double v = x[r * channels + c];
      s += v;
      q += v * v;
    }
    partial[b * 2 * channels + c] = s;
    partial[b * 2 * channels + channels + c] = q;
  }
};

// partial[b, c] = sum of dy[r, c] and partial[b, channels + c] = sum of dy[r, c] * x_hat[r, c] over the rows of
// block b, x_hat = (x - mean) * inverse_std(variance, epsilon); over blocks * channels items.
struct ChannelGradPartials {
  const float *x, *dy, *mean, *variance;
  float epsilon;
  double* partial;
  Index rows, channels, rows_per_block;
  TOWER_HD void operator()(Index i) const {
    const Index c = i % channels, b = i / channels, first = b * rows_per_block;
    const Index last = first + rows_per_block < rows ? first + rows_per_block : rows;
    const double inv = inverse_std(variance[c], epsilon), m = mean[c];
    double s = 0, q = 0;
    for (Index r = first; r < last; ++r) {
      const double d = dy[r * channels + c];
      s += d;
      q += d * (x[r * channels + c] - m) * inv;
    }
    partial[b * 2 * channels + c] = s;
    partial[b * 2 * channels + channels + c] = q;
  }
};

// out[j] = sum of partial[b, j] over the blocks, in block order, for j < width; out[width] = count when
// with_count. Over width (+ 1) items.
struct SumOfPartials {
  const double* partial;
  double* out;
  Index blocks, width;
  double count;
  TOWER_HD void operator()(Index j) const {
    if (j == width) {
      out[j] = count;
      return;
    }
    double s = 0;
    for (Index b = 0; b < blocks; ++b) s += partial[b * width + j];
    out[j] = s;
  }
};

// dbeta[c] = float(sums[c]), dgamma[c] = float(sums[channels + c]); over channels items.
struct RoundGradSums {
  const double* sums;
  float *dgamma, *dbeta;
  Index channels;
  TOWER_HD void operator()(Index c) const {
    dbeta[c] = static_cast<float>(sums[c]);
    dgamma[c] = static_cast<float>(sums[channels + c]);
  }
};

// From sums [sum x | sum x^2 | count] over every replica: mean = sum / count, variance = max(sum of squares /
// count - mean^2, 0) (the biased variance, Keras' SyncBN); over channels items.
struct MomentsFromSums {
  const double* sums;
  float *mean, *variance;
  Index channels;
  TOWER_HD void operator()(Index c) const {
    const double count = sums[2 * channels];
    const double m = sums[c] / count;
    const double v = sums[channels + c] / count - m * m;
    mean[c] = static_cast<float>(m);
    variance[c] = static_cast<float>(v > 0 ? v : 0.0);
  }
};

// dx = gamma * inv_std * (dy - sum(dy) / count - x_hat * sum(dy * x_hat) / count), the sums [sum dy | sum dy *
// x_hat] over every replica's rows and count their rows; over rows * channels items.
struct SyncBatchNormDx {
  const float *x, *dy, *gamma, *mean, *variance;
  float epsilon;
  const double* sums;
  const double* count;
  float* dx;
  Index channels;
  TOWER_HD void operator()(Index i) const {
    const Index c = i % channels;
    const double inv = inverse_std(variance[c], epsilon), n = *count;
    const double xhat = (x[i] - mean[c]) * inv;
    dx[i] = static_cast<float>(gamma[c] * inv * (dy[i] - sums[c] / n - xhat * sums[channels + c] / n));
  }
};

}  // namespace tower::backend::math
