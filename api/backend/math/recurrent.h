#pragma once
// One time step of an LSTM and of a GRU (reset_after) with Keras' default activations (tanh, and sigmoid for the
// gates), element by element: the part of a recurrence between its matrix products. The products (the inputs'
// for every step at once, the previous state's for each step) are gemms the caller runs; these functors take
// their results and the previous state and write the new state and what backward needs. Element i is unit
// i % units of example i / units; the operands (backend.h's LstmStepForward, ...) are rows with their own strides.
#include "api/backend/backend.h"
#include "api/backend/math/activations.h"
#include "api/backend/math/hd.h"

namespace tower::backend::math {

// exp(x) without a library call, so that a loop over a row's units vectorises: Cephes' expf (x = k ln 2 + r with
// |r| <= ln 2 / 2 in two parts, a degree-5 polynomial for e^r, 2^k from the exponent bits), within 2 float ulps of
// expf; x is clamped to [-87.3, 88], where e^x and 2^k stay normal floats (sigmoid and tanh saturate long before).
TOWER_HD float recurrent_exp(float x) {
  x = x < -87.3f ? -87.3f : (x > 88.f ? 88.f : x);
  const float k = ::floorf(x * 1.44269504088896341f + 0.5f);
  float r = x - k * 0.693359375f;
  r = r - k * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float y = p * r * r + r + 1.f;
  const int bits = (static_cast<int>(k) + 127) << 23;
#if defined(__CUDA_ARCH__)
  return y * __int_as_float(bits);
#else
  return y * __builtin_bit_cast(float, bits);
#endif
}

TOWER_HD float recurrent_sigmoid(float x) { return 1.f / (1.f + recurrent_exp(-x)); }

// tanh as (1 - e) / (1 + e) with e = exp(-2|x|), the sign restored: within 1e-7 of tanhf absolutely (the relative
// error grows as |x| falls below 1e-2, where tanh(x) is about x).
TOWER_HD float recurrent_tanh(float x) {
  const float e = recurrent_exp(-2.f * ::fabsf(x));
  const float t = (1.f - e) / (1.f + e);
  return x < 0.f ? -t : t;
}

// gates row: x W + h U of the step, [4 * units] in Keras' order i, f, c, o; overwritten with the activated gates
// i, f, g, o (what backward reads). bias [4 * units] or null. h and c: the new state.
struct LstmForwardElement {
  LstmStepForward s;

  TOWER_HD void operator()(Index i) const {
    const Division d = divide(i, s.units);
    at(d.quotient, d.remainder);
  }
  // Unit j of example n (the CPU's loops run a row's units as one vectorised loop).
  TOWER_HD void at(Index n, Index j) const {
    float* z = s.gates + n * s.gates_stride;
    float zi = z[j], zf = z[s.units + j], zg = z[2 * s.units + j], zo = z[3 * s.units + j];
    if (s.bias) {
      zi += s.bias[j];
      zf += s.bias[s.units + j];
      zg += s.bias[2 * s.units + j];
      zo += s.bias[3 * s.units + j];
    }
    const float ig = recurrent_sigmoid(zi), fg = recurrent_sigmoid(zf), gg = recurrent_tanh(zg);
    const float og = recurrent_sigmoid(zo);
    const float cn = fg * s.c_prev[n * s.c_prev_stride + j] + ig * gg;
    z[j] = ig;
    z[s.units + j] = fg;
    z[2 * s.units + j] = gg;
    z[3 * s.units + j] = og;
    s.c[n * s.c_stride + j] = cn;
    s.h[n * s.h_stride + j] = og * recurrent_tanh(cn);
  }
};

// Backward through one LSTM step. dh, dc: the loss's gradient with respect to this step's h and c from outside the
// recurrence (the outputs), or null; dh_next, dc_next [N, units]: the gradient reaching h and c from the next step.
// Writes the gates' pre-activation gradient into dgates (i, f, c, o) and the gradient of the previous c into
// dc_next (in place: element i reads its own entry first). The previous h's gradient is dgates U^T (a gemm).
struct LstmBackwardElement {
  LstmStepBackward s;

