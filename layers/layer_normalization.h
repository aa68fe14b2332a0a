#pragma once
// LayerNormalization (keras.layers.LayerNormalization): each example normalized over `axis`, then scaled and
// shifted per position of those axes:
//   y = (x - mean) * rsqrt(var + epsilon) * gamma + beta      mean and biased variance over `axis`
// and with rms_scaling (Keras' deprecated option, kept as Keras computes it): y = x * rsqrt(var + epsilon) * gamma,
// the variance still taken about the mean, no beta.
// Any input shape [N, ...]; the output has the input's shape. `axis` counts the batch axis as 0 (negative from the
// end), one axis or several, never the batch axis; the normalized axes' sizes must be known.
// Weights, in Keras' order: gamma (when scale or rms_scaling), then beta (when center and not rms_scaling), each of
// the normalized axes' sizes in increasing axis order ([C] for axis -1; [H, W] for axis [1, 2] of [N, H, W, C]).
// Computed in float32. Weight constraints are not supported.
#include "api/engine/custom_layer.h"
#include "api/engine/layer_options.h"

namespace tower::layers {

struct LayerNormalizationOptions {
  std::vector<int> axis = {-1};  // Keras' int or list
  float epsilon = 1e-3f;
  bool center = true;
  bool scale = true;
  bool rms_scaling = false;
  initializers::Initializer beta_initializer = "zeros";
  initializers::Initializer gamma_initializer = "ones";
  regularizers::Regularizer beta_regularizer;
  regularizers::Regularizer gamma_regularizer;
  std::string name;
  template <class V> void visit(V&& v) {
    v("axis", axis);
    v("epsilon", epsilon);
    v("center", center);
    v("scale", scale);
    v("rms_scaling", rms_scaling);
    v("beta_initializer", beta_initializer);
    v("gamma_initializer", gamma_initializer);
    v("beta_regularizer", beta_regularizer);
    v("gamma_regularizer", gamma_regularizer);
    v("name", name);
  }
};

class LayerNormalizationImpl final : public CustomLayer {
 public:
  using Options = LayerNormalizationOptions;
  // Keeps the mask of its input (Keras' supports_masking).
  bool supports_masking() const override { return true; }
  // Throws std::invalid_argument if axis is empty or epsilon is negative.
  explicit LayerNormalizationImpl(Options options);
  const Options& options() const { return options_; }
  const VariablePtr& gamma() const { return gamma_; }  // null without scale and rms_scaling
  const VariablePtr& beta() const { return beta_; }    // null without center, or with rms_scaling

  void build(const std::vector<Shape>& input_shapes) override;
  // Throws ShapeError for an axis out of range, the batch axis, or a normalized axis of unknown size.
  std::vector<Shape> compute_output_shape(const std::vector<Shape>& input_shapes) const override;
  std::vector<Tensor> call(const std::vector<Tensor>& inputs, bool training) override;
  int num_inputs() const override { return 1; }
  Config get_config() const override { return options_to_config(options_); }

 private:
  // The normalized axes of an input of `shape`, non-negative, sorted, each once.
  std::vector<int> axes_for(const Shape& shape) const;

  Options options_;
  VariablePtr gamma_, beta_;
};

class LayerNormalization : public LayerHolder<LayerNormalizationImpl> {
 public:
  using LayerHolder::LayerHolder;
};

}  // namespace tower::layers
