#pragma once
// NumPy-style broadcasting element-wise ops and the reduction that is their gradient (Backend::broadcast_binary,
// Backend::broadcast_reduce), as both backends run them: each output element's coordinates from its index, each
// operand's element from its strides (0 along a stretched axis).
#include <math.h>

#include "api/backend/backend.h"
#include "api/backend/math/hd.h"

namespace tower::backend::math {

TOWER_HD float binary_op(BinaryOp op, float a, float b) {
  switch (op) {
    case BinaryOp::add: return a + b;
    case BinaryOp::subtract: return a - b;
    case BinaryOp::multiply: return a * b;
    case BinaryOp::divide: return a / b;
    // NaN propagates, as tf.maximum / tf.minimum.
    case BinaryOp::maximum: return a != a || b != b ? a + b : (a >= b ? a : b);
    case BinaryOp::minimum: return a != a || b != b ? a + b : (a <= b ? a : b);
    case BinaryOp::equal: return a == b ? 1.f : 0.f;
    case BinaryOp::power: return powf(a, b);
    case BinaryOp::not_equal: return a != b ? 1.f : 0.f;
    case BinaryOp::less: return a < b ? 1.f : 0.f;
    case BinaryOp::less_equal: return a <= b ? 1.f : 0.f;
    case BinaryOp::greater: return a > b ? 1.f : 0.f;
    case BinaryOp::greater_equal: return a >= b ? 1.f : 0.f;
  }
  return 0.f;
}

// y[i] = binary_op(op, a[..], b[..]) over the elements of y.
struct BroadcastBinary {
  BinaryOp op;
  const float *a, *b;
  float* y;
  Broadcast s;
  TOWER_HD void operator()(Index i) const {
    Index rest = i, offset_a = 0, offset_b = 0;
    for (int k = s.rank - 1; k >= 0; --k) {
      const Division d = divide(rest, s.dims[k]);
      offset_a += d.remainder * s.a[k];
      offset_b += d.remainder * s.b[k];
      rest = d.quotient;
    }
    y[i] = binary_op(op, a[offset_a], b[offset_b]);
  }
};

// dx[j] = the sum, in double and in row-major order, of dy over the positions of y that read element j of the
// operand with strides s.a; over dx's elements (dense over s.dims with 1 where s.a is 0).
struct BroadcastReduce {
  const float* dy;
  float* dx;
  Broadcast s;
  TOWER_HD void operator()(Index j) const {
    Index out_stride[kMaxBroadcastRank];
    Index stride = 1, reduced = 1;
    for (int k = s.rank - 1; k >= 0; --k) {
      out_stride[k] = stride;
      stride *= s.dims[k];
      if (s.a[k] == 0) reduced *= s.dims[k];
    }
    // j's coordinates along the operand's own axes give the first position that reads it.
    Index rest = j, base = 0;
    for (int k = s.rank - 1; k >= 0; --k) {
      if (s.a[k] == 0) continue;
      const Division d = divide(rest, s.dims[k]);
      base += d.remainder * out_stride[k];
      rest = d.quotient;
    }
    double sum = 0;
    for (Index t = 0; t < reduced; ++t) {
      Index left = t, offset = base;
      for (int k = s.rank - 1; k >= 0; --k) {
        if (s.a[k] != 0) continue;
        const Division d = divide(left, s.dims[k]);
        offset += d.remainder * out_stride[k];
        left = d.quotient;
      }
      sum += dy[offset];
    }
    dx[j] = static_cast<float>(sum);
  }
};

}  // namespace tower::backend::math
