#pragma once
// Softmax over the middle axis of [outer, axis, inner] (Backend::softmax_forward / softmax_backward), one row
// per call: row r = o * inner + j holds the `axis` elements at o * axis * inner + j + a * inner.
#include <cmath>

#include "api/backend/math/hd.h"
#include "api/core/shape.h"

namespace tower::backend::math {

// Max-subtracted, so exp never overflows; y may be x.
struct SoftmaxForward {
  const float* x;
  float* y;
  Index axis, inner;
  TOWER_HD void operator()(Index r) const {
    const Index base = r / inner * axis * inner + r % inner;
    const float* xs = x + base;
    float* ys = y + base;
    float m = -INFINITY;
    for (Index a = 0; a < axis; ++a) m = m < xs[a * inner] ? xs[a * inner] : m;
    float s = 0.f;
    for (Index a = 0; a < axis; ++a) {
      const float e = ::expf(xs[a * inner] - m);
      ys[a * inner] = e;
      s += e;
    }
    const float inv = 1.f / s;
    for (Index a = 0; a < axis; ++a) ys[a * inner] *= inv;
  }
};

// dx = y * (dy - sum_a y * dy) along the axis; dx may be dy.
struct SoftmaxBackward {
  const float *y, *dy;
  float* dx;
  Index axis, inner;
  TOWER_HD void operator()(Index r) const {
    const Index base = r / inner * axis * inner + r % inner;
    float dot = 0.f;
    for (Index a = 0; a < axis; ++a) dot += y[base + a * inner] * dy[base + a * inner];
    for (Index a = 0; a < axis; ++a) dx[base + a * inner] = y[base + a * inner] * (dy[base + a * inner] - dot);
  }
};

}  // namespace tower::backend::math
