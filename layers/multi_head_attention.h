#pragma once
// MultiHeadAttention (keras.layers.MultiHeadAttention): scaled dot-product attention over num_heads heads, each
// with its own projections, as Keras computes it:
//   q = query x Wq + bq        [N, T, heads, key_dim]          (Keras' EinsumDense "abc,cde->abde")
//   k = key x Wk + bk          [N, S, heads, key_dim]
//   v = value x Wv + bv        [N, S, heads, value_dim]
//   scores = softmax_S(q k^T / sqrt(key_dim), masked)          [N, heads, T, S]
//   out = (scores v) x Wo + bo [N, T, output_shape...]          (EinsumDense "abcd,cde->abe")
// The middle two lines are one fused op (ops::dot_product_attention, which never forms the scores) unless the scores
// are returned (return_attention_scores), the options say fused = false, or dropout applies (a training forward with
// dropout > 0: the scores after the softmax are dropped before they weigh v, a new mask each step, from `seed` when
// given; return_attention_scores returns them before the dropout, as Keras does); they are composed of ops then.
//
// Inputs, a list (Tower layers take no call arguments): [query, value] or [query, value, key] (key defaults to
// value), each [N, length, dim] (rank 3); query [N, T, Dq], value [N, S, Dv], key [N, S, Dk], so key and value may
// be of another length than the query. With use_attention_mask, one more input comes last: the attention mask
// [N, T, S] (Keras' attention_mask), 1 where query position t may attend to key position s and 0 where it may not
// (any non-zero value counts as 1). Masked scores become -1e9 before the softmax, so a query position with every key
// position masked gets even weights over all of them, as Keras' default path (keras.ops.dot_product_attention) gives
// it; with return_attention_scores Keras takes its masked Softmax, which also sets masked weights to 0 after it, and
// so does Tower: such a position then gets all-zero weights (its output is the output bias). Keras' call arguments
// use_causal_mask and return_attention_scores are
// options here, written in get_config (Keras has no such config keys; a Keras config without them reads as false):
//   use_causal_mask          position t attends only to positions s <= t (Keras' lower-triangular [T, S] mask),
//                            combined with the attention mask when both are given;
//   return_attention_scores  a second output, the scores after the softmax [N, heads, T, S].
// Output [N, T, Dq] by default; output_shape (an int or a list, Keras') makes it [N, T, output_shape...].
//
// Weights, Keras' names, layouts and order (query, key, value, attention_output; kernel then bias):
//   query/kernel [Dq, heads, key_dim]  query/bias [heads, key_dim]
//   key/kernel   [Dk, heads, key_dim]  key/bias   [heads, key_dim]
//   value/kernel [Dv, heads, value_dim] value/bias [heads, value_dim]
//   attention_output/kernel [heads, value_dim, output_shape...]  attention_output/bias [output_shape...]
// No biases without use_bias. Variable paths are "<layer>/query/kernel", ..., as Keras' layer.weights paths; a Keras
// .weights.h5 file keeps them in the sub-groups query_dense, key_dense, value_dense and output_dense of the layer's
// group, which the Keras weight-file loader maps (api/models/keras_weights.cpp).
//
// Not supported, refused at construction with std::invalid_argument naming the layer: attention_axes other than the
// sequence axis (null, 1 or -2).
// Keras' implicit masks (Embedding's mask_zero, Masking) join the attention mask as Keras' _compute_attention_mask
// joins them: the query's masks rows, the value's and the key's columns; the output keeps the query's mask. Weight
// constraints are not supported.
#include <cstdint>
#include <optional>
#include <vector>

#include "api/engine/custom_layer.h"
#include "api/engine/layer_options.h"

