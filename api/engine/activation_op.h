#pragma once
// An `activation=` argument (activations::Activation, by Keras name) applied to a tensor as a differentiable op:
// what a layer written with tower::ops applies its activation with. Its gradient is the activation's own backward
// (the backend's, as Dense and Conv2D use), recorded like any op of api/ops when a recorder is open.
#include "api/activations/activations.h"
#include "api/core/tensor.h"

namespace tower {

// y = activation(x), of x's shape (softmax over the last axis). x: float32.
Tensor apply_activation(const activations::Activation& activation, const Tensor& x);

}  // namespace tower
