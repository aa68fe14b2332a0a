#pragma once
// Attention (keras.layers.Attention): dot-product attention (Luong style), as Keras computes it:
//   scores = query key^T (times the weight `scale` with use_scale)                     score_mode "dot"
//   scores = concat_score_weight * sum(tanh(scale * (query_t + key_s)), last axis)     score_mode "concat"
//            (without use_scale: tanh(query_t + key_s))
//   out = softmax_S(scores, masked) value
// Inputs, a list: [query, value] or [query, value, key] (key defaults to value): query [N, T, dim], value
// [N, S, dim_v], key [N, S, dim]. Output [N, T, dim_v]. Keras' call arguments are options here, written in
// get_config (a Keras config without them reads as false): use_causal_mask (position t attends only to s <= t)
// and return_attention_scores (a second output, the weights after the softmax [N, T, S]).
// Weights, Keras' names: scale [] (a scalar, ones) with use_scale; concat_score_weight [] (ones) in "concat" mode.
// dropout (in training): the weights after the softmax are dropped (a new mask each step, from `seed` when given),
// and return_attention_scores returns the dropped weights, as Keras does. Keras' masks (Embedding's mask_zero, Masking): the value's mask masks the scores, the query's zeroes the
// output and stays on it.
#include <cstdint>
#include <optional>
#include <string>

#include "api/engine/custom_layer.h"
#include "api/engine/layer_options.h"

namespace tower::layers {

struct AttentionOptions {
  bool use_scale = false;
  std::string score_mode = "dot";  // "dot" or "concat"
  float dropout = 0.f;             // of the attention weights, in training
  std::optional<std::int64_t> seed;
  bool use_causal_mask = false;          // Keras' call argument
  bool return_attention_scores = false;  // Keras' call argument
  std::string name;
  template <class V> void visit(V&& v) {
    v("use_scale", use_scale);
    v("score_mode", score_mode);
    v("dropout", dropout);
    v("seed", seed);
    v("use_causal_mask", use_causal_mask);
    v("return_attention_scores", return_attention_scores);
    v("name", name);
  }
};

class AttentionImpl final : public CustomLayer {
 public:
  using Options = AttentionOptions;
  // Throws std::invalid_argument for a score_mode other than "dot" or "concat", or dropout outside [0, 1).
  explicit AttentionImpl(Options options);
  const Options& options() const { return options_; }
  const VariablePtr& scale() const { return scale_; }                              // null without use_scale
  const VariablePtr& concat_score_weight() const { return concat_score_weight_; }  // null in "dot" mode

  void build(const std::vector<Shape>& input_shapes) override;
  // Throws ShapeError for other than 2 or 3 inputs, an input not of rank 3, or sizes that do not fit together.
  std::vector<Shape> compute_output_shape(const std::vector<Shape>& input_shapes) const override;
  std::vector<Tensor> call(const std::vector<Tensor>& inputs, bool training) override;
  // Keras' masks: the value's masks the scores, the query's zeroes the output (which keeps it).
  std::vector<Tensor> call_with_masks(const std::vector<Tensor>& inputs, const std::vector<Tensor>& masks,
                                      bool training) override;
  bool supports_masking() const override { return true; }
  bool uses_masks() const override { return true; }
  std::vector<SymbolicTensor> compute_mask(const std::vector<SymbolicTensor>& inputs,
                                           const std::vector<SymbolicTensor>& masks) const override;
  int num_inputs() const override { return -1; }
  Config get_config() const override { return options_to_config(options_); }

 private:
  Tensor weights_dropout(const Shape& shape, Device device, bool training) const;

  Options options_;
  VariablePtr scale_, concat_score_weight_;
};

class Attention : public LayerHolder<AttentionImpl> {
 public:
  using LayerHolder::LayerHolder;
};

}  // namespace tower::layers
