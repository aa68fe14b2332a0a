#pragma once
// SeparableConv1D (keras.layers.SeparableConv1D): a depthwise convolution over the steps (each input channel with
// its own depth_multiplier filters, with strides, dilation_rate and padding) followed by a pointwise (size-1)
// convolution to `filters` channels, then bias and activation:
//   y = activation(pointwise(depthwise(x)) + bias)
// Input [batch, steps, in_channels] -> output [batch, out_steps, filters], out_steps as Conv1D's for 'valid' and
// 'same' (Keras refuses 'causal' here). Weights, Keras' names and layouts: depthwise_kernel
// [kernel_size, in_channels, depth_multiplier], pointwise_kernel [1, in_channels * depth_multiplier, filters],
// bias [filters]. Both convolutions run on the backend's 2-D convolution over [batch, 1, steps, channels] views;
// the depthwise result is kept between forward and backward.
//
// Construction throws std::invalid_argument for filters <= 0, depth_multiplier <= 0, non-positive kernel_size,
// strides or dilation_rate, padding other than 'valid'/'same', data_format other than 'channels_last', or
// strides > 1 together with dilation_rate > 1. Calling it throws ShapeError for an input that is not rank 3, whose
// channels are unknown (or differ from the built kernel's), or that is shorter than the dilated kernel with padding
// 'valid'. Weight constraints are not supported.
#include "api/engine/layer.h"
#include "api/engine/layer_options.h"
#include "layers/conv_utils.h"

namespace tower::layers {

struct SeparableConv1DOptions {
  int filters = 0;
  Size1 kernel_size = 0;  // required
  Size1 strides = 1;
  std::string padding = "valid";
  std::string data_format = "channels_last";
  Size1 dilation_rate = 1;
  int depth_multiplier = 1;
  activations::Activation activation;
  bool use_bias = true;
  initializers::Initializer depthwise_initializer = "glorot_uniform";
  initializers::Initializer pointwise_initializer = "glorot_uniform";
  initializers::Initializer bias_initializer = "zeros";
  regularizers::Regularizer depthwise_regularizer;
  regularizers::Regularizer pointwise_regularizer;
  regularizers::Regularizer bias_regularizer;
  std::string name;
  template <class V>
  void visit(V&& v) {
    v("filters", filters);
    v("kernel_size", kernel_size);
    v("strides", strides);
    v("padding", padding);
    v("data_format", data_format);
    v("dilation_rate", dilation_rate);
    v("depth_multiplier", depth_multiplier);
    v("activation", activation);
    v("use_bias", use_bias);
    v("depthwise_initializer", depthwise_initializer);
    v("pointwise_initializer", pointwise_initializer);
    v("bias_initializer", bias_initializer);
    v("depthwise_regularizer", depthwise_regularizer);
    v("pointwise_regularizer", pointwise_regularizer);
    v("bias_regularizer", bias_regularizer);
    v("name", name);
  }
};

class SeparableConv1DImpl final : public Layer {
 public:
  using Options = SeparableConv1DOptions;
  explicit SeparableConv1DImpl(Options options);
  const Options& options() const { return options_; }
  const VariablePtr& depthwise_kernel() const { return depthwise_kernel_; }
  const VariablePtr& pointwise_kernel() const { return pointwise_kernel_; }
  const VariablePtr& bias() const { return bias_; }

  void build(const std::vector<Shape>& input_shapes) override;
  std::vector<Shape> compute_output_shape(const std::vector<Shape>& input_shapes) const override;
  void forward(const ForwardContext& ctx) override;
  void backward(const BackwardContext& ctx) override;
  bool backward_needs_outputs() const override { return !options_.activation.is_linear(); }
  Config get_config() const override { return options_to_config(options_); }

 private:
  Options options_;
  detail::ConvGeometry depthwise_, pointwise_;  // depthwise_.groups and filters are set at build
  VariablePtr depthwise_kernel_, pointwise_kernel_, bias_;
};

class SeparableConv1D : public LayerHolder<SeparableConv1DImpl> {
 public:
  using LayerHolder::LayerHolder;
};

}  // namespace tower::layers
