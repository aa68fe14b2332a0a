#pragma once
// Reshape (keras.layers.Reshape): [batch, ...] -> [batch, target_shape...], keeping the row-major order.
// One entry of target_shape may be -1 and is inferred. No weights.
#include "api/engine/layer.h"
#include "api/engine/layer_options.h"

namespace tower::layers {

struct ReshapeOptions {
  std::vector<int> target_shape;  // without the batch axis
  std::string name;
  template <class V> void visit(V&& v) {
    v("target_shape", target_shape);
    v("name", name);
  }
};

class ReshapeImpl final : public Layer {
 public:
  using Options = ReshapeOptions;
  // Throws std::invalid_argument for more than one -1 or an entry that is 0 or below -1.
  explicit ReshapeImpl(Options options);
  const Options& options() const { return options_; }

  // Throws ShapeError naming the input and target shapes when their sizes differ.
  std::vector<Shape> compute_output_shape(const std::vector<Shape>& input_shapes) const override;
  void forward(const ForwardContext& ctx) override;
  void backward(const BackwardContext& ctx) override;
  bool backward_needs_inputs() const override { return false; }
  bool output_is_view_of_input(const std::vector<Shape>& input_shapes) const override {
    return input_shapes.size() == 1;
  }
  Config get_config() const override { return options_to_config(options_); }

 private:
  Options options_;
};

class Reshape : public LayerHolder<ReshapeImpl> {
 public:
  using LayerHolder::LayerHolder;
};

}  // namespace tower::layers
