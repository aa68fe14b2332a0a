#pragma once
// Concatenate (keras.layers.Concatenate): joins two or more inputs along `axis` (negative counts from the
// end; not the batch axis). All inputs have the same rank and the same dimensions except along `axis`; the
// output's `axis` is the sum of theirs. No weights.
#include "api/engine/layer_options.h"
#include "layers/merge.h"

namespace tower::layers {

struct ConcatenateOptions {
  int axis = -1;
  std::string name;
  template <class V> void visit(V&& v) {
    v("axis", axis);
    v("name", name);
  }
};

class ConcatenateImpl final : public Merge {
 public:
  using Options = ConcatenateOptions;
  explicit ConcatenateImpl(Options options);
  const Options& options() const { return options_; }

  // Throws ShapeError, naming the axis and every input shape, when the shapes do not fit together.
  std::vector<Shape> compute_output_shape(const std::vector<Shape>& input_shapes) const override;
  void forward(const ForwardContext& ctx) override;
  void backward(const BackwardContext& ctx) override;
  bool backward_needs_inputs() const override { return false; }
  // Keras' Concatenate.compute_mask: each input's mask (all ones without one) spread over its last axis, the inputs'
  // concatenated along the axis, kept where any position of the last axis is kept.
  std::vector<SymbolicTensor> compute_mask(const std::vector<SymbolicTensor>& inputs,
                                           const std::vector<SymbolicTensor>& masks) const override;
  Config get_config() const override { return options_to_config(options_); }

 private:
  Options options_;
};

class Concatenate : public LayerHolder<ConcatenateImpl> {
 public:
  using LayerHolder::LayerHolder;
};

}  // namespace tower::layers
