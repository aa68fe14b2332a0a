#include "layers/up_sampling2d.h"

#include "api/backend/backend.h"
#include "api/engine/layer_registry.h"

namespace tower::layers {

UpSampling2DImpl::UpSampling2DImpl(Options options)
    : Layer("UpSampling2D", options.name), options_(std::move(options)) {
  options_.name = name();
  if (options_.size.h <= 0 || options_.size.w <= 0)
    throw std::invalid_argument(where() + "size must be positive, got (" + std::to_string(options_.size.h) + ", " +
                                std::to_string(options_.size.w) + ")");
  if (options_.data_format != "channels_last" && options_.data_format != "channels_first")
    throw std::invalid_argument(where() + "data_format must be 'channels_last' or 'channels_first', got '" +
                                options_.data_format + "'");
  if (options_.interpolation != "nearest")
    throw std::invalid_argument(where() + "interpolation '" + options_.interpolation +
                                "' is not supported; only 'nearest' is");
}

std::vector<Shape> UpSampling2DImpl::compute_output_shape(const std::vector<Shape>& in) const {
  check_num_inputs(in, 1);
  if (in[0].rank() != 4)
    shape_error("expects a 4-D input (batch and three image axes), got shape " + in[0].to_string());
  const int h_axis = options_.data_format == "channels_first" ? 2 : 1;
  Shape out = in[0];
  if (out[h_axis] >= 0) out[h_axis] *= options_.size.h;
  if (out[h_axis + 1] >= 0) out[h_axis + 1] *= options_.size.w;
  return {out};
}

// channels_first images are upsampled as [batch * c, h, w, 1].
void UpSampling2DImpl::forward(const ForwardContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  const bool cf = options_.data_format == "channels_first";
  const Index n = cf ? x.dim(0) * x.dim(1) : x.dim(0), c = cf ? 1 : x.dim(3);
  const int h = cf ? 2 : 1;
  backend::get(x.device())
      .upsample2d(x.data<float>(), ctx.outputs[0].data<float>(), n, x.dim(h), x.dim(h + 1), c, options_.size.h,
                  options_.size.w);
}

void UpSampling2DImpl::backward(const BackwardContext& ctx) {
  const Tensor& dx = ctx.grad_inputs[0];
  if (!dx.defined()) return;
  const bool cf = options_.data_format == "channels_first";
  const Index n = cf ? dx.dim(0) * dx.dim(1) : dx.dim(0), c = cf ? 1 : dx.dim(3);
  const int h = cf ? 2 : 1;
  backend::get(dx.device())
      .upsample2d_backward(ctx.grad_outputs[0].data<float>(), dx.data<float>(), n, dx.dim(h), dx.dim(h + 1), c,
                           options_.size.h, options_.size.w);
}

TOWER_REGISTER_LAYER(UpSampling2DImpl, "UpSampling2D");

}  // namespace tower::layers
