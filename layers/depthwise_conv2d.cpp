#include "layers/depthwise_conv2d.h"

#include <algorithm>

#include "api/engine/layer_registry.h"

namespace tower::layers {

DepthwiseConv2DImpl::DepthwiseConv2DImpl(Options options)
    : Layer("DepthwiseConv2D", options.name), options_(std::move(options)) {
  options_.name = name();
  geometry_ = detail::check_conv_arguments(where(), options_.kernel_size, options_.strides, options_.padding,
                                           options_.data_format, options_.dilation_rate);
  if (options_.depth_multiplier <= 0)
    throw std::invalid_argument(where() + "depth_multiplier must be positive, got " +
                                std::to_string(options_.depth_multiplier));
}

detail::ConvGeometry DepthwiseConv2DImpl::geometry(Index channels) const {
  detail::ConvGeometry g = geometry_;
  g.groups = static_cast<int>(channels);
  g.filters = channels * options_.depth_multiplier;
  return g;
}

std::vector<Shape> DepthwiseConv2DImpl::compute_output_shape(const std::vector<Shape>& in) const {
  check_num_inputs(in, 1);
  const Shape& s = in[0];
  if (kernel_ && s.rank() == 4 && s[3] != kernel_->value.dim(2))
    shape_error("expected axis -1 of the input to have value " + std::to_string(kernel_->value.dim(2)) +
                ", got input shape " + s.to_string());
  return {detail::conv2d_output_shape(where(), s, geometry(s.rank() == 4 ? std::max<Index>(s[3], 1) : 1))};
}

void DepthwiseConv2DImpl::build(const std::vector<Shape>& in) {
  const Index channels = in[0][3];
  geometry_ = geometry(channels);
  kernel_ = add_weight("kernel", {options_.kernel_size.h, options_.kernel_size.w, channels, options_.depth_multiplier},
                       options_.depthwise_initializer, true, options_.depthwise_regularizer);
  if (options_.use_bias)
    bias_ = add_weight("bias", {channels * options_.depth_multiplier}, options_.bias_initializer, true,
                       options_.bias_regularizer);
}

void DepthwiseConv2DImpl::forward(const ForwardContext& ctx) {
  detail::conv2d_forward(ctx, geometry_, kernel_->value, bias_ ? &bias_->value : nullptr,
                         options_.activation);
}

void DepthwiseConv2DImpl::backward(const BackwardContext& ctx) {
  detail::conv2d_backward(ctx, geometry_, kernel_->value, bias_ != nullptr, options_.activation);
}

TOWER_REGISTER_LAYER(DepthwiseConv2DImpl, "DepthwiseConv2D");

}  // namespace tower::layers
