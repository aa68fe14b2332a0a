#pragma once
// The element-wise activations of Backend::activation_forward / activation_backward, once for both backends.
//
// Each ActivationKind is a formula struct with
//   forward(v)            the activation of v, and
//   backward(v, out, g)   the gradient dx for input v, forward output out and incoming gradient g.
// ActivationForward / ActivationBackward apply one formula over arrays, one element per call. visit_activation
// picks the formula from the kind once, outside the loop, so each backend runs one loop per kind (vectorised
// on the CPU) instead of a switch per element.
//
// The formulas are Keras' float32 ones, in the operation order the Keras parity tests were written against; the
// math functions are the float ones both compilers provide (expf, tanhf, erff, expm1f, log1pf, fabsf), glibc's
// on the host and CUDA's on the device.
#include <cmath>

#include "api/backend/backend.h"
#include "api/backend/math/hd.h"

namespace tower::backend::math {

TOWER_HD float sigmoid(float v) { return 1.f / (1.f + ::expf(-v)); }

inline constexpr float kSqrtHalf = static_cast<float>(0.70710678118654752440);  // 1 / sqrt(2)
inline constexpr float kSqrtTwoOverPi = 0.7978845608028654f;
inline constexpr float kInvSqrtTwoPi = 0.3989422804014327f;  // 1 / sqrt(2 pi)
inline constexpr float kGeluCubic = 0.044715f;
inline constexpr float kSeluAlpha = 1.6732632423543772f;
inline constexpr float kSeluScale = 1.0507009873554805f;

struct Linear {
  TOWER_HD float forward(float v) const { return v; }
  TOWER_HD float backward(float, float, float g) const { return g; }
};

// Keras' ReLU layer: x capped at `cap` above `threshold`, slope * (x - threshold) below it. The gradient is g
// itself (not 1 * g) where it passes, 0 where capped.
struct ReLU {
  float cap, threshold, slope;
  TOWER_HD float forward(float v) const { return v >= threshold ? (cap < v ? cap : v) : slope * (v - threshold); }
  TOWER_HD float backward(float v, float, float g) const {
    return v > threshold ? (v < cap ? g : 0.f) : slope * g;
  }
};

struct Sigmoid {
  TOWER_HD float forward(float v) const { return sigmoid(v); }
  TOWER_HD float backward(float, float out, float g) const { return out * (1.f - out) * g; }
};

struct Tanh {
  TOWER_HD float forward(float v) const { return ::tanhf(v); }
  TOWER_HD float backward(float, float out, float g) const { return (1.f - out * out) * g; }
};

// Exact GELU: v * Phi(v).
struct Gelu {
  TOWER_HD float forward(float v) const { return 0.5f * v * (1.f + ::erff(v * kSqrtHalf)); }
  TOWER_HD float backward(float v, float, float g) const {
    const float cdf = 0.5f * (1.f + ::erff(v * kSqrtHalf));
    const float pdf = ::expf(-0.5f * v * v) * kInvSqrtTwoPi;
    return (cdf + v * pdf) * g;
  }
};

// GELU's tanh approximation (Keras gelu(approximate=True)).
struct GeluTanh {
  TOWER_HD float forward(float v) const {
    return 0.5f * v * (1.f + ::tanhf(kSqrtTwoOverPi * (v + kGeluCubic * v * v * v)));
  }
  TOWER_HD float backward(float v, float, float g) const {
    const float th = ::tanhf(kSqrtTwoOverPi * (v + kGeluCubic * v * v * v));
    const float d = 0.5f * (1.f + th) +
                    0.5f * v * (1.f - th * th) * kSqrtTwoOverPi * (1.f + 3.f * kGeluCubic * v * v);
    return d * g;
  }
};

struct Swish {
  TOWER_HD float forward(float v) const { return v * sigmoid(v); }
  TOWER_HD float backward(float v, float, float g) const {
    const float s = sigmoid(v);
    return s * (1.f + v * (1.f - s)) * g;
  }
};

struct Elu {
  float alpha;
  TOWER_HD float forward(float v) const { return v > 0.f ? v : alpha * ::expm1f(v); }
  TOWER_HD float backward(float v, float out, float g) const { return (v > 0.f ? 1.f : out + alpha) * g; }
};

struct LeakyReLU {
  float alpha;
  TOWER_HD float forward(float v) const { return v > 0.f ? v : alpha * v; }
  TOWER_HD float backward(float v, float, float g) const { return (v > 0.f ? 1.f : alpha) * g; }
};

struct Selu {
  TOWER_HD float forward(float v) const { return kSeluScale * (v > 0.f ? v : kSeluAlpha * ::expm1f(v)); }
  TOWER_HD float backward(float v, float out, float g) const {
    return (v > 0.f ? kSeluScale : out + kSeluScale * kSeluAlpha) * g;
  }
};

// Above 20, log1p(exp(v)) equals v in float32; the shortcut also keeps exp from overflowing.
struct Softplus {
  TOWER_HD float forward(float v) const { return v > 20.f ? v : ::log1pf(::expf(v)); }
  TOWER_HD float backward(float v, float, float g) const { return sigmoid(v) * g; }
};

struct Softsign {
  TOWER_HD float forward(float v) const { return v / (1.f + ::fabsf(v)); }
  TOWER_HD float backward(float v, float, float g) const {
    const float a = 1.f + ::fabsf(v);
    return 1.f / (a * a) * g;
  }
};

// Keras 3's hard_sigmoid: clamp(v / 6 + 1/2, 0, 1), written as std::clamp compares (NaN passes through).
struct HardSigmoid {
  TOWER_HD float forward(float v) const {
    const float u = v / 6.f + 0.5f;
    return u < 0.f ? 0.f : (1.f < u ? 1.f : u);
  }
  TOWER_HD float backward(float v, float, float g) const { return ((v > -3.f && v < 3.f) ? 1.f / 6.f : 0.f) * g; }
};

struct Exponential {
  TOWER_HD float forward(float v) const { return ::expf(v); }
  TOWER_HD float backward(float, float out, float g) const { return out * g; }
};

// y[i] = f.forward(x[i]); y may be x. Over n / V items of V consecutive elements (V = 4 when n is a multiple of 4
// and the arrays 16-byte aligned: cuda_elementwise.cu chooses).
template <class F, int V = 1>
struct ActivationForward {
  F f;
  const float* x;
  float* y;
  TOWER_HD void operator()(Index i) const {
    if constexpr (V == 1) {
      y[i] = f.forward(x[i]);
    } else {
      const Floats<V> in = load<V>(x + i * V);
      Floats<V> out;
      for (int v = 0; v < V; ++v) out.v[v] = f.forward(in.v[v]);
      store<V>(y + i * V, out);
    }
  }
};

// dx[i] = f.backward(x[i], y[i], dy[i]); dx may be dy. x and y must both be valid arrays (each formula uses what
// it needs; the backward of a layer whose output suffices may pass the output as x too). Items as
// ActivationForward's.
template <class F, int V = 1>
struct ActivationBackward {
  F f;
  const float *x, *y, *dy;
  float* dx;
  TOWER_HD void operator()(Index i) const {
    if constexpr (V == 1) {
      dx[i] = f.backward(x[i], y[i], dy[i]);
    } else {
      const Floats<V> in = load<V>(x + i * V), out = load<V>(y + i * V), grad = load<V>(dy + i * V);
      Floats<V> d;
      for (int v = 0; v < V; ++v) d.v[v] = f.backward(in.v[v], out.v[v], grad.v[v]);
      store<V>(dx + i * V, d);
    }
  }
};

// Calls visit(formula) with the formula struct of `kind` configured from p, and returns what it returns.
template <class Visitor>
decltype(auto) visit_activation(ActivationKind kind, const ActivationParams& p, Visitor&& visit) {
  switch (kind) {
    case ActivationKind::linear: return visit(Linear{});
    case ActivationKind::relu:
      return visit(ReLU{p.max_value < 0.f ? INFINITY : p.max_value, p.threshold, p.alpha});
    case ActivationKind::sigmoid: return visit(Sigmoid{});
    case ActivationKind::tanh: return visit(Tanh{});
    case ActivationKind::gelu: return visit(Gelu{});
    case ActivationKind::gelu_tanh: return visit(GeluTanh{});
    case ActivationKind::swish: return visit(Swish{});
    case ActivationKind::elu: return visit(Elu{p.alpha});
    case ActivationKind::leaky_relu: return visit(LeakyReLU{p.alpha});
    case ActivationKind::selu: return visit(Selu{});
    case ActivationKind::softplus: return visit(Softplus{});
    case ActivationKind::softsign: return visit(Softsign{});
    case ActivationKind::hard_sigmoid: return visit(HardSigmoid{});
    case ActivationKind::exponential: return visit(Exponential{});
  }
  return visit(Linear{});
}

}  // namespace tower::backend::math
