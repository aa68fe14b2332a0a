#pragma once
// Rescaling (keras.layers.Rescaling): y = x * scale + offset elementwise (e.g. scale 1/255 for pixels, or
// scale 1/127.5 and offset -1 for [-1, 1]). Any input shape; the output has the input's shape. No weights.
#include "api/engine/layer.h"
#include "api/engine/layer_options.h"

namespace tower::layers {

struct RescalingOptions {
  float scale = 1.f;
  float offset = 0.f;
  std::string name;
  template <class V> void visit(V&& v) {
    v("scale", scale);
    v("offset", offset);
    v("name", name);
  }
};

class RescalingImpl final : public Layer {
 public:
  using Options = RescalingOptions;
  // Keeps the mask of its input (Keras' supports_masking).
  bool supports_masking() const override { return true; }
  explicit RescalingImpl(Options options);
  const Options& options() const { return options_; }

  std::vector<Shape> compute_output_shape(const std::vector<Shape>& input_shapes) const override;
  void forward(const ForwardContext& ctx) override;
  void backward(const BackwardContext& ctx) override;
  bool backward_needs_inputs() const override { return false; }
  Config get_config() const override { return options_to_config(options_); }

 private:
  Options options_;
};

class Rescaling : public LayerHolder<RescalingImpl> {
 public:
  using LayerHolder::LayerHolder;
};

}  // namespace tower::layers
