#include "layers/average.h"

#include "api/backend/backend.h"
#include "api/engine/layer_registry.h"

namespace tower::layers {

AverageImpl::AverageImpl(Options options) : Merge("Average", options.name), options_(std::move(options)) {
  options_.name = name();
}

void AverageImpl::forward(const ForwardContext& ctx) {
  const Tensor& y = ctx.outputs[0];
  backend::Backend& be = backend::get(y.device());
  const Index n = y.numel();
  if (same_shapes(ctx.inputs, y.shape())) {
    be.add(ctx.inputs[0].data<float>(), ctx.inputs[1].data<float>(), y.data<float>(), n);
    for (std::size_t i = 2; i < ctx.inputs.size(); ++i)
      be.add(y.data<float>(), ctx.inputs[i].data<float>(), y.data<float>(), n);
  } else {
    combine(backend::BinaryOp::add, ctx.inputs, y);
  }
  be.axpby(1.f / static_cast<float>(ctx.inputs.size()), y.data<float>(), 0.f, y.data<float>(), n);
}

void AverageImpl::backward(const BackwardContext& ctx) {
  const Tensor& dy = ctx.grad_outputs[0];
  backend::Backend& be = backend::get(dy.device());
  const float inv = 1.f / static_cast<float>(ctx.grad_inputs.size());
  for (Tensor& dx : ctx.grad_inputs) {
    if (!dx.defined()) continue;
    reduce_to(dy, dx);
    be.axpby(inv, dx.data<float>(), 0.f, dx.data<float>(), dx.numel());
  }
}

TOWER_REGISTER_LAYER(AverageImpl, "Average");

}  // namespace tower::layers
