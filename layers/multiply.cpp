#include "layers/multiply.h"

#include "api/backend/backend.h"
#include "api/engine/layer_registry.h"

namespace tower::layers {

MultiplyImpl::MultiplyImpl(Options options) : Merge("Multiply", options.name), options_(std::move(options)) {
  options_.name = name();
}

void MultiplyImpl::forward(const ForwardContext& ctx) {
  const Tensor& y = ctx.outputs[0];
  if (!same_shapes(ctx.inputs, y.shape())) return combine(backend::BinaryOp::multiply, ctx.inputs, y);
  backend::Backend& be = backend::get(y.device());
  const Index n = y.numel();
  be.mul(ctx.inputs[0].data<float>(), ctx.inputs[1].data<float>(), y.data<float>(), n);
  for (std::size_t i = 2; i < ctx.inputs.size(); ++i) be.mul(y.data<float>(), ctx.inputs[i].data<float>(), y.data<float>(), n);
}

// dx_i = dy * prod_{j != i} x_j, multiplied out rather than divided from y, so zeros in the inputs are fine;
// with broadcasting, the product has the output's shape and is then summed onto x_i's.
void MultiplyImpl::backward(const BackwardContext& ctx) {
  const Tensor& dy = ctx.grad_outputs[0];
  backend::Backend& be = backend::get(dy.device());
  const Index n = dy.numel();
  const bool broadcast = !same_shapes(ctx.inputs, dy.shape());
  for (std::size_t i = 0; i < ctx.grad_inputs.size(); ++i) {
    if (!ctx.grad_inputs[i].defined()) continue;
    if (!broadcast) {
      float* dx = ctx.grad_inputs[i].data<float>();
      const float* acc = dy.data<float>();
      for (std::size_t j = 0; j < ctx.inputs.size(); ++j) {
        if (j == i) continue;
        be.mul(acc, ctx.inputs[j].data<float>(), dx, n);
        acc = dx;
      }
      continue;
    }
    Tensor product = ctx.grad_inputs[i].shape() == dy.shape()
                               ? ctx.grad_inputs[i]
                               : Tensor(dy.shape(), DType::float32, dy.device());
    product.copy_from(dy);
    for (std::size_t j = 0; j < ctx.inputs.size(); ++j)
      if (j != i) apply(backend::BinaryOp::multiply, ctx.inputs[j], product, product);
    reduce_to(product, ctx.grad_inputs[i]);
  }
}

TOWER_REGISTER_LAYER(MultiplyImpl, "Multiply");

}  // namespace tower::layers
