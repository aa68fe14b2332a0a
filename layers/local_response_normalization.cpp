#include "layers/local_response_normalization.h"

#include <cmath>

#include "api/backend/backend.h"
#include "api/engine/layer_registry.h"

namespace tower::layers {

LocalResponseNormalizationImpl::LocalResponseNormalizationImpl(Options options)
    : Layer("LocalResponseNormalization", options.name), options_(std::move(options)) {
  options_.name = name();
  if (options_.depth_radius < 0)
    throw std::invalid_argument(where() + "depth_radius cannot be negative, got " +
                                std::to_string(options_.depth_radius));
  for (const auto& [key, value] : {std::pair{"bias", options_.bias}, std::pair{"alpha", options_.alpha},
                                   std::pair{"beta", options_.beta}})
    if (!std::isfinite(value))
      throw std::invalid_argument(where() + key + " must be a finite number, got " + std::to_string(value));
  params_ = {.depth_radius = options_.depth_radius, .bias = options_.bias, .alpha = options_.alpha,
             .beta = options_.beta};
}

std::vector<Shape> LocalResponseNormalizationImpl::compute_output_shape(const std::vector<Shape>& in) const {
  check_num_inputs(in, 1);
  if (in[0].rank() < 2)
    shape_error("expected an input of rank >= 2 with the channels last, got input shape " + in[0].to_string());
  return {in[0]};
}

void LocalResponseNormalizationImpl::forward(const ForwardContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  const Index depth = x.shape()[x.shape().rank() - 1];
  if (x.numel() == 0) return;
  backend::get(x.device())
      .lrn_forward(params_, x.data<float>(), ctx.outputs[0].data<float>(), x.numel() / depth, depth);
}

void LocalResponseNormalizationImpl::backward(const BackwardContext& ctx) {
  Tensor& dx = ctx.grad_inputs[0];
  if (!dx.defined() || dx.numel() == 0) return;
  const Tensor& x = ctx.inputs[0];
  const Index depth = x.shape()[x.shape().rank() - 1];
  backend::get(x.device())
      .lrn_backward(params_, x.data<float>(), ctx.outputs[0].data<float>(), ctx.grad_outputs[0].data<float>(),
                    dx.data<float>(), x.numel() / depth, depth);
}

TOWER_REGISTER_LAYER(LocalResponseNormalizationImpl, "LocalResponseNormalization");

}  // namespace tower::layers
