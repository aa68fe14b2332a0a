#pragma once
// The element-wise arithmetic of batch normalization over the rows of a row-major [rows, channels] tensor (an NHWC
// image's pixels are its rows), in the form the CUDA backend's BatchNormOp runs it: per-channel factors computed
// once from the statistics or the gradient sums, then one pass over the elements. The per-channel sums come from
// the backend's reductions (cuda_batch_norm.cu; the functors of sync_batch_norm.h on the CPU), in double.
// tests/backend/math_functors_test.cpp runs these functors on the CPU against the CPU backend's BatchNormOp.
#include <cmath>

#include "api/backend/math/hd.h"
#include "api/core/shape.h"

namespace tower::backend::math {

// 1 / sqrt(variance + epsilon) in double, epsilon as the float the batch-norm op adds.
TOWER_HD double inverse_std(float variance, float epsilon) {
  return 1.0 / sqrt(static_cast<double>(variance) + static_cast<double>(epsilon));
}

// scale[c] = gamma[c] / sqrt(variance[c] + epsilon), the factor of y = (x - mean) * scale + beta; over channels.
struct BatchNormScale {
  const float *gamma, *variance;
  float epsilon;
  float* scale;
  TOWER_HD void operator()(Index c) const {
    scale[c] = static_cast<float>(static_cast<double>(gamma[c]) * inverse_std(variance[c], epsilon));
  }
};

// y = (x - mean[c]) * scale[c] + beta[c]; over rows * channels / V items of V consecutive channels (V = 4 when the
// channels are a multiple of 4 and the arrays 16-byte aligned: cuda_batch_norm.cu chooses).
template <int V>
struct BatchNormApply {
  const float *x, *mean, *scale, *beta;
  float* y;
  Index channels;
  TOWER_HD void operator()(Index i) const {
    const Index c = divide(i, channels / V).remainder * V;
    const Floats<V> in = load<V>(x + i * V), m = load<V>(mean + c), k = load<V>(scale + c), b = load<V>(beta + c);
    Floats<V> out;
    for (int v = 0; v < V; ++v) out.v[v] = (in.v[v] - m.v[v]) * k.v[v] + b.v[v];
    store<V>(y + i * V, out);
  }
};

// From sums = [sum dy | sum dy * x_hat] over `count` rows (x_hat = (x - mean) / sqrt(variance + epsilon)):
// dbeta = sum dy, dgamma = sum dy * x_hat, and the factors of dx = k (dy - a) - (x - mean) w, the gradient of the
// training forward: k = gamma * inv_std, a = sum dy / count, w = gamma * inv_std^2 * sum(dy * x_hat) / count,
// stored as factors = [k | a | w]; over channels items.
struct BatchNormGradFactors {
  const double* sums;
  double count;
  const float *gamma, *variance;
  float epsilon;
  float *dgamma, *dbeta, *factors;
  Index channels;
  TOWER_HD void operator()(Index c) const {
    const double inv = inverse_std(variance[c], epsilon), k = gamma[c] * inv;
    dbeta[c] = static_cast<float>(sums[c]);
    dgamma[c] = static_cast<float>(sums[channels + c]);
    factors[c] = static_cast<float>(k);
    factors[channels + c] = static_cast<float>(sums[c] / count);
    factors[2 * channels + c] = static_cast<float>(k * inv * sums[channels + c] / count);
  }
};

// dx = k[c] * (dy - a[c]) - (x - mean[c]) * w[c], factors = [k | a | w] from BatchNormGradFactors; over rows *
// channels / V items, as BatchNormApply's.
template <int V>
struct BatchNormDx {
  const float *x, *dy, *mean, *factors;
  float* dx;
  Index channels;
  TOWER_HD void operator()(Index i) const {
    const Index c = divide(i, channels / V).remainder * V;
    const Floats<V> in = load<V>(x + i * V), grad = load<V>(dy + i * V), m = load<V>(mean + c),
                    k = load<V>(factors + c), a = load<V>(factors + channels + c),
                    w = load<V>(factors + 2 * channels + c);
    Floats<V> out;
    for (int v = 0; v < V; ++v) out.v[v] = k.v[v] * (grad.v[v] - a.v[v]) - (in.v[v] - m.v[v]) * w.v[v];
    store<V>(dx + i * V, out);
  }
};

}  // namespace tower::backend::math
