#pragma once
// Permute (keras.layers.Permute): reorders the non-batch axes. `dims` is a 1-based permutation of them, as in
// Keras: Permute({.dims = {2, 1}}) turns [batch, a, b] into [batch, b, a]. No weights.
#include "api/engine/layer.h"
#include "api/engine/layer_options.h"

namespace tower::layers {

struct PermuteOptions {
  std::vector<int> dims;
  std::string name;
  template <class V> void visit(V&& v) {
    v("dims", dims);
    v("name", name);
  }
};

class PermuteImpl final : public Layer {
 public:
  using Options = PermuteOptions;
  // Throws std::invalid_argument unless dims is a permutation of 1..len(dims) (and len(dims) <= 7).
  explicit PermuteImpl(Options options);
  const Options& options() const { return options_; }

  // Throws ShapeError unless the input has len(dims) + 1 axes.
  std::vector<Shape> compute_output_shape(const std::vector<Shape>& input_shapes) const override;
  void forward(const ForwardContext& ctx) override;
  void backward(const BackwardContext& ctx) override;
  bool backward_needs_inputs() const override { return false; }
  Config get_config() const override { return options_to_config(options_); }

 private:
  Options options_;
  std::vector<int> perm_, inverse_;  // over all axes, batch included
};

class Permute : public LayerHolder<PermuteImpl> {
 public:
  using LayerHolder::LayerHolder;
};

}  // namespace tower::layers
