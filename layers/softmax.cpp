#include "layers/softmax.h"

#include "api/backend/backend.h"
#include "api/engine/layer_registry.h"

namespace tower::layers {

SoftmaxImpl::SoftmaxImpl(Options options) : Layer("Softmax", options.name), options_(std::move(options)) {
  options_.name = name();
}

std::vector<Shape> SoftmaxImpl::compute_output_shape(const std::vector<Shape>& in) const {
  check_num_inputs(in, 1);
  const int rank = in[0].rank();
  if (options_.axis < -rank || options_.axis >= rank)
    shape_error("axis " + std::to_string(options_.axis) + " is out of range for input shape " + in[0].to_string());
  return {in[0]};
}

SoftmaxImpl::Extents SoftmaxImpl::extents(const Shape& shape) const {
  const int a = shape.normalize_axis(options_.axis);
  Extents e;
  for (int i = 0; i < shape.rank(); ++i) {
    if (i < a) e.outer *= shape[i];
    else if (i == a) e.axis = shape[i];
    else e.inner *= shape[i];
  }
  return e;
}

void SoftmaxImpl::forward(const ForwardContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  const Extents e = extents(x.shape());
  backend::get(x.device()).softmax_forward(x.data<float>(), ctx.outputs[0].data<float>(), e.outer, e.axis, e.inner);
}

void SoftmaxImpl::backward(const BackwardContext& ctx) {
  Tensor& dx = ctx.grad_inputs[0];
  if (!dx.defined()) return;
  if (ctx.output_grad_is_logits) {
    dx.copy_from(ctx.grad_outputs[0]);
    return;
  }
  const Tensor& y = ctx.outputs[0];
  const Extents e = extents(y.shape());
  backend::get(y.device())
      .softmax_backward(y.data<float>(), ctx.grad_outputs[0].data<float>(), dx.data<float>(), e.outer, e.axis,
                        e.inner);
}

TOWER_REGISTER_LAYER(SoftmaxImpl, "Softmax");

}  // namespace tower::layers
