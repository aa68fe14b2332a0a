#include "layers/zero_padding2d.h"

#include "api/backend/backend.h"
#include "api/engine/layer_registry.h"

namespace tower::layers {

ZeroPadding2DImpl::ZeroPadding2DImpl(Options options)
    : Layer("ZeroPadding2D", options.name), options_(std::move(options)) {
  options_.name = name();
  const Padding2D& p = options_.padding;
  if (p.top < 0 || p.bottom < 0 || p.left < 0 || p.right < 0)
    throw std::invalid_argument(where() + "padding cannot be negative, got ((" + std::to_string(p.top) + ", " +
                                std::to_string(p.bottom) + "), (" + std::to_string(p.left) + ", " +
                                std::to_string(p.right) + "))");
  if (options_.data_format != "channels_last" && options_.data_format != "channels_first")
    throw std::invalid_argument(where() + "data_format must be 'channels_last' or 'channels_first', got '" +
                                options_.data_format + "'");
}

std::vector<Shape> ZeroPadding2DImpl::compute_output_shape(const std::vector<Shape>& in) const {
  check_num_inputs(in, 1);
  if (in[0].rank() != 4) shape_error("expects a 4-D input (batch and three image axes), got shape " + in[0].to_string());
  const int h_axis = options_.data_format == "channels_first" ? 2 : 1;
  const Padding2D& p = options_.padding;
  Shape out = in[0];
  if (out[h_axis] >= 0) out[h_axis] += p.top + p.bottom;
  if (out[h_axis + 1] >= 0) out[h_axis + 1] += p.left + p.right;
  return {out};
}

// channels_first images are padded as [batch * c, h, w, 1].
void ZeroPadding2DImpl::forward(const ForwardContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  const Tensor& y = ctx.outputs[0];
  const bool cf = options_.data_format == "channels_first";
  const Index n = cf ? x.dim(0) * x.dim(1) : x.dim(0), c = cf ? 1 : x.dim(3);
  const int h = cf ? 2 : 1;
  backend::get(x.device())
      .pad2d(x.data<float>(), y.data<float>(), n, x.dim(h), x.dim(h + 1), c, y.dim(h), y.dim(h + 1),
             options_.padding.top, options_.padding.left);
}

void ZeroPadding2DImpl::backward(const BackwardContext& ctx) {
  const Tensor& dx = ctx.grad_inputs[0];
  if (!dx.defined()) return;
  const Tensor& dy = ctx.grad_outputs[0];
  const bool cf = options_.data_format == "channels_first";
  const Index n = cf ? dx.dim(0) * dx.dim(1) : dx.dim(0), c = cf ? 1 : dx.dim(3);
  const int h = cf ? 2 : 1;
  backend::get(dy.device())
      .pad2d_backward(dy.data<float>(), dx.data<float>(), n, dx.dim(h), dx.dim(h + 1), c, dy.dim(h), dy.dim(h + 1),
                      options_.padding.top, options_.padding.left);
}

TOWER_REGISTER_LAYER(ZeroPadding2DImpl, "ZeroPadding2D");

}  // namespace tower::layers
