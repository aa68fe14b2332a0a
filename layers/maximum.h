#pragma once
// Maximum (keras.layers.Maximum): the elementwise maximum of the inputs, broadcast as Merge describes. The gradient goes, at each
// position, to the first input holding the output's value (TensorFlow's rule for ties). No weights.
#include "api/engine/layer_options.h"
#include "layers/merge.h"

namespace tower::layers {

struct MaximumOptions {
  std::string name;
  template <class V> void visit(V&& v) { v("name", name); }
};

class MaximumImpl final : public Merge {
 public:
  using Options = MaximumOptions;
  explicit MaximumImpl(Options options);
  const Options& options() const { return options_; }

  void forward(const ForwardContext& ctx) override;
  void backward(const BackwardContext& ctx) override { select_backward(ctx); }
  bool backward_needs_outputs() const override { return true; }
  Config get_config() const override { return options_to_config(options_); }

 private:
  Options options_;
};

class Maximum : public LayerHolder<MaximumImpl> {
 public:
  using LayerHolder::LayerHolder;
};

}  // namespace tower::layers
