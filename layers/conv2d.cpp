#include "layers/conv2d.h"

#include "api/engine/layer_registry.h"

namespace tower::layers {

Conv2DImpl::Conv2DImpl(Options options) : Layer("Conv2D", options.name), options_(std::move(options)) {
  options_.name = name();
  geometry_ = detail::check_conv_arguments(where(), options_.kernel_size, options_.strides, options_.padding,
                                           options_.data_format, options_.dilation_rate);
  if (options_.filters <= 0)
    throw std::invalid_argument(where() + "filters must be positive, got " + std::to_string(options_.filters));
  if (options_.groups <= 0)
    throw std::invalid_argument(where() + "groups must be positive, got " + std::to_string(options_.groups));
  if (options_.filters % options_.groups != 0)
    throw std::invalid_argument(where() + "filters (" + std::to_string(options_.filters) +
                                ") must be divisible by groups (" + std::to_string(options_.groups) + ")");
  geometry_.groups = options_.groups;
  geometry_.filters = options_.filters;
}

std::vector<Shape> Conv2DImpl::compute_output_shape(const std::vector<Shape>& in) const {
  check_num_inputs(in, 1);
  Shape out = detail::conv2d_output_shape(where(), in[0], geometry_);
  if (kernel_) {
    const Index expected = kernel_->value.dim(2) * options_.groups;
    if (in[0][3] != expected)
      shape_error("expected axis -1 of the input to have value " + std::to_string(expected) +
                  ", got input shape " + in[0].to_string());
  }
  return {out};
}

void Conv2DImpl::build(const std::vector<Shape>& in) {
  const Index in_per_group = in[0][3] / options_.groups;
  kernel_ = add_weight("kernel", {options_.kernel_size.h, options_.kernel_size.w, in_per_group, options_.filters},
                       options_.kernel_initializer, true, options_.kernel_regularizer);
  if (options_.use_bias)
    bias_ = add_weight("bias", {options_.filters}, options_.bias_initializer, true, options_.bias_regularizer);
}

void Conv2DImpl::forward(const ForwardContext& ctx) {
  detail::conv2d_forward(ctx, geometry_, kernel_->value, bias_ ? &bias_->value : nullptr, options_.activation);
}

void Conv2DImpl::backward(const BackwardContext& ctx) {
  detail::conv2d_backward(ctx, geometry_, kernel_->value, bias_ != nullptr, options_.activation);
}

TOWER_REGISTER_LAYER(Conv2DImpl, "Conv2D");

}  // namespace tower::layers
