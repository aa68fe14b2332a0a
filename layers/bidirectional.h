#pragma once
// Bidirectional (keras.layers.Bidirectional): a recurrent layer run over the sequence both ways, its two outputs
// merged. The forward layer is `layer` recreated from its config as "forward_<name>"; the backward layer is
// `backward_layer` if given, else `layer` recreated with go_backwards flipped, as "backward_<name>". With
// return_sequences the backward layer's sequence is reversed back, so step t of both outputs is the sequence's step t.
//
// merge_mode: "concat" (default; last axis), "sum", "ave", "mul", or none (null in a config) for two outputs, forward
// then backward. With return_state the final states follow: the forward layer's, then the backward layer's. Initial
// states, when given, are further inputs: the forward layer's, then the backward layer's (Keras splits its
// initial_state list in half).
//
// Masks: as Keras, both layers output zeros at masked steps when they return sequences (zero_output_for_mask is
// set to return_sequences).
//
// Weights: the forward layer's, then the backward layer's (Keras' order and .weights.h5 groups forward_layer/cell and
// backward_layer/cell). Construction throws std::invalid_argument for a missing layer, one that is not SimpleRNN,
// LSTM or GRU, a backward layer whose return_sequences or return_state differ from the forward's, or an unknown
// merge_mode.
#include <optional>
#include <string>

#include "api/engine/custom_layer.h"
#include "api/engine/layer_options.h"
#include "api/engine/layer_registry.h"
#include "layers/recurrent.h"

namespace tower::layers {

struct BidirectionalOptions {
  LayerPtr layer;  // required: SimpleRNN, LSTM or GRU
  std::optional<std::string> merge_mode = "concat";
  LayerPtr backward_layer;  // optional
  std::string name;
  template <class V> void visit(V&& v) {
    v("layer", layer);
    v("merge_mode", merge_mode);
    v("backward_layer", backward_layer);
    v("name", name);
  }
};

class BidirectionalImpl final : public CustomLayer {
 public:
  using Options = BidirectionalOptions;
  explicit BidirectionalImpl(Options options);
  const Options& options() const { return options_; }
  const std::shared_ptr<RecurrentLayer>& forward_layer() const { return forward_; }
  const std::shared_ptr<RecurrentLayer>& backward_layer() const { return backward_; }

  void build(const std::vector<Shape>& input_shapes) override;
  std::vector<Shape> compute_output_shape(const std::vector<Shape>& input_shapes) const override;
  std::vector<Tensor> call(const std::vector<Tensor>& inputs, bool training) override;
  // A mask reaches both layers (reversed for the backward one); the output sequences keep it.
  std::vector<Tensor> call_with_masks(const std::vector<Tensor>& inputs, const std::vector<Tensor>& masks,
                                      bool training) override;
  bool supports_masking() const override { return true; }
  bool uses_masks() const override { return true; }
  std::vector<SymbolicTensor> compute_mask(const std::vector<SymbolicTensor>& inputs,
                                           const std::vector<SymbolicTensor>& masks) const override;
  int num_inputs() const override { return -1; }

  std::vector<VariablePtr> weights() const override;
  std::vector<VariablePtr> trainable_weights() const override;
  std::vector<VariablePtr> non_trainable_weights() const override;
  void set_trainable(bool trainable) override;
  std::vector<KerasWeightGroup> keras_weight_groups() const override;
  Config get_config() const override { return options_to_config(options_); }

 private:
  // The two outputs merged per merge_mode (a list of one, or of both when there is no merge).
  std::vector<Tensor> merge(const Tensor& forward, const Tensor& backward) const;
  std::vector<Shape> merge_shapes(const Shape& forward) const;

  Options options_;
  std::shared_ptr<RecurrentLayer> forward_, backward_;
};

class Bidirectional : public LayerHolder<BidirectionalImpl> {
 public:
  using LayerHolder::LayerHolder;
};

}  // namespace tower::layers
