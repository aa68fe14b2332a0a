#pragma once
// The recurrences of Keras' LSTM and GRU layers over a whole sequence, each one differentiable op with a fused step
// (Backend::lstm_step_forward, ...) between gemms: the inputs' products for every step at once, one product of the
// previous state per step. Keras' default activations (tanh; sigmoid for the gates) and weight layouts; the steps
// run in the order of x's time axis (reverse x for go_backwards). Layers with other activations, masks or dropout
// compose their steps of ops instead (layers/lstm.h), which these are tested against.
//
//   Tensor states = ops::lstm(x, kernel, recurrent_kernel, bias, h0, c0);   // [N, T, 2, units]
//   Tensor h = ops::slice(states, {0, 0, 0, 0}, {n, t, 1, units});          // every step's h
//
// Errors (std::invalid_argument, naming the op and the shapes): operands that are not float32 or not on one device,
// shapes that do not fit together, a sequence with no step.
#include "api/core/tensor.h"

namespace tower::ops {

// x [N, T, F]; kernel [F, 4 * units] and recurrent_kernel [units, 4 * units] in Keras' gate order i, f, c, o; bias
// [4 * units] or an undefined Tensor; h0, c0 [N, units]. Returns [N, T, 2, units]: h and then c after each step.
Tensor lstm(const Tensor& x, const Tensor& kernel, const Tensor& recurrent_kernel, const Tensor& bias,
            const Tensor& h0, const Tensor& c0);

// Keras' GRU with reset_after = true (its default, and cuDNN's form): x [N, T, F]; kernel [F, 3 * units] and
// recurrent_kernel [units, 3 * units] in Keras' gate order z, r, h; bias [2, 3 * units] (input bias, recurrent bias)
// or an undefined Tensor; h0 [N, units]. Returns [N, T, units]: h after each step.
Tensor gru(const Tensor& x, const Tensor& kernel, const Tensor& recurrent_kernel, const Tensor& bias, const Tensor& h0);

}  // namespace tower::ops
