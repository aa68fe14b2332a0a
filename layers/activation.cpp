#include "layers/activation.h"

#include "api/engine/layer_registry.h"

namespace tower::layers {

ActivationImpl::ActivationImpl(Options options) : Layer("Activation", options.name), options_(std::move(options)) {
  options_.name = name();
}

std::vector<Shape> ActivationImpl::compute_output_shape(const std::vector<Shape>& in) const {
  check_num_inputs(in, 1);
  return {in[0]};
}

void ActivationImpl::forward(const ForwardContext& ctx) {
  options_.activation.forward(ctx.inputs[0], ctx.outputs[0]);
}

void ActivationImpl::backward(const BackwardContext& ctx) {
  Tensor& dx = ctx.grad_inputs[0];
  if (!dx.defined()) return;
  const Tensor& dy = ctx.grad_outputs[0];
  const activations::Activation& act = options_.activation;
  if (act.is_linear() || ctx.output_grad_is_logits) {
    dx.copy_from(dy);
    return;
  }
  const Tensor& y = ctx.outputs[0];
  act.backward(act.output_suffices() ? y : ctx.inputs[0], y, dy, dx);
}

TOWER_REGISTER_LAYER(ActivationImpl, "Activation");

}  // namespace tower::layers
