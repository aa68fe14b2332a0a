#pragma once
// Internal to layers/ (not part of the public API): running a layer's computation on its tensors viewed under
// other shapes. A view shares the tensor's memory (Tensor::reshape), so nothing is copied or allocated on the
// device: the 1-D layers run the 2-D kernels on [batch, 1, width, channels] views of [batch, width, channels],
// and TimeDistributed runs its layer on [batch * time, ...] views of [batch, time, ...].
#include <array>
#include <cstddef>
#include <utility>

#include "api/engine/layer.h"

namespace tower::layers::detail {

// `t` under `shape` (same numel), or an undefined tensor when `t` is undefined.
inline Tensor view_as(const Tensor& t, const Shape& shape) { return t.defined() ? t.reshape(shape) : Tensor(); }

// [batch, width, channels] -> [batch, 1, width, channels].
inline Shape as_image(const Shape& s) { return Shape{s[0], 1, s[1], s[2]}; }

// Calls run(view) with a copy of ctx whose single input and single output are viewed under in_shape and
// out_shape; the state, step values and replica are ctx's.
template <class Run>
void forward_on_views(const ForwardContext& ctx, const Shape& in_shape, const Shape& out_shape, Run&& run) {
  const std::array<Tensor, 1> inputs{view_as(ctx.inputs[0], in_shape)};
  std::array<Tensor, 1> outputs{view_as(ctx.outputs[0], out_shape)};
  ForwardContext view = ctx;
  view.inputs = inputs;
  view.outputs = outputs;
  std::forward<Run>(run)(view);
}

// The same for backward: inputs and grad_inputs under in_shape, outputs and grad_outputs under out_shape (an
// undefined one stays undefined); weight gradients, state and flags are ctx's.
template <class Run>
void backward_on_views(const BackwardContext& ctx, const Shape& in_shape, const Shape& out_shape, Run&& run) {
  const std::array<Tensor, 1> inputs{view_as(ctx.inputs[0], in_shape)};
  const std::array<Tensor, 1> outputs{view_as(ctx.outputs[0], out_shape)};
  const std::array<Tensor, 1> grad_outputs{view_as(ctx.grad_outputs[0], out_shape)};
  std::array<Tensor, 1> grad_inputs{view_as(ctx.grad_inputs[0], in_shape)};
  BackwardContext view = ctx;
  view.inputs = inputs;
  view.outputs = outputs;
  view.grad_outputs = grad_outputs;
  view.grad_inputs = grad_inputs;
  std::forward<Run>(run)(view);
}

}  // namespace tower::layers::detail
