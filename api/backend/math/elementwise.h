#pragma once
// Element-wise arithmetic of Backend::fill, add, sub, mul, unary, select, axpby, scale_shift and add_bias, one output
// element per call: the CPU backend runs these functors in its vectorised loops (cpu/loops.h), the CUDA backend in
// for_each (cuda/launch.cuh). Each writes only element i of its output (add_bias: the element at flat index i),
// so an output may alias an input.
#include <cmath>

#include "api/backend/backend.h"
#include "api/backend/math/hd.h"
#include "api/core/shape.h"

namespace tower::backend::math {

struct Fill {
  float* y;
  float value;
  TOWER_HD void operator()(Index i) const { y[i] = value; }
};

struct Add {
  const float *a, *b;
  float* y;
  TOWER_HD void operator()(Index i) const { y[i] = a[i] + b[i]; }
};

struct Sub {
  const float *a, *b;
  float* y;
  TOWER_HD void operator()(Index i) const { y[i] = a[i] - b[i]; }
};

struct Mul {
  const float *a, *b;
  float* y;
  TOWER_HD void operator()(Index i) const { y[i] = a[i] * b[i]; }
};

TOWER_HD float unary_op(UnaryOp op, float v) {
  switch (op) {
    case UnaryOp::negative: return -v;
    case UnaryOp::abs: return fabsf(v);
    case UnaryOp::sign: return v > 0.f ? 1.f : v < 0.f ? -1.f : v;  // 0 keeps its sign bit, NaN stays NaN
    case UnaryOp::exp: return expf(v);
    case UnaryOp::log: return logf(v);
    case UnaryOp::sqrt: return sqrtf(v);
    case UnaryOp::square: return v * v;
    case UnaryOp::reciprocal: return 1.f / v;
    case UnaryOp::log1p: return log1pf(v);
    case UnaryOp::rsqrt: return 1.f / sqrtf(v);  // not CUDA's rsqrtf, which rounds differently from the CPU
    case UnaryOp::erf: return erff(v);
  }
  return v;
}

// Backend::unary: y[i] = op(x[i]).
struct Unary {
  UnaryOp op;
  const float* x;
  float* y;
  TOWER_HD void operator()(Index i) const { y[i] = unary_op(op, x[i]); }
};

// Backend::select: y[i] = cond[i] != 0 ? a[i] : b[i].
struct Select {
  const float *cond, *a, *b;
  float* y;
  TOWER_HD void operator()(Index i) const { y[i] = cond[i] != 0.f ? a[i] : b[i]; }
};

// axpby with beta == 0: y is written without being read, so garbage (NaN) in y does not leak into the result.
struct Scale {
  float alpha;
  const float* x;
  float* y;
  TOWER_HD void operator()(Index i) const { y[i] = alpha * x[i]; }
};

struct Axpby {
  float alpha;
  const float* x;
  float beta;
  float* y;
  TOWER_HD void operator()(Index i) const { y[i] = alpha * x[i] + beta * y[i]; }
};

struct ScaleShift {
  const float* x;
  float scale, shift;
  float* y;
  TOWER_HD void operator()(Index i) const { y[i] = scale * x[i] + shift; }
};

// y[r, c] += bias[c] over a row-major [rows, cols] matrix; at(r, c) is the element form the CPU's row loops call.
struct AddBias {
  float* y;
  const float* bias;
  Index cols;
  TOWER_HD void at(Index r, Index c) const { y[r * cols + c] += bias[c]; }
  TOWER_HD void operator()(Index i) const { at(i / cols, i % cols); }
};

}  // namespace tower::backend::math
