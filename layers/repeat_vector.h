#pragma once
// RepeatVector (keras.layers.RepeatVector): repeats each example's vector n times, [batch, features] ->
// [batch, n, features]. No weights; the gradient sums over the n copies. Runs on the backend's strided copy
// (reading each vector n times) and broadcast reduction.
#include "api/engine/layer.h"
#include "api/engine/layer_options.h"

namespace tower::layers {

struct RepeatVectorOptions {
  int n = 0;  // required
  std::string name;
  template <class V>
  void visit(V&& v) {
    v("n", n);
    v("name", name);
  }
};

class RepeatVectorImpl final : public Layer {
 public:
  using Options = RepeatVectorOptions;
  // Throws std::invalid_argument for n <= 0.
  explicit RepeatVectorImpl(Options options);
  const Options& options() const { return options_; }

  // Throws ShapeError unless the input has rank 2.
  std::vector<Shape> compute_output_shape(const std::vector<Shape>& input_shapes) const override;
  void forward(const ForwardContext& ctx) override;
  void backward(const BackwardContext& ctx) override;
  bool backward_needs_inputs() const override { return false; }
  Config get_config() const override { return options_to_config(options_); }

 private:
  Options options_;
};

class RepeatVector : public LayerHolder<RepeatVectorImpl> {
 public:
  using LayerHolder::LayerHolder;
};

}  // namespace tower::layers
