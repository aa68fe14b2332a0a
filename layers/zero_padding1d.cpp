#include "layers/zero_padding1d.h"

#include "api/backend/backend.h"
#include "api/engine/layer_registry.h"

namespace tower::layers {

ZeroPadding1DImpl::ZeroPadding1DImpl(Options options)
    : Layer("ZeroPadding1D", options.name), options_(std::move(options)) {
  options_.name = name();
  const Padding1D& p = options_.padding;
  if (p.left < 0 || p.right < 0)
    throw std::invalid_argument(where() + "padding cannot be negative, got (" + std::to_string(p.left) + ", " +
                                std::to_string(p.right) + ")");
  if (options_.data_format.empty()) options_.data_format = "channels_last";
  if (options_.data_format != "channels_last" && options_.data_format != "channels_first")
    throw std::invalid_argument(where() + "data_format must be 'channels_last' or 'channels_first', got '" +
                                options_.data_format + "'");
}

std::vector<Shape> ZeroPadding1DImpl::compute_output_shape(const std::vector<Shape>& in) const {
  check_num_inputs(in, 1);
  if (in[0].rank() != 3) shape_error("expects a 3-D input (batch, steps, features), got shape " + in[0].to_string());
  const int axis = options_.data_format == "channels_first" ? 2 : 1;
  Shape out = in[0];
  if (out[axis] >= 0) out[axis] += options_.padding.left + options_.padding.right;
  return {out};
}

// Padded as images [rows, 1, steps, features]: rows = batch (channels_last) or batch * features with one feature
// (channels_first).
void ZeroPadding1DImpl::forward(const ForwardContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  const Tensor& y = ctx.outputs[0];
  const bool cf = options_.data_format == "channels_first";
  const Index rows = cf ? x.dim(0) * x.dim(1) : x.dim(0), c = cf ? 1 : x.dim(2);
  const int axis = cf ? 2 : 1;
  backend::get(x.device())
      .pad2d(x.data<float>(), y.data<float>(), rows, 1, x.dim(axis), c, 1, y.dim(axis), 0, options_.padding.left);
}

void ZeroPadding1DImpl::backward(const BackwardContext& ctx) {
  const Tensor& dx = ctx.grad_inputs[0];
  if (!dx.defined()) return;
  const Tensor& dy = ctx.grad_outputs[0];
  const bool cf = options_.data_format == "channels_first";
  const Index rows = cf ? dx.dim(0) * dx.dim(1) : dx.dim(0), c = cf ? 1 : dx.dim(2);
  const int axis = cf ? 2 : 1;
  backend::get(dy.device())
      .pad2d_backward(dy.data<float>(), dx.data<float>(), rows, 1, dx.dim(axis), c, 1, dy.dim(axis), 0,
                      options_.padding.left);
}

TOWER_REGISTER_LAYER(ZeroPadding1DImpl, "ZeroPadding1D");

}  // namespace tower::layers
