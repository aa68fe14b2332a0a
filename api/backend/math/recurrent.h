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

// gates row: x W + h U of the step, [4 * units] in Keras' order i, f, c, o; overwritten with the activated gates
// i, f, g, o (what backward reads). bias [4 * units] or null. h and c: the new state.
struct LstmForwardElement {
  LstmStepForward s;

  TOWER_HD void operator()(Index i) const {
    const Division d = divide(i, s.units);
    const Index n = d.quotient, j = d.remainder;
    float* z = s.gates + n * s.gates_stride;
    float zi = z[j], zf = z[s.units + j], zg = z[2 * s.units + j], zo = z[3 * s.units + j];
    if (s.bias) {
      zi += s.bias[j];
      zf += s.bias[s.units + j];
      zg += s.bias[2 * s.units + j];
      zo += s.bias[3 * s.units + j];
    }
    const float ig = sigmoid(zi), fg = sigmoid(zf), gg = ::tanhf(zg), og = sigmoid(zo);
    const float cn = fg * s.c_prev[n * s.c_prev_stride + j] + ig * gg;
    z[j] = ig;
    z[s.units + j] = fg;
    z[2 * s.units + j] = gg;
    z[3 * s.units + j] = og;
    s.c[n * s.c_stride + j] = cn;
    s.h[n * s.h_stride + j] = og * ::tanhf(cn);
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
    const Index n = d.quotient, j = d.remainder;
    const float* z = s.gates + n * s.gates_stride;
    const float ig = z[j], fg = z[s.units + j], gg = z[2 * s.units + j], og = z[3 * s.units + j];
    float gh = s.dh_next[i], gc = s.dc_next[i];
    if (s.dh) gh += s.dh[n * s.dh_stride + j];
    if (s.dc) gc += s.dc[n * s.dc_stride + j];
    const float tc = ::tanhf(s.c[n * s.c_stride + j]);
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
    const Index n = d.quotient, j = d.remainder;
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
    const float zg = sigmoid(xz + rz), rg = sigmoid(xr + rr), hh = ::tanhf(xh + rg * rh);
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
    const Index n = d.quotient, j = d.remainder;
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
