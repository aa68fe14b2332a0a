#pragma once
// Subtract (keras.layers.Subtract): inputs[0] - inputs[1].
// Exactly two inputs, broadcast as Merge describes (Keras' rules); the output has the broadcast shape. No weights.
#include "api/engine/layer_options.h"
#include "layers/merge.h"

namespace tower::layers {

struct SubtractOptions {
  std::string name;
  template <class V> void visit(V&& v) { v("name", name); }
};

class SubtractImpl final : public Merge {
 public:
  using Options = SubtractOptions;
  explicit SubtractImpl(Options options);
  const Options& options() const { return options_; }
  // Throws ShapeError unless called on exactly two inputs of the same shape.
  std::vector<Shape> compute_output_shape(const std::vector<Shape>& input_shapes) const override;

  void forward(const ForwardContext& ctx) override;
  void backward(const BackwardContext& ctx) override;
  bool backward_needs_inputs() const override { return false; }
  Config get_config() const override { return options_to_config(options_); }

 private:
  Options options_;
};

class Subtract : public LayerHolder<SubtractImpl> {
 public:
  using LayerHolder::LayerHolder;
};

}  // namespace tower::layers
