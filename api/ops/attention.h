#pragma once
// keras.ops.dot_product_attention as one differentiable op with fused kernels (Backend::attention_forward /
// attention_backward): softmax(scale * query key^T + bias, masked) value per batch and head, computed blockwise with
// an online softmax (FlashAttention-2), so neither direction holds the [Tq, Tk] scores of a head at once. The layers'
// composed attention (einsum, softmax) is what it is tested against.
//
//   Tensor y = ops::dot_product_attention(q, k, v);                          // [B, Tq, N, Hv]
//   Tensor z = ops::dot_product_attention(q, k, v, Tensor(), keep, std::nullopt, true);   // masked and causal
//
// query [B, Tq, N, H], key [B, Tk, N, H], value [B, Tk, N, Hv] (Keras requires Hv = H; any Hv is accepted, as
// MultiHeadAttention's value_dim needs). bias (float32) and mask are optional (an undefined Tensor: none), each
// broadcastable to [B, N, Tq, Tk] by NumPy's rules; bias is added to the scaled logits, mask keeps the positions where
// it is non-zero (float32, int32, int64 or uint8; Keras' boolean mask). scale defaults to 1 / sqrt(H). is_causal
// masks key j for query i when j > i (Keras' and torch's lower-triangular mask, aligned at the top left when
// Tq != Tk). A query row with every key masked spreads its weights evenly over all Tk keys, as
// keras.ops.dot_product_attention does (it masks with a large finite negative): its output is the mean of the values,
// and only the value gets a gradient through it (torch.nn.functional.scaled_dot_product_attention gives 0 there).
//
// Gradients flow to query, key, value and bias (the bias' gradient is formed densely over [B, N, Tq, Tk] and then
// summed onto its shape); the mask gets none.
//
// Errors (std::invalid_argument, naming the op and the shapes): operands not rank 4, not float32 (the mask excepted)
// or not on one device; batch, head or length sizes that differ; H or Hv of 0; a bias or mask that does not
// broadcast to [B, N, Tq, Tk].
#include <optional>

#include "api/core/tensor.h"

namespace tower::ops {

Tensor dot_product_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                             const Tensor& bias = Tensor(), const Tensor& mask = Tensor(),
                             std::optional<float> scale = std::nullopt, bool is_causal = false);

}  // namespace tower::ops
