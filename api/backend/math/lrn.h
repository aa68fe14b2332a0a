#pragma once
// Local response normalization over the last axis of [positions, depth] (Backend::lrn_forward / lrn_backward):
// TensorFlow's tf.nn.local_response_normalization and its gradient (LRNGrad). With r = depth_radius, for the
// channels d of one position:
//   norm[d] = bias + alpha * sum of x[k]^2 for k in [d - r, d + r], clipped to [0, depth)
//   y[d]    = x[d] / norm[d]^beta
//   dx[k]   = dy[k] * norm[k]^-beta - 2 * alpha * beta * x[k] * sum over j in [k - r, k + r] of dy[j] * y[j] / norm[j]
// One element per call (flat index i, channel i % depth). Each element sums its windows again from x rather than
// carrying a running sum along the channels: no scratch memory, no rounding that drifts with the channel, and
// elements independent of each other. The forward reads 2r + 1 squares per element, the backward (2r + 1)^2.
// No output may overlap an input: an element reads its neighbours' inputs.
#include <cmath>

#include "api/backend/backend.h"
#include "api/backend/math/hd.h"

namespace tower::backend::math {

// The channels [begin, end) within depth_radius of channel d (written so that a huge radius cannot overflow).
struct LrnWindow {
  Index begin, end;
};

TOWER_HD LrnWindow lrn_window(Index d, Index depth, Index radius) {
  return {d > radius ? d - radius : 0, depth - d > radius ? d + radius + 1 : depth};
}

// bias + alpha * the sum of the squares of row's channels within depth_radius of channel d.
TOWER_HD float lrn_norm(const float* row, Index d, Index depth, const LrnParams& p) {
  const LrnWindow w = lrn_window(d, depth, p.depth_radius);
  float sqr_sum = 0.f;
  for (Index k = w.begin; k < w.end; ++k) sqr_sum += row[k] * row[k];
  return p.bias + p.alpha * sqr_sum;
}

struct LrnForward {
  const float* x;
  float* y;
  Index depth;
  LrnParams p;
  TOWER_HD void operator()(Index i) const {
    const Index d = i % depth;
    y[i] = x[i] / ::powf(lrn_norm(x + (i - d), d, depth, p), p.beta);
  }
};

// The windows are symmetric: the channels j whose window holds k are the channels of k's window.
struct LrnBackward {
  const float *x, *y, *dy;
  float* dx;
  Index depth;
  LrnParams p;
  TOWER_HD void operator()(Index i) const {
    const Index k = i % depth, row = i - k;
    const LrnWindow w = lrn_window(k, depth, p.depth_radius);
    float through_norms = 0.f;
    for (Index j = w.begin; j < w.end; ++j)
      through_norms += dy[row + j] * y[row + j] / lrn_norm(x + row, j, depth, p);
    dx[i] = dy[i] * ::powf(lrn_norm(x + row, k, depth, p), -p.beta) -
            2.f * p.alpha * p.beta * x[i] * through_norms;
  }
};

}  // namespace tower::backend::math
