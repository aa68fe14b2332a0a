#include "layers/add.h"

#include "api/backend/backend.h"
#include "api/engine/layer_registry.h"

namespace tower::layers {

AddImpl::AddImpl(Options options) : Merge("Add", options.name), options_(std::move(options)) {
  options_.name = name();
}

void AddImpl::forward(const ForwardContext& ctx) {
  const Tensor& y = ctx.outputs[0];
  if (!same_shapes(ctx.inputs, y.shape())) return combine(backend::BinaryOp::add, ctx.inputs, y);
  backend::Backend& be = backend::get(y.device());
  const Index n = y.numel();
  be.add(ctx.inputs[0].data<float>(), ctx.inputs[1].data<float>(), y.data<float>(), n);
  for (std::size_t i = 2; i < ctx.inputs.size(); ++i) be.add(y.data<float>(), ctx.inputs[i].data<float>(), y.data<float>(), n);
}

void AddImpl::backward(const BackwardContext& ctx) {
  for (Tensor& dx : ctx.grad_inputs)
    if (dx.defined()) reduce_to(ctx.grad_outputs[0], dx);
}

TOWER_REGISTER_LAYER(AddImpl, "Add");

}  // namespace tower::layers
