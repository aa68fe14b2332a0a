#include "layers/cropping2d.h"

#include "api/backend/backend.h"
#include "api/engine/layer_registry.h"

namespace tower::layers {

namespace {
std::string to_string(const Padding2D& p) {
  return "((" + std::to_string(p.top) + ", " + std::to_string(p.bottom) + "), (" + std::to_string(p.left) + ", " +
         std::to_string(p.right) + "))";
}
}  // namespace

Cropping2DImpl::Cropping2DImpl(Options options) : Layer("Cropping2D", options.name), options_(std::move(options)) {
  options_.name = name();
  const Padding2D& p = options_.cropping;
  if (p.top < 0 || p.bottom < 0 || p.left < 0 || p.right < 0)
    throw std::invalid_argument(where() + "cropping cannot be negative, got " + to_string(p));
  if (options_.data_format != "channels_last" && options_.data_format != "channels_first")
    throw std::invalid_argument(where() + "data_format must be 'channels_last' or 'channels_first', got '" +
                                options_.data_format + "'");
}

std::vector<Shape> Cropping2DImpl::compute_output_shape(const std::vector<Shape>& in) const {
  check_num_inputs(in, 1);
  const Shape& s = in[0];
  if (s.rank() != 4) shape_error("expects a 4-D input (batch and three image axes), got shape " + s.to_string());
  const int h_axis = options_.data_format == "channels_first" ? 2 : 1;
  const Padding2D& p = options_.cropping;
  const Index crop[2] = {p.top + p.bottom, p.left + p.right};
  Shape out = s;
  for (int i = 0; i < 2; ++i) {
    const int axis = h_axis + i;
    if (s[axis] < 0) continue;
    if (crop[i] >= s[axis])
      shape_error("cropping " + to_string(p) + " removes " + std::to_string(crop[i]) + " of the " +
                  std::to_string(s[axis]) + (i == 0 ? " rows" : " columns") + " of input shape " + s.to_string() +
                  "; it must leave at least one");
    out[axis] = s[axis] - crop[i];
  }
  return {out};
}

// Cropping is padding by minus the crop; channels_first images are cropped as [batch * c, h, w, 1].
void Cropping2DImpl::forward(const ForwardContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  const Tensor& y = ctx.outputs[0];
  const bool cf = options_.data_format == "channels_first";
  const Index n = cf ? x.dim(0) * x.dim(1) : x.dim(0), c = cf ? 1 : x.dim(3);
  const int h = cf ? 2 : 1;
  backend::get(x.device())
      .pad2d(x.data<float>(), y.data<float>(), n, x.dim(h), x.dim(h + 1), c, y.dim(h), y.dim(h + 1),
             -options_.cropping.top, -options_.cropping.left);
}

void Cropping2DImpl::backward(const BackwardContext& ctx) {
  const Tensor& dx = ctx.grad_inputs[0];
  if (!dx.defined()) return;
  const Tensor& dy = ctx.grad_outputs[0];
  const bool cf = options_.data_format == "channels_first";
  const Index n = cf ? dx.dim(0) * dx.dim(1) : dx.dim(0), c = cf ? 1 : dx.dim(3);
  const int h = cf ? 2 : 1;
  backend::get(dy.device())
      .pad2d_backward(dy.data<float>(), dx.data<float>(), n, dx.dim(h), dx.dim(h + 1), c, dy.dim(h), dy.dim(h + 1),
                      -options_.cropping.top, -options_.cropping.left);
}

TOWER_REGISTER_LAYER(Cropping2DImpl, "Cropping2D");

}  // namespace tower::layers
