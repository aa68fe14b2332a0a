#include "layers/subtract.h"

#include "api/backend/backend.h"
#include "api/engine/layer_registry.h"

namespace tower::layers {

SubtractImpl::SubtractImpl(Options options) : Merge("Subtract", options.name), options_(std::move(options)) {
  options_.name = name();
}

std::vector<Shape> SubtractImpl::compute_output_shape(const std::vector<Shape>& in) const {
  check_input_count(in, 2, true);
  return Merge::compute_output_shape(in);
}

void SubtractImpl::forward(const ForwardContext& ctx) {
  const Tensor& y = ctx.outputs[0];
  if (!same_shapes(ctx.inputs, y.shape())) return combine(backend::BinaryOp::subtract, ctx.inputs, y);
  backend::get(y.device())
      .sub(ctx.inputs[0].data<float>(), ctx.inputs[1].data<float>(), y.data<float>(), y.numel());
}

void SubtractImpl::backward(const BackwardContext& ctx) {
  const Tensor& dy = ctx.grad_outputs[0];
  if (ctx.grad_inputs[0].defined()) reduce_to(dy, ctx.grad_inputs[0]);
  if (Tensor& dx = ctx.grad_inputs[1]; dx.defined()) {
    reduce_to(dy, dx);
    backend::get(dy.device()).axpby(-1.f, dx.data<float>(), 0.f, dx.data<float>(), dx.numel());
  }
}

TOWER_REGISTER_LAYER(SubtractImpl, "Subtract");

}  // namespace tower::layers
