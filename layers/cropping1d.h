#pragma once
// Cropping1D (keras.layers.Cropping1D): removes steps at the start and end of a sequence,
// [batch, steps, features] -> [batch, steps - start - end, features]. `cropping`: an int (both ends) or
// (start, end); Keras' default (1, 1). No weights. Runs on the backend's 2-D padding (by minus the crop) over a
// view of the same memory.
#include "api/engine/layer.h"
#include "api/engine/layer_options.h"

namespace tower::layers {

struct Cropping1DOptions {
  Padding1D cropping = 1;
  std::string name;
  template <class V>
  void visit(V&& v) {
    v("cropping", cropping);
    v("name", name);
  }
};

class Cropping1DImpl final : public Layer {
 public:
  using Options = Cropping1DOptions;
  // Throws std::invalid_argument for negative cropping.
  explicit Cropping1DImpl(Options options);
  const Options& options() const { return options_; }

  // Throws ShapeError unless the input has rank 3 and keeps at least one step.
  std::vector<Shape> compute_output_shape(const std::vector<Shape>& input_shapes) const override;
  void forward(const ForwardContext& ctx) override;
  void backward(const BackwardContext& ctx) override;
  bool backward_needs_inputs() const override { return false; }
  Config get_config() const override { return options_to_config(options_); }

 private:
  Options options_;
};

class Cropping1D : public LayerHolder<Cropping1DImpl> {
 public:
  using LayerHolder::LayerHolder;
};

}  // namespace tower::layers
