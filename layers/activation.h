#pragma once
// Activation (keras.layers.Activation): applies a named activation function elementwise (softmax over the
// last axis). Any input shape; the output has the input's shape. No weights.
#include "api/engine/layer.h"
#include "api/engine/layer_options.h"

namespace tower::layers {

struct ActivationOptions {
  activations::Activation activation;  // an unknown name throws std::invalid_argument
  std::string name;
  template <class V> void visit(V&& v) {
    v("activation", activation);
    v("name", name);
  }
};

class ActivationImpl final : public Layer {
 public:
  using Options = ActivationOptions;
  // Keeps the mask of its input (Keras' supports_masking).
  bool supports_masking() const override { return true; }
  explicit ActivationImpl(Options options);
  const Options& options() const { return options_; }

  std::vector<Shape> compute_output_shape(const std::vector<Shape>& input_shapes) const override;
  void forward(const ForwardContext& ctx) override;
  void backward(const BackwardContext& ctx) override;
  bool backward_needs_inputs() const override {
    return !options_.activation.is_linear() && !options_.activation.output_suffices();
  }
  bool backward_needs_outputs() const override { return !options_.activation.is_linear(); }
  // A loss may fuse "softmax" into its gradient (BackwardContext::output_grad_is_logits).
  bool softmax_output() const override { return options_.activation.name() == "softmax"; }
  Config get_config() const override { return options_to_config(options_); }

 private:
  Options options_;
};

class Activation : public LayerHolder<ActivationImpl> {
 public:
  using LayerHolder::LayerHolder;
};

}  // namespace tower::layers
