#pragma once
// Backend::global_pool and global_pool_backward over [n, positions, c] (NHWC images with positions = h * w).
//
// A global pooling reduces each column (b, k) over the positions in order: acc = init(), acc = step(acc, v) for
// each position's value v, y[b, k] = finish(acc). The GPU computes one column per thread (GlobalPool's
// operator()); the CPU backend runs the same init / step / finish a row of channels at a time, so that its
// loops read memory in order and vectorise. tests/backend/math_functors_test.cpp checks that both orders of
// evaluation give the same bits.
#include <cmath>

#include "api/backend/math/hd.h"
#include "api/core/shape.h"

namespace tower::backend::math {

// The mean: the sum over the positions times 1 / positions.
struct AverageOfPositions {
  float inv_positions;
  TOWER_HD float init() const { return 0.f; }
  TOWER_HD float step(float s, float v) const { return s + v; }
  TOWER_HD float finish(float s) const { return s * inv_positions; }
};

// The maximum; a NaN does not replace a number already seen.
struct MaxOfPositions {
  TOWER_HD float init() const { return -INFINITY; }
  TOWER_HD float step(float m, float v) const { return m < v ? v : m; }
  TOWER_HD float finish(float m) const { return m; }
};

// y[b, k] = the reduction of x[b, :, k]; one column per call.
template <class Reduce>
struct GlobalPool {
  Reduce reduce;
  const float* x;
  float* y;
  Index positions, c;
  TOWER_HD void operator()(Index i) const {
    const Index b = i / c, k = i % c;
    const float* in = x + b * positions * c + k;
    float acc = reduce.init();
    for (Index p = 0; p < positions; ++p) acc = reduce.step(acc, in[p * c]);
    y[i] = reduce.finish(acc);
  }
};

// dx[b, p, k] = dy[b, k] * (1 / positions); at(row, k) takes row = b * positions + p.
struct GlobalAveragePoolBackward {
  const float* dy;
  float* dx;
  Index positions, c;
  float inv_positions;
  TOWER_HD void at(Index row, Index k) const { dx[row * c + k] = dy[row / positions * c + k] * inv_positions; }
  TOWER_HD void operator()(Index i) const { at(i / c, i % c); }
};

// dx[b, p, k] = dy[b, k] at the first position p where x[b, p, k] equals the forward output y[b, k], 0 elsewhere.
// One column per call; the CPU calls route() a row of channels at a time.
struct GlobalMaxPoolBackward {
  const float *x, *y, *dy;
  float* dx;
  Index positions, c;
  // The gradient of value v in a column with maximum out and incoming gradient g. `taken` (0 or 1) says whether an
  // earlier position of the column already matched, and is updated. An int flag and & rather than &&: no branch
  // and 4-byte lanes like the floats', so the CPU's channel loop vectorises.
  TOWER_HD static float route(float v, float out, float g, int& taken) {
    const int first = (taken == 0) & (v == out);
    taken |= first;
    return first ? g : 0.f;
  }
  TOWER_HD void operator()(Index i) const {
    const Index b = i / c, k = i % c, base = b * positions * c + k;
    int taken = 0;
    for (Index p = 0; p < positions; ++p) dx[base + p * c] = route(x[base + p * c], y[i], dy[i], taken);
  }
};

}  // namespace tower::backend::math
