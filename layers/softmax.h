#pragma once
// Softmax (keras.layers.Softmax): y = exp(x) / sum(exp(x)) along `axis` (negative counts from the end).
// Any input of rank >= 1 with `axis` in range; the output has the input's shape. No weights.
#include "api/engine/layer.h"
#include "api/engine/layer_options.h"

namespace tower::layers {

struct SoftmaxOptions {
  int axis = -1;
  std::string name;
  template <class V> void visit(V&& v) {
    v("axis", axis);
    v("name", name);
  }
};

class SoftmaxImpl final : public Layer {
 public:
  using Options = SoftmaxOptions;
  // Keeps the mask of its input (Keras' supports_masking).
  bool supports_masking() const override { return true; }
  explicit SoftmaxImpl(Options options);
  const Options& options() const { return options_; }

  // Throws ShapeError when `axis` is outside the input's rank.
  std::vector<Shape> compute_output_shape(const std::vector<Shape>& input_shapes) const override;
  void forward(const ForwardContext& ctx) override;
  void backward(const BackwardContext& ctx) override;
  bool backward_needs_inputs() const override { return false; }
  bool backward_needs_outputs() const override { return true; }
  // Over the last axis, a loss may fuse the softmax into its gradient (BackwardContext::output_grad_is_logits).
  bool softmax_output() const override { return options_.axis == -1; }
  Config get_config() const override { return options_to_config(options_); }

 private:
  // The tensor as [outer, axis, inner] around the softmax axis.
  struct Extents {
    Index outer = 1, axis = 1, inner = 1;
  };
  Extents extents(const Shape& shape) const;

  Options options_;
};

class Softmax : public LayerHolder<SoftmaxImpl> {
 public:
  using LayerHolder::LayerHolder;
};

}  // namespace tower::layers
