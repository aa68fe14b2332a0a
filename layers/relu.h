#pragma once
// ReLU (keras.layers.ReLU): y = min(x, max_value) for x >= threshold, negative_slope * (x - threshold) below it.
// ReLU({.max_value = 6}) is ReLU6. Any input shape; the output has the input's shape. No weights.
#include <optional>

#include "api/backend/backend.h"
#include "api/engine/layer.h"
#include "api/engine/layer_options.h"

namespace tower::layers {

struct ReLUOptions {
  std::optional<float> max_value;  // none: no cap
  float negative_slope = 0.f;
  float threshold = 0.f;
  std::string name;
  template <class V> void visit(V&& v) {
    v("max_value", max_value);
    v("negative_slope", negative_slope);
    v("threshold", threshold);
    v("name", name);
  }
};

class ReLUImpl final : public Layer {
 public:
  using Options = ReLUOptions;
  // Keeps the mask of its input (Keras' supports_masking).
  bool supports_masking() const override { return true; }
  // Throws std::invalid_argument for a negative max_value or negative_slope.
  explicit ReLUImpl(Options options);
  const Options& options() const { return options_; }

  std::vector<Shape> compute_output_shape(const std::vector<Shape>& input_shapes) const override;
  void forward(const ForwardContext& ctx) override;
  void backward(const BackwardContext& ctx) override;
  // Without a slope or threshold the gradient mask follows from the output (y > 0 iff x > 0, y < cap iff x < cap).
  bool backward_needs_inputs() const override { return !output_suffices(); }
  bool backward_needs_outputs() const override { return output_suffices(); }
  Config get_config() const override { return options_to_config(options_); }

 private:
  bool output_suffices() const { return options_.negative_slope == 0.f && options_.threshold == 0.f; }

  Options options_;
  backend::ActivationParams params_;
};

class ReLU : public LayerHolder<ReLUImpl> {
 public:
  using LayerHolder::LayerHolder;
};

}  // namespace tower::layers
