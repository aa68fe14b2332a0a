#include "layers/multi_head_attention.h"

#include <cmath>
#include <stdexcept>
#include <string>

#include "api/engine/layer_registry.h"
#include "api/ops/attention.h"
#include "api/ops/einsum.h"
#include "api/ops/ops.h"
#include "layers/attention_utils.h"

namespace tower::layers {

MultiHeadAttentionImpl::MultiHeadAttentionImpl(Options options)
    : CustomLayer("MultiHeadAttention", options.name), options_(std::move(options)) {
  options_.name = name();
  const auto positive = [&](const char* key, int v) {
    if (v <= 0) throw std::invalid_argument(where() + key + " must be positive, got " + std::to_string(v));
  };
  positive("num_heads", options_.num_heads);
  positive("key_dim", options_.key_dim);
  if (options_.value_dim) positive("value_dim", *options_.value_dim);
  if (options_.output_shape) {
    if (options_.output_shape->empty()) throw std::invalid_argument(where() + "output_shape is an empty list");
    for (int d : *options_.output_shape) positive("each output_shape size", d);
  }
  if (!(options_.dropout >= 0.f && options_.dropout < 1.f))
    throw std::invalid_argument(where() + "dropout must be in [0, 1), got " + std::to_string(options_.dropout));
  if (options_.attention_axes) {
    const std::vector<int>& axes = *options_.attention_axes;
    if (axes.size() != 1 || (axes[0] != 1 && axes[0] != -2))
      throw std::invalid_argument(where() + "attention_axes other than the sequence axis (null, 1 or -2) are not "
                                            "supported; inputs are [N, length, dim]");
  }
}

MultiHeadAttentionImpl::Roles MultiHeadAttentionImpl::roles(const std::vector<Shape>& in) const {
  const int mask = options_.use_attention_mask ? 1 : 0;
  const int n = static_cast<int>(in.size());
  if (n != 2 + mask && n != 3 + mask)
    shape_error("takes [query, value] or [query, value, key]" +
                std::string(mask ? " followed by the attention mask" : "") + ", got " + std::to_string(n) +
                " input(s)");
  const bool has_key = n == 3 + mask;
  return {&in[0], &in[1], has_key ? &in[2] : &in[1], mask ? &in[static_cast<std::size_t>(n - 1)] : nullptr};
}

std::vector<Index> MultiHeadAttentionImpl::out_dims(Index query_dim) const {
  if (!options_.output_shape) return {query_dim};
  return std::vector<Index>(options_.output_shape->begin(), options_.output_shape->end());
}

std::vector<Shape> MultiHeadAttentionImpl::compute_output_shape(const std::vector<Shape>& in) const {
  const Roles r = roles(in);
  const auto rank3 = [&](const char* role, const Shape& s) {
    if (s.rank() != 3) shape_error(std::string(role) + " must be [N, length, dim] (rank 3), got shape " + s.to_string());
    if (s[2] <= 0) shape_error(std::string(role) + " shape " + s.to_string() + " must have a known last size");
  };
  rank3("query", *r.query);
  rank3("value", *r.value);
  rank3("key", *r.key);
  const auto same = [](Index a, Index b) { return a < 0 || b < 0 || a == b; };
  const std::string shapes = "query " + r.query->to_string() + ", value " + r.value->to_string() + ", key " +
                             r.key->to_string();
  if (!same((*r.query)[0], (*r.value)[0]) || !same((*r.query)[0], (*r.key)[0]))
    shape_error("batch sizes differ: " + shapes);
  if (!same((*r.value)[1], (*r.key)[1])) shape_error("key and value lengths differ: " + shapes);
  const Index t = (*r.query)[1], s = (*r.value)[1];
  if (r.mask) {
    const Shape& m = *r.mask;
    if (m.rank() != 3 || !same(m[0], (*r.query)[0]) || !same(m[1], t) || !same(m[2], s))
      shape_error("the attention mask must be [N, T, S] = " + Shape{(*r.query)[0], t, s}.to_string() + " for " +
                  shapes + ", got shape " + m.to_string());
  }
  if (query_kernel_) {
    const auto built_for = [&](const char* role, const Shape& s, const VariablePtr& kernel) {
      if (s[2] != kernel->value.dim(0))
        shape_error("was built for a " + std::string(role) + " of last size " + std::to_string(kernel->value.dim(0)) +
                    ", got shape " + s.to_string());
    };
    built_for("query", *r.query, query_kernel_);
    built_for("key", *r.key, key_kernel_);
    built_for("value", *r.value, value_kernel_);
  }
  std::vector<Index> dims{(*r.query)[0], t};
  for (Index d : out_dims((*r.query)[2])) dims.push_back(d);
  std::vector<Shape> out{Shape(dims)};
  if (options_.return_attention_scores) out.push_back(Shape{(*r.query)[0], options_.num_heads, t, s});
  return out;
}

void MultiHeadAttentionImpl::build(const std::vector<Shape>& in) {
  const Roles r = roles(in);
  const Index heads = options_.num_heads, kd = options_.key_dim, vd = value_dim();
  const auto dense = [&](const std::string& sub, Shape kernel, Shape bias, VariablePtr& k, VariablePtr& b) {
    k = add_weight(sub + "/kernel", kernel, options_.kernel_initializer, true, options_.kernel_regularizer);
    if (options_.use_bias)
      b = add_weight(sub + "/bias", bias, options_.bias_initializer, true, options_.bias_regularizer);
  };
  dense("query", {(*r.query)[2], heads, kd}, {heads, kd}, query_kernel_, query_bias_);
  dense("key", {(*r.key)[2], heads, kd}, {heads, kd}, key_kernel_, key_bias_);
  dense("value", {(*r.value)[2], heads, vd}, {heads, vd}, value_kernel_, value_bias_);
  const std::vector<Index> out = out_dims((*r.query)[2]);
  std::vector<Index> kernel{heads, vd};
  kernel.insert(kernel.end(), out.begin(), out.end());
  dense("attention_output", Shape(kernel), Shape(out), output_kernel_, output_bias_);
}

Tensor MultiHeadAttentionImpl::attention_weights(const Tensor& q, const Tensor& k, const Tensor& keep) const {
  // The query scaled before the product, as Keras scales it.
  const Tensor scaled = q * (1.f / std::sqrt(static_cast<float>(options_.key_dim)));
  const Tensor scores = ops::einsum("abcd,aecd->acbe", scaled, k);  // [N, heads, T, S]
  Tensor allowed = keep;
  if (options_.use_causal_mask) {
    const Tensor causal = detail::causal_mask(q.dim(1), k.dim(1), q.device());
    allowed = allowed.defined() ? ops::multiply(ops::not_equal(allowed, ops::scalar(0.f, q.device())), causal) : causal;
  }
  if (!allowed.defined()) return ops::softmax(scores, -1);
  // Masked scores are set to -1e9 before the softmax. A query position with every key position masked then gets even
  // weights over all of them, as Keras' default path (keras.ops.dot_product_attention) gives it; with
  // return_attention_scores Keras takes its masked Softmax instead, which sets masked weights to 0 after it, so such a
  // position gets no weights at all.
  const Tensor weights = ops::softmax(ops::where(allowed, scores, ops::scalar(-1e9f, scores.device())), -1);
  if (!options_.return_attention_scores) return weights;
  return ops::where(allowed, weights, ops::scalar(0.f, scores.device()));
}

std::vector<Tensor> MultiHeadAttentionImpl::call(const std::vector<Tensor>& inputs, bool training) {
  return call_with_masks(inputs, {}, training);
}

std::vector<Tensor> MultiHeadAttentionImpl::call_with_masks(const std::vector<Tensor>& inputs,
                                                            const std::vector<Tensor>& masks, bool training) {
  const int mask = options_.use_attention_mask ? 1 : 0;
  const bool has_key = static_cast<int>(inputs.size()) == 3 + mask;
  const Tensor& query = inputs[0];
  const Tensor& value = inputs[1];
  const Tensor& key = has_key ? inputs[2] : value;
  // Keras' EinsumDense "abc,cde->abde": [N, L, D] x [D, heads, dim] -> [N, L, heads, dim], plus the bias.
  const auto project = [](const Tensor& x, const VariablePtr& kernel, const VariablePtr& bias) {
    Tensor y = ops::einsum("abc,cde->abde", x, kernel->value);
    return bias ? y + bias->value : y;
  };
  const Tensor q = project(query, query_kernel_, query_bias_);
  const Tensor k = project(key, key_kernel_, key_bias_);
  const Tensor v = project(value, value_kernel_, value_bias_);
  Tensor keep = mask ? ops::expand_dims(inputs.back(), 1) : Tensor();  // [N, 1, T, S]
  // Keras' _compute_attention_mask: the query's mask by rows, the value's and the key's by columns.
  const auto implicit = [&](std::size_t input, int axis) {
    if (input >= masks.size() || !masks[input].defined()) return;
    const Tensor m = ops::expand_dims(ops::expand_dims(masks[input], 1), axis);  // [N, 1, T, 1] or [N, 1, 1, S]
    keep = keep.defined() ? ops::multiply(ops::not_equal(keep, ops::scalar(0.f, query.device())), m) : m;
  };
  implicit(0, 3);
  implicit(1, 2);
  if (has_key) implicit(2, 2);
  Tensor context, weights;  // [N, T, heads, value_dim]; the scores after the softmax [N, heads, T, S]
  const bool dropout = training && options_.dropout > 0.f && in_plan_forward();
  if (uses_fused_op() && !dropout) {
    context = ops::dot_product_attention(q, k, v, Tensor(), keep, 1.f / std::sqrt(static_cast<float>(options_.key_dim)),
                                         options_.use_causal_mask);
  } else {
    weights = attention_weights(q, k, keep);
    const Tensor dropped =
        dropout ? weights * dropout_mask(weights.shape(), weights.device(), options_.dropout, options_.seed, 0) : weights;
    context = ops::einsum("acbe,aecd->abcd", dropped, v);
  }
  // Keras' EinsumDense "abcd,cde->abe" over the output's sizes flattened into one.
  const Index heads = options_.num_heads, vd = value_dim();
  const Index out_size = output_kernel_->value.numel() / (heads * vd);
  Tensor out = ops::einsum("abcd,cde->abe", context, ops::reshape(output_kernel_->value, Shape{heads, vd, out_size}));
  if (output_bias_) out = out + ops::reshape(output_bias_->value, Shape{out_size});
  std::vector<Index> dims{query.dim(0), query.dim(1)};
  for (Index d : out_dims(query.dim(2))) dims.push_back(d);
  out = ops::reshape(out, Shape(dims));
  if (options_.return_attention_scores) return {out, weights};
  return {out};
}

TOWER_REGISTER_LAYER(MultiHeadAttentionImpl, "MultiHeadAttention");

}  // namespace tower::layers
