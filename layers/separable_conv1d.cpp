#include "layers/separable_conv1d.h"

#include <array>
#include <memory>

#include "api/engine/layer_registry.h"
#include "layers/view_utils.h"

namespace tower::layers {

namespace {

// Each convolution keeps its own state (backend op, scratch); `mid` is the depthwise output [batch, 1, steps,
// channels * depth_multiplier], `mid_grad` its gradient.
struct SeparableState : LayerState {
  std::unique_ptr<LayerState> depthwise, pointwise;
  Tensor mid, mid_grad;
};

void ensure(Tensor& t, const Shape& shape, const Device& device) {
  if (!t.defined() || t.shape() != shape || !(t.device() == device)) t = Tensor(shape, DType::float32, device);
}

Tensor as_2d_kernel(const Tensor& k) { return k.reshape({1, k.dim(0), k.dim(1), k.dim(2)}); }

}  // namespace

SeparableConv1DImpl::SeparableConv1DImpl(Options options)
    : Layer("SeparableConv1D", options.name), options_(std::move(options)) {
  options_.name = name();
  depthwise_ = detail::check_conv1d_arguments(where(), options_.kernel_size, options_.strides, options_.padding,
                                              options_.data_format, options_.dilation_rate, /*allow_causal=*/false);
  if (options_.filters <= 0)
    throw std::invalid_argument(where() + "filters must be positive, got " + std::to_string(options_.filters));
  if (options_.depth_multiplier <= 0)
    throw std::invalid_argument(where() + "depth_multiplier must be positive, got " +
                                std::to_string(options_.depth_multiplier));
  pointwise_.filters = options_.filters;
}

std::vector<Shape> SeparableConv1DImpl::compute_output_shape(const std::vector<Shape>& in) const {
  check_num_inputs(in, 1);
  const Shape& s = in[0];
  if (depthwise_kernel_ && s.rank() == 3 && s[2] != depthwise_kernel_->value.dim(1))
    shape_error("expected axis -1 of the input to have value " + std::to_string(depthwise_kernel_->value.dim(1)) +
                ", got input shape " + s.to_string());
  detail::ConvGeometry g = depthwise_;
  g.groups = 1;
  g.filters = options_.filters;
  return {detail::conv1d_output_shape(where(), s, g)};
}

void SeparableConv1DImpl::build(const std::vector<Shape>& in) {
  const Index channels = in[0][2];
  depthwise_.groups = static_cast<int>(channels);
  depthwise_.filters = channels * options_.depth_multiplier;
  depthwise_kernel_ = add_weight("depthwise_kernel", {options_.kernel_size.value, channels, options_.depth_multiplier},
                                 options_.depthwise_initializer, true, options_.depthwise_regularizer);
  pointwise_kernel_ = add_weight("pointwise_kernel", {1, depthwise_.filters, options_.filters},
                                 options_.pointwise_initializer, true, options_.pointwise_regularizer);
  if (options_.use_bias)
    bias_ = add_weight("bias", {options_.filters}, options_.bias_initializer, true, options_.bias_regularizer);
}

void SeparableConv1DImpl::forward(const ForwardContext& ctx) {
  SeparableState& st = ctx.get_state<SeparableState>();
  const Tensor& y = ctx.outputs[0];
  ensure(st.mid, {y.dim(0), 1, y.dim(1), depthwise_.filters}, y.device());
  const Tensor dw = as_2d_kernel(depthwise_kernel_->value), pw = as_2d_kernel(pointwise_kernel_->value);
  std::array<Tensor, 1> mid_out{st.mid};
  detail::forward_on_views(
      ctx, detail::as_image(ctx.inputs[0].shape()), detail::as_image(y.shape()), [&](const ForwardContext& v) {
        ForwardContext first = v;
        first.outputs = mid_out;
        first.state = &st.depthwise;
        detail::conv2d_forward(first, depthwise_, dw, nullptr, activations::Activation());
        ForwardContext second = v;
        second.inputs = mid_out;
        second.state = &st.pointwise;
        detail::conv2d_forward(second, pointwise_, pw, bias_ ? &bias_->value : nullptr, options_.activation);
      });
}

void SeparableConv1DImpl::backward(const BackwardContext& ctx) {
  SeparableState& st = ctx.get_state<SeparableState>();
  const Tensor dw = as_2d_kernel(depthwise_kernel_->value), pw = as_2d_kernel(pointwise_kernel_->value);
  ensure(st.mid_grad, st.mid.shape(), st.mid.device());
  const std::array<Tensor, 1> mid{st.mid};
  std::array<Tensor, 1> mid_grad{st.mid_grad};
  const bool weights = !ctx.weight_grads.empty();
  detail::backward_on_views(ctx, detail::as_image(ctx.inputs[0].shape()), detail::as_image(ctx.grad_outputs[0].shape()),
                            [&](const BackwardContext& v) {
                              BackwardContext second = v;
                              second.inputs = mid;
                              second.grad_inputs = mid_grad;
                              second.weight_grads = weights ? v.weight_grads.subspan(1) : v.weight_grads;
                              second.state = &st.pointwise;
                              detail::conv2d_backward(second, pointwise_, pw, bias_ != nullptr, options_.activation);
                              BackwardContext first = v;
                              first.grad_outputs = mid_grad;
                              first.weight_grads = weights ? v.weight_grads.first(1) : v.weight_grads;
                              first.state = &st.depthwise;
                              detail::conv2d_backward(first, depthwise_, dw, false, activations::Activation());
                            });
}

TOWER_REGISTER_LAYER(SeparableConv1DImpl, "SeparableConv1D");

}  // namespace tower::layers
