#pragma once
// What the attention layers (Attention, AdditiveAttention, MultiHeadAttention) share: Keras' masking of attention
// scores before the softmax, and the causal mask, both with tower::ops on the scores' device.
#include <string>
#include <vector>

#include "api/core/tensor.h"
#include "api/engine/node.h"

namespace tower::layers::detail {

// [t, s]: 1 where s <= t (a query position attends to key positions up to its own), else 0; Keras'
// lower-triangular causal mask, for any t and s.
Tensor causal_mask(Index t, Index s, Device device);

// scores where keep is non-zero, scores - 1e9 elsewhere (Keras' masking before a softmax: a masked position gets
// no weight unless every position of its row is masked); keep broadcasts against scores. No gradient flows to
// keep.
Tensor mask_scores(const Tensor& scores, const Tensor& keep);

// Attention's and AdditiveAttention's inputs [query [N, T, dim], value [N, S, dim_v]] or [query, value,
// key [N, S, dim]]: throws ShapeError prefixed with `where` (the layer) unless they fit; returns the output shapes,
// [N, T, dim_v] and, with scores, [N, T, S].
std::vector<Shape> query_value_key_output_shapes(const std::string& where, const std::vector<Shape>& in,
                                                 bool scores);

// Keras' Attention._apply_scores: softmax over the last axis of scores [N, T, S] (masked causally with `causal`, and
// by the value's mask [N, S] when masks[1] is defined), times value [N, S, dim_v]; the output is then zeroed at the
// query's masked positions (masks[0], [N, T]) as Keras' Attention.call does. `dropout`, when defined, multiplies the
// weights after the softmax (a dropout mask [N, T, S], Keras' dropout in training), and the weights returned are
// the dropped ones, as Keras returns them. Returns the output and the weights.
std::vector<Tensor> apply_scores(Tensor scores, const Tensor& value, bool causal, bool return_weights,
                                 const std::vector<Tensor>& masks, const Tensor& dropout = Tensor());

// Keras' Attention.compute_mask: the output keeps the query's mask; the scores get none.
std::vector<SymbolicTensor> query_mask(const std::vector<SymbolicTensor>& masks, bool scores);

}  // namespace tower::layers::detail