namespace tower::layers {

struct MultiHeadAttentionOptions {
  int num_heads = 0;
  int key_dim = 0;
  std::optional<int> value_dim;                    // null: key_dim
  float dropout = 0.f;                             // of the attention scores, in training
  bool use_bias = true;
  std::optional<std::vector<int>> output_shape;    // null: the query's last size
  std::optional<std::vector<int>> attention_axes;  // null, [1] or [-2]: the sequence axis
  initializers::Initializer kernel_initializer = "glorot_uniform";
  initializers::Initializer bias_initializer = "zeros";
  regularizers::Regularizer kernel_regularizer;
  regularizers::Regularizer bias_regularizer;
  bool use_causal_mask = false;          // Keras' call argument
  bool return_attention_scores = false;  // Keras' call argument
  bool use_attention_mask = false;       // the last input is an attention mask [N, T, S]
  std::optional<std::int64_t> seed;  // the dropout masks'
  std::string name;
  // C++ only, like LSTMOptions::fused (not in the config): false composes the attention of ops (einsum, softmax)
  // even where the fused op applies.
  bool fused = true;
  template <class V> void visit(V&& v) {
    v("num_heads", num_heads);
    v("key_dim", key_dim);
    v("value_dim", value_dim);
    v("dropout", dropout);
    v("use_bias", use_bias);
    v("output_shape", output_shape);
    v("attention_axes", attention_axes);
    v("kernel_initializer", kernel_initializer);
    v("bias_initializer", bias_initializer);
    v("kernel_regularizer", kernel_regularizer);
    v("bias_regularizer", bias_regularizer);
    v("use_causal_mask", use_causal_mask);
    v("return_attention_scores", return_attention_scores);
    v("use_attention_mask", use_attention_mask);
    v("seed", seed);
    v("name", name);
  }
};

class MultiHeadAttentionImpl final : public CustomLayer {
 public:
  using Options = MultiHeadAttentionOptions;
  // Throws std::invalid_argument if num_heads, key_dim or value_dim <= 0, an output_shape size <= 0, dropout outside
  // [0, 1),
  // or attention_axes is not the sequence axis.
  explicit MultiHeadAttentionImpl(Options options);
  const Options& options() const { return options_; }
  int value_dim() const { return options_.value_dim.value_or(options_.key_dim); }
  // Whether ops::dot_product_attention computes the attention (`fused`, and no return_attention_scores: the fused
  // op never forms the weights), in inference and in training without dropout.
  bool uses_fused_op() const { return options_.fused && !options_.return_attention_scores; }

  void build(const std::vector<Shape>& input_shapes) override;
  // Throws ShapeError for the wrong number of inputs, an input not of rank 3, batch sizes or key and value lengths
  // that differ, an attention mask not [N, T, S], or inputs of other last sizes than the layer was built for.
  std::vector<Shape> compute_output_shape(const std::vector<Shape>& input_shapes) const override;
  std::vector<Tensor> call(const std::vector<Tensor>& inputs, bool training) override;
  std::vector<Tensor> call_with_masks(const std::vector<Tensor>& inputs, const std::vector<Tensor>& masks,
                                      bool training) override;
  bool supports_masking() const override { return true; }
  bool uses_masks() const override { return true; }
  int num_inputs() const override { return -1; }
  Config get_config() const override { return options_to_config(options_); }
  // Keras keeps the EinsumDense sublayers in the groups named after the attributes holding them: query_dense,
  // key_dense, value_dense, output_dense.
  std::string keras_sublayer_group(const std::string& sublayer) const override {
    return sublayer == "attention_output" ? "output_dense" : sublayer + "_dense";
  }

 private:
  // The inputs of a call by role; key is value when not given, mask null without use_attention_mask.
  struct Roles {
    const Shape* query;
    const Shape* value;
    const Shape* key;
    const Shape* mask;
  };
  Roles roles(const std::vector<Shape>& shapes) const;
  std::vector<Index> out_dims(Index query_dim) const;
  // The composed path's weights [N, heads, T, S] of the projected q [N, T, heads, key_dim] and k [N, S, heads,
  // key_dim], masked by keep [N, 1, T, S] (undefined: none) and the causal mask.
  Tensor attention_weights(const Tensor& q, const Tensor& k, const Tensor& keep) const;

  Options options_;
  VariablePtr query_kernel_, query_bias_, key_kernel_, key_bias_, value_kernel_, value_bias_, output_kernel_,
      output_bias_;
};

class MultiHeadAttention : public LayerHolder<MultiHeadAttentionImpl> {
 public:
  using LayerHolder::LayerHolder;
};

}  // namespace tower::layers
