#pragma once
// DepthwiseConv2D (keras.layers.DepthwiseConv2D): each input channel convolved with its own depth_multiplier
// filters, y = activation(depthwise_conv2d(x, kernel) + bias) on NHWC images.
// Input [batch, h, w, channels] -> output [batch, out_h, out_w, channels * depth_multiplier]; output channel
// c * depth_multiplier + j comes from input channel c. Output sizes and padding as Conv2D.
// Weights: kernel [kh, kw, channels, depth_multiplier], bias [channels * depth_multiplier]. Keras 3 names the
// kernel "kernel" (tf.keras 2 called it "depthwise_kernel"); its options keep the depthwise_* names.
//
// Construction throws std::invalid_argument for depth_multiplier <= 0 and the argument errors Conv2D rejects
// (kernel_size, strides, dilation_rate, padding, data_format, strides > 1 with dilation_rate > 1). Calling it
// throws ShapeError for an input that is not rank 4, whose channels differ from the built kernel's, or that is
// smaller than the dilated kernel with padding 'valid'.
#include "api/engine/layer.h"
#include "api/engine/layer_options.h"
#include "layers/conv_utils.h"

namespace tower::layers {

struct DepthwiseConv2DOptions {
  Size2 kernel_size = 0;  // required
  Size2 strides = 1;
  std::string padding = "valid";
  int depth_multiplier = 1;
  std::string data_format = "channels_last";
  Size2 dilation_rate = 1;
  activations::Activation activation;
  bool use_bias = true;
  initializers::Initializer depthwise_initializer = "glorot_uniform";
  initializers::Initializer bias_initializer = "zeros";
  regularizers::Regularizer depthwise_regularizer;
  regularizers::Regularizer bias_regularizer;
  std::string name;
  template <class V> void visit(V&& v) {
    v("kernel_size", kernel_size);
    v("strides", strides);
    v("padding", padding);
    v("depth_multiplier", depth_multiplier);
    v("data_format", data_format);
    v("dilation_rate", dilation_rate);
    v("activation", activation);
    v("use_bias", use_bias);
    v("depthwise_initializer", depthwise_initializer);
    v("bias_initializer", bias_initializer);
    v("depthwise_regularizer", depthwise_regularizer);
    v("bias_regularizer", bias_regularizer);
    v("name", name);
  }
};

class DepthwiseConv2DImpl final : public Layer {
 public:
  using Options = DepthwiseConv2DOptions;
  explicit DepthwiseConv2DImpl(Options options);
  const Options& options() const { return options_; }
  const VariablePtr& kernel() const { return kernel_; }
  const VariablePtr& bias() const { return bias_; }

  void build(const std::vector<Shape>& input_shapes) override;
  std::vector<Shape> compute_output_shape(const std::vector<Shape>& input_shapes) const override;
  void forward(const ForwardContext& ctx) override;
  void backward(const BackwardContext& ctx) override;
  bool backward_needs_outputs() const override { return !options_.activation.is_linear(); }
  Config get_config() const override { return options_to_config(options_); }

 private:
  // The geometry for an input with `channels` channels (groups = channels).
  detail::ConvGeometry geometry(Index channels) const;

  Options options_;
  detail::ConvGeometry geometry_;  // groups and filters are set by build()
  VariablePtr kernel_, bias_;
};

class DepthwiseConv2D : public LayerHolder<DepthwiseConv2DImpl> {
 public:
  using LayerHolder::LayerHolder;
};

}  // namespace tower::layers
