#pragma once
// Conv2D (keras.layers.Conv2D): y = activation(conv2d(x, kernel) + bias) on NHWC images.
// Input [batch, h, w, in_channels] -> output [batch, out_h, out_w, filters], with out = ceil(in / stride) for
// padding 'same' (TF's split: the odd padding pixel goes to the bottom/right) and
// (in - (k-1)*dilation - 1) / stride + 1 for 'valid'. Weights: kernel [kh, kw, in_channels / groups, filters],
// bias [filters]. Output channel o convolves the input channels of group o / (filters / groups).
//
// Construction throws std::invalid_argument for filters <= 0, non-positive kernel_size, strides or
// dilation_rate, filters not divisible by groups, padding other than 'valid'/'same', data_format other than
// 'channels_last', or strides > 1 together with dilation_rate > 1. Calling it throws ShapeError for an input
// that is not rank 4, whose channels are not divisible by groups (or differ from the built kernel's), or that
// is smaller than the dilated kernel with padding 'valid'.
#include "api/engine/layer.h"
#include "api/engine/layer_options.h"
#include "layers/conv_utils.h"

namespace tower::layers {

struct Conv2DOptions {
  int filters = 0;
  Size2 kernel_size = 0;  // required
  Size2 strides = 1;
  std::string padding = "valid";
  std::string data_format = "channels_last";
  Size2 dilation_rate = 1;
  int groups = 1;
  activations::Activation activation;
  bool use_bias = true;
  initializers::Initializer kernel_initializer = "glorot_uniform";
  initializers::Initializer bias_initializer = "zeros";
  regularizers::Regularizer kernel_regularizer;
  regularizers::Regularizer bias_regularizer;
  std::string name;
  template <class V> void visit(V&& v) {
    v("filters", filters);
    v("kernel_size", kernel_size);
    v("strides", strides);
    v("padding", padding);
    v("data_format", data_format);
    v("dilation_rate", dilation_rate);
    v("groups", groups);
    v("activation", activation);
    v("use_bias", use_bias);
    v("kernel_initializer", kernel_initializer);
    v("bias_initializer", bias_initializer);
    v("kernel_regularizer", kernel_regularizer);
    v("bias_regularizer", bias_regularizer);
    v("name", name);
  }
};

class Conv2DImpl final : public Layer {
 public:
  using Options = Conv2DOptions;
  explicit Conv2DImpl(Options options);
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
  Options options_;
  detail::ConvGeometry geometry_;
  VariablePtr kernel_, bias_;
};

class Conv2D : public LayerHolder<Conv2DImpl> {
 public:
  using LayerHolder::LayerHolder;
};

}  // namespace tower::layers
