#include "layers/up_sampling1d.h"

#include "api/backend/backend.h"
#include "api/engine/layer_registry.h"

namespace tower::layers {

UpSampling1DImpl::UpSampling1DImpl(Options options)
    : Layer("UpSampling1D", options.name), options_(std::move(options)) {
  options_.name = name();
  if (options_.size <= 0)
    throw std::invalid_argument(where() + "size must be positive, got " + std::to_string(options_.size));
}

std::vector<Shape> UpSampling1DImpl::compute_output_shape(const std::vector<Shape>& in) const {
  check_num_inputs(in, 1);
  if (in[0].rank() != 3) shape_error("expects a 3-D input (batch, steps, features), got shape " + in[0].to_string());
  Shape out = in[0];
  if (out[1] >= 0) out[1] *= options_.size;
  return {out};
}

void UpSampling1DImpl::forward(const ForwardContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  backend::get(x.device())
      .upsample2d(x.data<float>(), ctx.outputs[0].data<float>(), x.dim(0), 1, x.dim(1), x.dim(2), 1, options_.size);
}

void UpSampling1DImpl::backward(const BackwardContext& ctx) {
  const Tensor& dx = ctx.grad_inputs[0];
  if (!dx.defined()) return;
  backend::get(dx.device())
      .upsample2d_backward(ctx.grad_outputs[0].data<float>(), dx.data<float>(), dx.dim(0), 1, dx.dim(1), dx.dim(2), 1,
                           options_.size);
}

TOWER_REGISTER_LAYER(UpSampling1DImpl, "UpSampling1D");

}  // namespace tower::layers
