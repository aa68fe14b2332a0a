#include "layers/conv1d.h"

#include "api/engine/layer_registry.h"
#include "layers/view_utils.h"

namespace tower::layers {

Conv1DImpl::Conv1DImpl(Options options) : Layer("Conv1D", options.name), options_(std::move(options)) {
  options_.name = name();
  geometry_ = detail::check_conv1d_arguments(where(), options_.kernel_size, options_.strides, options_.padding,
                                             options_.data_format, options_.dilation_rate, /*allow_causal=*/true);
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

std::vector<Shape> Conv1DImpl::compute_output_shape(const std::vector<Shape>& in) const {
  check_num_inputs(in, 1);
  Shape out = detail::conv1d_output_shape(where(), in[0], geometry_);
  if (kernel_) {
    const Index expected = kernel_->value.dim(1) * options_.groups;
    if (in[0][2] != expected)
      shape_error("expected axis -1 of the input to have value " + std::to_string(expected) + ", got input shape " +
                  in[0].to_string());
  }
  return {out};
}

void Conv1DImpl::build(const std::vector<Shape>& in) {
  const Index in_per_group = in[0][2] / options_.groups;
  kernel_ = add_weight("kernel", {options_.kernel_size.value, in_per_group, options_.filters},
                       options_.kernel_initializer, true, options_.kernel_regularizer);
  if (options_.use_bias)
    bias_ = add_weight("bias", {options_.filters}, options_.bias_initializer, true, options_.bias_regularizer);
}

Tensor Conv1DImpl::kernel_2d() const {
  const Tensor& k = kernel_->value;
  return k.reshape({1, k.dim(0), k.dim(1), k.dim(2)});
}

void Conv1DImpl::forward(const ForwardContext& ctx) {
  const Tensor kernel = kernel_2d();
  detail::forward_on_views(ctx, detail::as_image(ctx.inputs[0].shape()), detail::as_image(ctx.outputs[0].shape()),
                           [&](const ForwardContext& v) {
                             detail::conv2d_forward(v, geometry_, kernel, bias_ ? &bias_->value : nullptr,
                                                    options_.activation);
                           });
}

void Conv1DImpl::backward(const BackwardContext& ctx) {
  const Tensor kernel = kernel_2d();
  const Shape x_shape = ctx.grad_inputs[0].defined() ? ctx.grad_inputs[0].shape() : ctx.inputs[0].shape();
  detail::backward_on_views(ctx, detail::as_image(x_shape), detail::as_image(ctx.grad_outputs[0].shape()),
                            [&](const BackwardContext& v) {
                              detail::conv2d_backward(v, geometry_, kernel, bias_ != nullptr, options_.activation);
                            });
}

TOWER_REGISTER_LAYER(Conv1DImpl, "Conv1D");

}  // namespace tower::layers
