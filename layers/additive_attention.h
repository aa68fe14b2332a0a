#pragma once
// AdditiveAttention (keras.layers.AdditiveAttention): Bahdanau-style attention, as Keras computes it:
//   scores[n, t, s] = sum_d scale[d] * tanh(query[n, t, d] + key[n, s, d])   (scale 1 without use_scale)
//   out = softmax_S(scores, masked) value
// Inputs, a list: [query, value] or [query, value, key] (key defaults to value): query [N, T, dim], value
// [N, S, dim_v], key [N, S, dim]. Output [N, T, dim_v]. use_causal_mask and return_attention_scores are options, as
// for Attention (layers/attention.h).
// Weight, Keras' name: scale [dim] (glorot_uniform) with use_scale (the default).
// Keras' masks (Embedding's mask_zero, Masking): the value's mask masks the scores, the query's zeroes the output
// and stays on it. dropout drops the weights after the softmax in training, as Attention's (layers/attention.h).
#include <cstdint>
#include <optional>
#include <string>

#include "api/engine/custom_layer.h"
#include "api/engine/layer_options.h"

namespace tower::layers {

struct AdditiveAttentionOptions {
  bool use_scale = true;
  float dropout = 0.f;  // of the attention weights, in training
  std::optional<std::int64_t> seed;
  bool use_causal_mask = false;          // Keras' call argument
  bool return_attention_scores = false;  // Keras' call argument
  std::string name;
  template <class V> void visit(V&& v) {
    v("use_scale", use_scale);
    v("dropout", dropout);
    v("seed", seed);
    v("use_causal_mask", use_causal_mask);
    v("return_attention_scores", return_attention_scores);
    v("name", name);
  }
};

class AdditiveAttentionImpl final : public CustomLayer {
 public:
  using Options = AdditiveAttentionOptions;
  // Throws std::invalid_argument if dropout is outside [0, 1).
  explicit AdditiveAttentionImpl(Options options);
  const Options& options() const { return options_; }
  const VariablePtr& scale() const { return scale_; }  // null without use_scale

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
  VariablePtr scale_;
};

class AdditiveAttention : public LayerHolder<AdditiveAttentionImpl> {
 public:
  using LayerHolder::LayerHolder;
};

}  // namespace tower::layers
