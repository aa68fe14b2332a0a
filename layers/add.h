#pragma once
// Add (keras.layers.Add): the elementwise sum of the inputs.
// Two or more inputs, broadcast as Merge describes (Keras' rules); the output has the broadcast shape. No weights.
#include "api/engine/layer_options.h"
#include "layers/merge.h"

namespace tower::layers {

struct AddOptions {
  std::string name;
  template <class V> void visit(V&& v) { v("name", name); }
};

class AddImpl final : public Merge {
 public:
  using Options = AddOptions;
  explicit AddImpl(Options options);
  const Options& options() const { return options_; }

  void forward(const ForwardContext& ctx) override;
  void backward(const BackwardContext& ctx) override;
  bool backward_needs_inputs() const override { return false; }
  Config get_config() const override { return options_to_config(options_); }

 private:
  Options options_;
};

class Add : public LayerHolder<AddImpl> {
 public:
  using LayerHolder::LayerHolder;
};

}  // namespace tower::layers
