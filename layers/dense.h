#pragma once
// Dense (keras.layers.Dense): y = activation(x @ kernel + bias) on the last axis.
// Input [..., input_dim] -> output [..., units]. Weights: kernel [input_dim, units], bias [units].
#include "api/engine/layer.h"
#include "api/engine/layer_options.h"

namespace tower::layers {

struct DenseOptions {
  int units = 0;
  activations::Activation activation;
  bool use_bias = true;
  initializers::Initializer kernel_initializer = "glorot_uniform";
  initializers::Initializer bias_initializer = "zeros";
  regularizers::Regularizer kernel_regularizer;
  regularizers::Regularizer bias_regularizer;
  std::string name;
  template <class V> void visit(V&& v) {
    v("units", units);
    v("activation", activation);
    v("use_bias", use_bias);
    v("kernel_initializer", kernel_initializer);
    v("bias_initializer", bias_initializer);
    v("kernel_regularizer", kernel_regularizer);
    v("bias_regularizer", bias_regularizer);
    v("name", name);
  }
};

class DenseImpl final : public Layer {
 public:
  using Options = DenseOptions;
  // Keeps the mask of its input (Keras' supports_masking).
  bool supports_masking() const override { return true; }
  // Throws std::invalid_argument if units <= 0.
  explicit DenseImpl(Options options);
  const Options& options() const { return options_; }
  const VariablePtr& kernel() const { return kernel_; }
  const VariablePtr& bias() const { return bias_; }

  void build(const std::vector<Shape>& input_shapes) override;
  std::vector<Shape> compute_output_shape(const std::vector<Shape>& input_shapes) const override;
  void forward(const ForwardContext& ctx) override;
  void backward(const BackwardContext& ctx) override;
  bool backward_needs_outputs() const override { return !options_.activation.is_linear(); }
  bool softmax_output() const override { return options_.activation.name() == "softmax"; }
  Config get_config() const override { return options_to_config(options_); }

 private:
  Options options_;
  VariablePtr kernel_, bias_;
};

class Dense : public LayerHolder<DenseImpl> {
 public:
  using LayerHolder::LayerHolder;
};

}  // namespace tower::layers
