#include "layers/relu.h"

#include "api/backend/backend.h"
#include "api/engine/layer_registry.h"

namespace tower::layers {

ReLUImpl::ReLUImpl(Options options) : Layer("ReLU", options.name), options_(std::move(options)) {
  options_.name = name();
  if (options_.max_value && *options_.max_value < 0.f)
    throw std::invalid_argument(where() + "max_value cannot be negative, got " + std::to_string(*options_.max_value));
  if (options_.negative_slope < 0.f)
    throw std::invalid_argument(where() + "negative_slope cannot be negative, got " +
                                std::to_string(options_.negative_slope));
  params_.alpha = options_.negative_slope;
  params_.max_value = options_.max_value ? *options_.max_value : -1.f;
  params_.threshold = options_.threshold;
}

std::vector<Shape> ReLUImpl::compute_output_shape(const std::vector<Shape>& in) const {
  check_num_inputs(in, 1);
  return {in[0]};
}

void ReLUImpl::forward(const ForwardContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  backend::get(x.device())
      .activation_forward(backend::ActivationKind::relu, params_, x.data<float>(), ctx.outputs[0].data<float>(),
                          x.numel());
}

void ReLUImpl::backward(const BackwardContext& ctx) {
  Tensor& dx = ctx.grad_inputs[0];
  if (!dx.defined()) return;
  const Tensor& dy = ctx.grad_outputs[0];
  const Tensor& x = output_suffices() ? ctx.outputs[0] : ctx.inputs[0];
  backend::get(dy.device())
      .activation_backward(backend::ActivationKind::relu, params_, x.data<float>(), x.data<float>(),
                           dy.data<float>(), dx.data<float>(), dy.numel());
}

TOWER_REGISTER_LAYER(ReLUImpl, "ReLU");

}  // namespace tower::layers