  TOWER_HD void operator()(Index i) const {
    const Division d = divide(i, s.units);
    at(d.quotient, d.remainder);
  }
  // Unit j of example n (the CPU's loops run a row's units as one vectorised loop).
  TOWER_HD void at(Index n, Index j) const {
    const Index i = n * s.units + j;
    const float* z = s.gates + n * s.gates_stride;
    const float ig = z[j], fg = z[s.units + j], gg = z[2 * s.units + j], og = z[3 * s.units + j];
    float gh = s.dh_next[i], gc = s.dc_next[i];
    if (s.dh) gh += s.dh[n * s.dh_stride + j];
    if (s.dc) gc += s.dc[n * s.dc_stride + j];
    const float tc = recurrent_tanh(s.c[n * s.c_stride + j]);
    const float go = gh * tc;
    gc += gh * og * (1.f - tc * tc);
    const float gi = gc * gg, gg_ = gc * ig, gf = gc * s.c_prev[n * s.c_prev_stride + j];
    s.dc_next[i] = gc * fg;
    float* dz = s.dgates + n * s.dgates_stride;
    dz[j] = gi * ig * (1.f - ig);
    dz[s.units + j] = gf * fg * (1.f - fg);
    dz[2 * s.units + j] = gg_ * (1.f - gg * gg);
    dz[3 * s.units + j] = go * og * (1.f - og);
  }
};

// One GRU step, reset_after (Keras' default, and cuDNN's form): x row: x W of the step, [3 * units] in Keras'
// order z, r, h, overwritten with the activated z, r and candidate hh; rec row: h_prev U, its candidate part
// overwritten with h_prev U_h + b_h (what the reset gate multiplied, which backward reads). bias [2, 3 * units]
// (input bias, then recurrent bias) or null.
struct GruForwardElement {
  GruStepForward s;

  TOWER_HD void operator()(Index i) const {
    const Division d = divide(i, s.units);
    at(d.quotient, d.remainder);
  }
  // Unit j of example n (the CPU's loops run a row's units as one vectorised loop).
  TOWER_HD void at(Index n, Index j) const {
    float* xs = s.x + n * s.x_stride;
    float* rs = s.rec + n * s.rec_stride;
    float xz = xs[j], xr = xs[s.units + j], xh = xs[2 * s.units + j];
    float rz = rs[j], rr = rs[s.units + j], rh = rs[2 * s.units + j];
    if (s.bias) {
      const float* bin = s.bias;
      const float* brec = s.bias + 3 * s.units;
      xz += bin[j];
      xr += bin[s.units + j];
      xh += bin[2 * s.units + j];
      rz += brec[j];
      rr += brec[s.units + j];
      rh += brec[2 * s.units + j];
    }
    const float zg = recurrent_sigmoid(xz + rz), rg = recurrent_sigmoid(xr + rr);
    const float hh = recurrent_tanh(xh + rg * rh);
    const float hp = s.h_prev[n * s.h_prev_stride + j];
    xs[j] = zg;
    xs[s.units + j] = rg;
    xs[2 * s.units + j] = hh;
    rs[2 * s.units + j] = rh;
    s.h[n * s.h_stride + j] = zg * hp + (1.f - zg) * hh;
  }
};

// Backward through one GRU step (reset_after). dh: the gradient of this step's h from outside the recurrence, or
// null; dh_next [N, units]: from the next step, overwritten with the part of the previous h's gradient that does
// not go through U (z * dh); the caller adds drec U^T. Writes the gradients of x W's pre-activations into dx and
// of h_prev U's into drec.
struct GruBackwardElement {
  GruStepBackward s;

  TOWER_HD void operator()(Index i) const {
    const Division d = divide(i, s.units);
    at(d.quotient, d.remainder);
  }
  // Unit j of example n (the CPU's loops run a row's units as one vectorised loop).
  TOWER_HD void at(Index n, Index j) const {
    const Index i = n * s.units + j;
    const float* xs = s.x + n * s.x_stride;
    const float zg = xs[j], rg = xs[s.units + j], hh = xs[2 * s.units + j];
    const float rh = s.rec[n * s.rec_stride + 2 * s.units + j];
    float g = s.dh_next[i];
    if (s.dh) g += s.dh[n * s.dh_stride + j];
    const float hp = s.h_prev[n * s.h_prev_stride + j];
    const float gz = g * (hp - hh) * zg * (1.f - zg);
    const float ghh = g * (1.f - zg) * (1.f - hh * hh);
    const float gr = ghh * rh * rg * (1.f - rg);
    s.dh_next[i] = g * zg;
    float* dxs = s.dx + n * s.dx_stride;
    float* drs = s.drec + n * s.drec_stride;
    dxs[j] = gz;
    dxs[s.units + j] = gr;
    dxs[2 * s.units + j] = ghh;
    drs[j] = gz;
    drs[s.units + j] = gr;
    drs[2 * s.units + j] = ghh * rg;
  }
};

}  // namespace tower::backend::math
