#pragma once
// Conv1D (keras.layers.Conv1D): y = activation(conv1d(x, kernel) + bias) over the steps of a sequence.
// Input [batch, steps, in_channels] -> output [batch, out_steps, filters], with out = ceil(steps / stride) for
// padding 'same' (TF's split: the odd padding step goes to the end), (steps - (k-1)*dilation - 1) / stride + 1
// for 'valid', and (steps - 1) / stride + 1 for 'causal' ((k-1)*dilation zeros before the sequence, none after, so
// output t never sees an input after step t * stride). Weights: kernel [kernel_size, in_channels / groups, filters],
// bias [filters]. Output channel o convolves the input channels of group o / (filters / groups). An unknown (-1)
// number of steps stays unknown in the output shape.
// Runs on the backend's 2-D convolution (Conv2D's) over [batch, 1, steps, channels] views of the same memory.
//
// Construction throws std::invalid_argument for filters <= 0, non-positive kernel_size, strides, dilation_rate or
// groups, filters not divisible by groups, padding other than 'valid'/'same'/'causal', data_format other than
// 'channels_last', or strides > 1 together with dilation_rate > 1. Calling it throws ShapeError for an input that
// is not rank 3, whose channels are unknown, not divisible by groups (or differ from the built kernel's), or that
// is shorter than the dilated kernel with padding 'valid'. Weight constraints are not supported.
#include "api/engine/layer.h"
#include "api/engine/layer_options.h"
#include "layers/conv_utils.h"

namespace tower::layers {

struct Conv1DOptions {
  int filters = 0;
  Size1 kernel_size = 0;  // required
  Size1 strides = 1;
  std::string padding = "valid";
  std::string data_format = "channels_last";
  Size1 dilation_rate = 1;
  int groups = 1;
  activations::Activation activation;
  bool use_bias = true;
  initializers::Initializer kernel_initializer = "glorot_uniform";
  initializers::Initializer bias_initializer = "zeros";
  regularizers::Regularizer kernel_regularizer;
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

class Conv1DImpl final : public Layer {
 public:
  using Options = Conv1DOptions;
  explicit Conv1DImpl(Options options);
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
  // The kernel as Conv2D's [1, kernel_size, in / groups, filters] (the same memory).
  Tensor kernel_2d() const;

  Options options_;
  detail::ConvGeometry geometry_;
  VariablePtr kernel_, bias_;
};

class Conv1D : public LayerHolder<Conv1DImpl> {
 public:
  using LayerHolder::LayerHolder;
};

}  // namespace tower::layers
