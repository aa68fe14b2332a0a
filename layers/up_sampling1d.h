#pragma once
// UpSampling1D (keras.layers.UpSampling1D): repeats each step `size` times, [batch, steps, features] ->
// [batch, steps * size, features]. No weights. Runs on the backend's 2-D nearest-neighbour upsampling over a view
// of the same memory.
#include "api/engine/layer.h"
#include "api/engine/layer_options.h"

namespace tower::layers {

struct UpSampling1DOptions {
  int size = 2;
  std::string name;
  template <class V>
  void visit(V&& v) {
    v("size", size);
    v("name", name);
  }
};

class UpSampling1DImpl final : public Layer {
 public:
  using Options = UpSampling1DOptions;
  // Throws std::invalid_argument for a non-positive size.
  explicit UpSampling1DImpl(Options options);
  const Options& options() const { return options_; }

  // Throws ShapeError unless the input has rank 3.
  std::vector<Shape> compute_output_shape(const std::vector<Shape>& input_shapes) const override;
  void forward(const ForwardContext& ctx) override;
  void backward(const BackwardContext& ctx) override;
  bool backward_needs_inputs() const override { return false; }
  Config get_config() const override { return options_to_config(options_); }

 private:
  Options options_;
};

class UpSampling1D : public LayerHolder<UpSampling1DImpl> {
 public:
  using LayerHolder::LayerHolder;
};

}  // namespace tower::layers
