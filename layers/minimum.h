#pragma once
// Minimum (keras.layers.Minimum): the elementwise minimum of the inputs, broadcast as Merge describes. The gradient goes, at each
// position, to the first input holding the output's value (TensorFlow's rule for ties). No weights.
#include "api/engine/layer_options.h"
#include "layers/merge.h"

namespace tower::layers {

struct MinimumOptions {
  std::string name;
  template <class V> void visit(V&& v) { v("name", name); }
};

class MinimumImpl final : public Merge {
 public:
  using Options = MinimumOptions;
  explicit MinimumImpl(Options options);
  const Options& options() const { return options_; }

  void forward(const ForwardContext& ctx) override;
  void backward(const BackwardContext& ctx) override { select_backward(ctx); }
  bool backward_needs_outputs() const override { return true; }
  Config get_config() const override { return options_to_config(options_); }

 private:
  Options options_;
};

class Minimum : public LayerHolder<MinimumImpl> {
 public:
  using LayerHolder::LayerHolder;
};

}  // namespace tower::layers
