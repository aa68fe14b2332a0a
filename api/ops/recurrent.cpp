// ops::lstm and ops::gru: gemms for the products, the backend's fused steps for the rest.
#include "api/ops/recurrent.h"

#include <stdexcept>
#include <string>
#include <vector>

#include "api/backend/backend.h"
#include "api/ops/detail/op_helpers.h"
#include "api/ops/recorder.h"

namespace tower::ops {

using namespace detail;

namespace {

// The sizes every operand of one recurrence is checked against.
struct Sizes {
  Index n, t, f, units;
};

// Checks x [N, T, F], kernel [F, gates * units], recurrent_kernel [units, gates * units], bias (when defined) of
// `bias_shape`, and the states [N, units]; throws naming `op`.
Sizes check(const char* op, int gates, const Tensor& x, const Tensor& kernel, const Tensor& recurrent_kernel,
            const Tensor& bias, const Shape& bias_shape, const std::vector<const Tensor*>& states) {
  require_float(op, x, "the input sequence");
  require_float(op, kernel, "the kernel");
  require_float(op, recurrent_kernel, "the recurrent kernel");
  require_same_device(op, x, kernel);
  require_same_device(op, x, recurrent_kernel);
  const auto refuse = [&](const std::string& why) { throw std::invalid_argument(prefix(op) + why); };
  if (x.rank() != 3) refuse("expects an input sequence [N, T, features], got shape " + x.shape().to_string());
  if (x.dim(1) < 1) refuse("the input sequence " + x.shape().to_string() + " has no step");
  if (recurrent_kernel.rank() != 2 || recurrent_kernel.dim(1) != gates * recurrent_kernel.dim(0) ||
      recurrent_kernel.dim(0) < 1)
    refuse("expects a recurrent kernel [units, " + std::to_string(gates) + " * units], got shape " +
           recurrent_kernel.shape().to_string());
  const Sizes s{x.dim(0), x.dim(1), x.dim(2), recurrent_kernel.dim(0)};
  if (kernel.shape() != Shape{s.f, gates * s.units})
    refuse("expects a kernel " + Shape{s.f, gates * s.units}.to_string() + " for input " + x.shape().to_string() +
           " and " + std::to_string(s.units) + " units, got shape " + kernel.shape().to_string());
  if (bias.defined()) {
    require_float(op, bias, "the bias");
    require_same_device(op, x, bias);
    if (bias.shape() != bias_shape)
      refuse("expects a bias " + bias_shape.to_string() + ", got shape " + bias.shape().to_string());
  }
  for (const Tensor* state : states) {
    require_float(op, *state, "an initial state");
    require_same_device(op, x, *state);
    if (state->shape() != Shape{s.n, s.units})
      refuse("expects initial states " + Shape{s.n, s.units}.to_string() + ", got shape " +
             state->shape().to_string());
  }
  return s;
}

// y [rows, cols] = a [rows, k] b [k, cols] (b transposed when trans_b), zero when k is 0.
void product(const Tensor& a, bool trans_b, const Tensor& b, Tensor& y, Index rows, Index k, Index cols) {
  if (rows == 0 || cols == 0) return;
  if (k == 0) {
    y.zero();
    return;
  }
  be(a).gemm(false, trans_b, rows, cols, k, 1.f, a.data<float>(), k, b.data<float>(), trans_b ? k : cols, 0.f,
             y.data<float>(), cols);
}

// The gradient of a [rows, k] in y = a b: a^T dy [k, cols].
Tensor weight_gradient(const Tensor& a, const Tensor& dy, Index rows, Index k, Index cols) {
  Tensor g(Shape{k, cols}, DType::float32, a.device());
  if (g.numel() == 0) return g;
  if (rows == 0) {
    g.zero();
    return g;
  }
  be(a).gemm(true, false, k, cols, rows, 1.f, a.data<float>(), k, dy.data<float>(), cols, 0.f, g.data<float>(), cols);
  return g;
}

// [N, T, units]: the state each step started from: h0, then the h of every step but the last, read from `h` (rows of
// `h_stride` floats, a step every `step` floats).
Tensor previous_states(const Tensor& h0, const float* h, Index h_stride, Index step, const Sizes& s) {
  Tensor prev(Shape{s.n, s.t, s.units}, DType::float32, h0.device());
  backend::Backend& b = be(h0);
  backend::StridedCopy first;
  first.rank = 2;
  first.dims[0] = s.n, first.dims[1] = s.units;
  first.x_strides[0] = s.units, first.x_strides[1] = 1;
  first.y_strides[0] = s.t * s.units, first.y_strides[1] = 1;
  b.strided_copy(h0.data<float>(), prev.data<float>(), first);
  if (s.t > 1) {
    backend::StridedCopy rest;
    rest.rank = 3;
    rest.dims[0] = s.n, rest.dims[1] = s.t - 1, rest.dims[2] = s.units;
    rest.x_strides[0] = h_stride, rest.x_strides[1] = step, rest.x_strides[2] = 1;
    rest.y_strides[0] = s.t * s.units, rest.y_strides[1] = s.units, rest.y_strides[2] = 1;
    b.strided_copy(h, prev.data<float>() + s.units, rest);
  }
  return prev;
}

}  // namespace

Tensor lstm(const Tensor& x, const Tensor& kernel, const Tensor& recurrent_kernel, const Tensor& bias,
            const Tensor& h0, const Tensor& c0) {
  const Sizes s = check("lstm", 4, x, kernel, recurrent_kernel, bias, Shape{4 * recurrent_kernel.dim(0)}, {&h0, &c0});
  const Index u = s.units, g4 = 4 * u, rows = s.n * s.t;
  backend::Backend& b = be(x);
  // gates [N, T, 4u]: x W for every step at once; step t's rows are every T-th row from row t.
  Tensor gates(Shape{s.n, s.t, g4}, DType::float32, x.device());
  product(x, false, kernel, gates, rows, s.f, g4);
  Tensor states(Shape{s.n, s.t, 2, u}, DType::float32, x.device());
  const Index gs = s.t * g4, ss = s.t * 2 * u;
  float* const g = gates.data<float>();
  float* const st = states.data<float>();
  for (Index t = 0; t < s.t; ++t) {
    const float* h_prev = t == 0 ? h0.data<float>() : st + (t - 1) * 2 * u;
    const float* c_prev = t == 0 ? c0.data<float>() : st + (t - 1) * 2 * u + u;
    const Index prev_stride = t == 0 ? u : ss;
    if (s.n > 0) {
      b.gemm(false, false, s.n, g4, u, 1.f, h_prev, prev_stride, recurrent_kernel.data<float>(), g4, 1.f, g + t * g4,
             gs);
      b.lstm_step_forward({g + t * g4, gs, bias.defined() ? bias.data<float>() : nullptr, c_prev, prev_stride,
                           st + t * 2 * u, ss, st + t * 2 * u + u, ss, u},
                          s.n);
    }
  }
  std::vector<Tensor> inputs{x, kernel, recurrent_kernel};
  if (bias.defined()) inputs.push_back(bias);
  inputs.push_back(h0);
  inputs.push_back(c0);
  const bool has_bias = bias.defined();
  // The lambda keeps gates and states alive: backward reads them through g and st.
  return recorded("lstm", inputs, states, [=, gates = gates, states = states](const Tensor& d_states) {
    backend::Backend& b = be(d_states);
    Tensor d_gates(Shape{s.n, s.t, g4}, DType::float32, x.device());
    Tensor dh = Tensor::zeros(Shape{s.n, u}, DType::float32, x.device());
    Tensor dc = Tensor::zeros(Shape{s.n, u}, DType::float32, x.device());
    const float* ds = d_states.data<float>();
    float* dg = d_gates.data<float>();
    for (Index t = s.t - 1; t >= 0 && s.n > 0; --t) {
      const float* c_prev = t == 0 ? c0.data<float>() : st + (t - 1) * 2 * u + u;
      b.lstm_step_backward({g + t * g4, gs, c_prev, t == 0 ? u : ss, st + t * 2 * u + u, ss, ds + t * 2 * u, ss,
                            ds + t * 2 * u + u, ss, dh.data<float>(), dc.data<float>(), dg + t * g4, gs, u},
                           s.n);
      b.gemm(false, true, s.n, u, g4, 1.f, dg + t * g4, gs, recurrent_kernel.data<float>(), g4, 0.f, dh.data<float>(),
             u);
    }
    std::vector<Tensor> grads;
    grads.push_back(Tensor());
    if (input_needs_gradient(0)) {
      grads[0] = Tensor(x.shape(), DType::float32, x.device());
      product(d_gates, true, kernel, grads[0], rows, g4, s.f);
    }
    grads.push_back(input_needs_gradient(1) ? weight_gradient(x, d_gates, rows, s.f, g4) : Tensor());
    grads.push_back(input_needs_gradient(2)
                        ? weight_gradient(previous_states(h0, st, ss, 2 * u, s), d_gates, rows, u, g4)
                        : Tensor());
    std::size_t k = 3;
    if (has_bias) {
      Tensor db;
      if (input_needs_gradient(k)) {
        db = Tensor(Shape{g4}, DType::float32, x.device());
        if (rows == 0) db.zero();
        else b.bias_grad(dg, db.data<float>(), rows, g4);
      }
      grads.push_back(db);
      ++k;
    }
    grads.push_back(input_needs_gradient(k) ? dh : Tensor());
    grads.push_back(input_needs_gradient(k + 1) ? dc : Tensor());
    return grads;
  });
}

Tensor gru(const Tensor& x, const Tensor& kernel, const Tensor& recurrent_kernel, const Tensor& bias,
           const Tensor& h0) {
  const Sizes s = check("gru", 3, x, kernel, recurrent_kernel, bias, Shape{2, 3 * recurrent_kernel.dim(0)}, {&h0});
  const Index u = s.units, g3 = 3 * u, rows = s.n * s.t;
  backend::Backend& b = be(x);
  // xw and rec [N, T, 3u]: x W for every step at once, and h_prev U of each step.
  Tensor xw(Shape{s.n, s.t, g3}, DType::float32, x.device());
  product(x, false, kernel, xw, rows, s.f, g3);
  Tensor rec(Shape{s.n, s.t, g3}, DType::float32, x.device());
  Tensor hs(Shape{s.n, s.t, u}, DType::float32, x.device());
  const Index gs = s.t * g3, hstride = s.t * u;
  float* const xp = xw.data<float>();
  float* const rp = rec.data<float>();
  float* const h = hs.data<float>();
  for (Index t = 0; t < s.t && s.n > 0; ++t) {
    const float* h_prev = t == 0 ? h0.data<float>() : h + (t - 1) * u;
    const Index prev_stride = t == 0 ? u : hstride;
    b.gemm(false, false, s.n, g3, u, 1.f, h_prev, prev_stride, recurrent_kernel.data<float>(), g3, 0.f, rp + t * g3,
           gs);
    b.gru_step_forward({xp + t * g3, gs, rp + t * g3, gs, bias.defined() ? bias.data<float>() : nullptr, h_prev,
                        prev_stride, h + t * u, hstride, u},
                       s.n);
  }
  std::vector<Tensor> inputs{x, kernel, recurrent_kernel};
  if (bias.defined()) inputs.push_back(bias);
  inputs.push_back(h0);
  const bool has_bias = bias.defined();
  // The lambda keeps xw, rec and hs alive: backward reads them through xp, rp and h.
  return recorded("gru", inputs, hs, [=, xw = xw, rec = rec, hs = hs](const Tensor& d_hs) {
    backend::Backend& b = be(d_hs);
    Tensor dx(Shape{s.n, s.t, g3}, DType::float32, x.device());
    Tensor drec(Shape{s.n, s.t, g3}, DType::float32, x.device());
    Tensor dh = Tensor::zeros(Shape{s.n, u}, DType::float32, x.device());
    float* const dxp = dx.data<float>();
    float* const drp = drec.data<float>();
    for (Index t = s.t - 1; t >= 0 && s.n > 0; --t) {
      const float* h_prev = t == 0 ? h0.data<float>() : h + (t - 1) * u;
      b.gru_step_backward({xp + t * g3, gs, rp + t * g3, gs, h_prev, t == 0 ? u : hstride,
                           d_hs.data<float>() + t * u, hstride, dh.data<float>(), dxp + t * g3, gs, drp + t * g3, gs,
                           u},
                          s.n);
      b.gemm(false, true, s.n, u, g3, 1.f, drp + t * g3, gs, recurrent_kernel.data<float>(), g3, 1.f,
             dh.data<float>(), u);
    }
    std::vector<Tensor> grads;
    grads.push_back(Tensor());
    if (input_needs_gradient(0)) {
      grads[0] = Tensor(x.shape(), DType::float32, x.device());
      product(dx, true, kernel, grads[0], rows, g3, s.f);
    }
    grads.push_back(input_needs_gradient(1) ? weight_gradient(x, dx, rows, s.f, g3) : Tensor());
    grads.push_back(input_needs_gradient(2) ? weight_gradient(previous_states(h0, h, hstride, u, s), drec, rows, u, g3)
                                            : Tensor());
    std::size_t k = 3;
    if (has_bias) {
      Tensor db;
      if (input_needs_gradient(k)) {
        db = Tensor(Shape{2, g3}, DType::float32, x.device());
        if (rows == 0) db.zero();
        else {
          b.bias_grad(dxp, db.data<float>(), rows, g3);
          b.bias_grad(drp, db.data<float>() + g3, rows, g3);
        }
      }
      grads.push_back(db);
      ++k;
    }
    grads.push_back(input_needs_gradient(k) ? dh : Tensor());
    return grads;
  });
}

}  // namespace tower::ops
