#include "layers/multiply.h"

#include "api/backend/backend.h"
#include "api/engine/layer_registry.h"

namespace tower::layers {

MultiplyImpl::MultiplyImpl(Options options) : Merge("Multiply", options.name), options_(std::move(options)) {
  options_.name = name();
}

void MultiplyImpl::forward(const ForwardContext& ctx) {
  const Tensor& y = ctx.outputs[0];
  backend::Backend& be = backend::get(y.device());
  const Index n = y.numel();
  be.mul(ctx.inputs[0].data<float>(), ctx.inputs[1].data<float>(), y.data<float>(), n);
  for (std::size_t i = 2; i < ctx.inputs.size(); ++i) be.mul(y.data<float>(), ctx.inputs[i].data<float>(), y.data<float>(), n);
}

// dx_i = dy * prod_{j != i} x_j, multiplied out rather than divided from y, so zeros in the inputs are fine.
void MultiplyImpl::backward(const BackwardContext& ctx) {
  const Tensor& dy = ctx.grad_outputs[0];
  backend::Backend& be = backend::get(dy.device());
  const Index n = dy.numel();
  for (std::size_t i = 0; i < ctx.grad_inputs.size(); ++i) {
    float* dx = ctx.grad_inputs[i].defined() ? ctx.grad_inputs[i].data<float>() : nullptr;
    if (!dx) continue;
    const float* acc = dy.data<float>();
    for (std::size_t j = 0; j < ctx.inputs.size(); ++j) {
      if (j == i) continue;
      be.mul(acc, ctx.inputs[j].data<float>(), dx, n);
      acc = dx;
    }
  }
}

TOWER_REGISTER_LAYER(MultiplyImpl, "Multiply");

}  // namespace tower::layers
