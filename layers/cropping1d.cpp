#include "layers/cropping1d.h"

#include "api/backend/backend.h"
#include "api/engine/layer_registry.h"

namespace tower::layers {

namespace {
std::string to_string(const Padding1D& p) {
  std::string s = "(";
  s += std::to_string(p.left);
  s += ", ";
  s += std::to_string(p.right);
  return s + ")";
}
}  // namespace

Cropping1DImpl::Cropping1DImpl(Options options) : Layer("Cropping1D", options.name), options_(std::move(options)) {
  options_.name = name();
  if (options_.cropping.left < 0 || options_.cropping.right < 0)
    throw std::invalid_argument(where() + "cropping cannot be negative, got " + to_string(options_.cropping));
}

std::vector<Shape> Cropping1DImpl::compute_output_shape(const std::vector<Shape>& in) const {
  check_num_inputs(in, 1);
  const Shape& s = in[0];
  if (s.rank() != 3) shape_error("expects a 3-D input (batch, steps, features), got shape " + s.to_string());
  const Index crop = options_.cropping.left + options_.cropping.right;
  Shape out = s;
  if (s[1] >= 0) {
    if (crop >= s[1])
      shape_error("cropping " + to_string(options_.cropping) + " removes " + std::to_string(crop) + " of the " +
                  std::to_string(s[1]) + " steps of input shape " + s.to_string() + "; it must leave at least one");
    out[1] = s[1] - crop;
  }
  return {out};
}

void Cropping1DImpl::forward(const ForwardContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  const Tensor& y = ctx.outputs[0];
  backend::get(x.device())
      .pad2d(x.data<float>(), y.data<float>(), x.dim(0), 1, x.dim(1), x.dim(2), 1, y.dim(1), 0,
             -options_.cropping.left);
}

void Cropping1DImpl::backward(const BackwardContext& ctx) {
  const Tensor& dx = ctx.grad_inputs[0];
  if (!dx.defined()) return;
  const Tensor& dy = ctx.grad_outputs[0];
  backend::get(dy.device())
      .pad2d_backward(dy.data<float>(), dx.data<float>(), dx.dim(0), 1, dx.dim(1), dx.dim(2), 1, dy.dim(1), 0,
                      -options_.cropping.left);
}

TOWER_REGISTER_LAYER(Cropping1DImpl, "Cropping1D");

}  // namespace tower::layers
