#include "layers/rescaling.h"

#include "api/backend/backend.h"
#include "api/engine/layer_registry.h"

namespace tower::layers {

RescalingImpl::RescalingImpl(Options options) : Layer("Rescaling", options.name), options_(std::move(options)) {
  options_.name = name();
}

std::vector<Shape> RescalingImpl::compute_output_shape(const std::vector<Shape>& in) const {
  check_num_inputs(in, 1);
  return {in[0]};
}

void RescalingImpl::forward(const ForwardContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  backend::get(x.device())
      .scale_shift(x.data<float>(), options_.scale, options_.offset, ctx.outputs[0].data<float>(), x.numel());
}

void RescalingImpl::backward(const BackwardContext& ctx) {
  const Tensor& dx = ctx.grad_inputs[0];
  if (!dx.defined()) return;
  const Tensor& dy = ctx.grad_outputs[0];
  backend::get(dy.device()).axpby(options_.scale, dy.data<float>(), 0.f, dx.data<float>(), dy.numel());
}

TOWER_REGISTER_LAYER(RescalingImpl, "Rescaling");

}  // namespace tower::layers
