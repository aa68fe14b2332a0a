#pragma once
// Multiply (keras.layers.Multiply): the elementwise product of the inputs.
// Two or more inputs, broadcast as Merge describes (Keras' rules); the output has the broadcast shape. No weights.
#include "api/engine/layer_options.h"
#include "layers/merge.h"

namespace tower::layers {

struct MultiplyOptions {
  std::string name;
  template <class V> void visit(V&& v) { v("name", name); }
};

class MultiplyImpl final : public Merge {
 public:
  using Options = MultiplyOptions;
  explicit MultiplyImpl(Options options);
  const Options& options() const { return options_; }

  void forward(const ForwardContext& ctx) override;
  void backward(const BackwardContext& ctx) override;
  bool backward_needs_inputs() const override { return true; }
  Config get_config() const override { return options_to_config(options_); }

 private:
  Options options_;
};

class Multiply : public LayerHolder<MultiplyImpl> {
 public:
  using LayerHolder::LayerHolder;
};

}  // namespace tower::layers
