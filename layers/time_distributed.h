#pragma once
// TimeDistributed (keras.layers.TimeDistributed): applies one layer to every time step of a sequence, the same
// weights at every step. Input [batch, time, ...] (rank >= 3) -> [batch, time, ...the layer's output without its
// batch axis]. The steps are run as one batch: the input is viewed as [batch * time, ...] (the same memory), the
// layer's forward and backward run on that view, and its output is viewed back as [batch, time, ...].
//
// Weights are the wrapped layer's (weights(), trainable_weights() and set_trainable reach it); its config is
// {"layer": the wrapped layer's serialize()}, as Keras writes it. The wrapped layer's per-call state lives in this
// layer's node, so a TimeDistributed called twice keeps two states.
//
// Requires a wrapped layer that takes one input, gives one output, and computes each example independently of the
// batch size (every built-in layer; BatchNormalization in training then takes its statistics over batch * time
// examples, as Keras does). A model (a layer with a graph) cannot be wrapped. A mask of the input stays on the output
// (Keras' supports_masking); the wrapped layer does not see it.
// Construction throws std::invalid_argument for a missing layer, a model, or a layer taking several inputs; calling
// it throws ShapeError for an input of rank < 3 and passes on the wrapped layer's ShapeError for the steps' shape.
#include "api/engine/layer.h"
#include "api/engine/layer_options.h"
#include "api/engine/layer_registry.h"

namespace tower::layers {

struct TimeDistributedOptions {
  LayerPtr layer;  // required
  std::string name;
  template <class V>
  void visit(V&& v) {
    v("layer", layer);
    v("name", name);
  }
};

class TimeDistributedImpl final : public Layer {
 public:
  using Options = TimeDistributedOptions;
  // Keeps the mask of its input (Keras' supports_masking).
  bool supports_masking() const override { return true; }
  explicit TimeDistributedImpl(Options options);
  const Options& options() const { return options_; }
  const LayerPtr& layer() const { return options_.layer; }

  void build(const std::vector<Shape>& input_shapes) override;
  std::vector<Shape> compute_output_shape(const std::vector<Shape>& input_shapes) const override;
  void forward(const ForwardContext& ctx) override;
  void backward(const BackwardContext& ctx) override;
  bool backward_needs_inputs() const override { return options_.layer->backward_needs_inputs(); }
  bool backward_needs_outputs() const override { return options_.layer->backward_needs_outputs(); }
  bool has_training_behavior() const override { return options_.layer->has_training_behavior(); }
  bool softmax_output() const override { return options_.layer->softmax_output(); }

  std::vector<VariablePtr> weights() const override { return options_.layer->weights(); }
  std::vector<VariablePtr> trainable_weights() const override;
  std::vector<VariablePtr> non_trainable_weights() const override;
  void set_trainable(bool trainable) override;
  Config get_config() const override { return options_to_config(options_); }
  // Keras keeps the wrapped layer's variables in the group "layer".
  std::vector<KerasWeightGroup> keras_weight_groups() const override;

 private:
  Options options_;
};

class TimeDistributed : public LayerHolder<TimeDistributedImpl> {
 public:
  using LayerHolder::LayerHolder;
};

}  // namespace tower::layers
