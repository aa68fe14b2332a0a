#include "layers/additive_attention.h"

#include <stdexcept>
#include <string>

#include "api/engine/layer_registry.h"
#include "api/ops/ops.h"
#include "layers/attention_utils.h"

namespace tower::layers {

AdditiveAttentionImpl::AdditiveAttentionImpl(Options options)
    : CustomLayer("AdditiveAttention", options.name), options_(std::move(options)) {
  options_.name = name();
  if (!(options_.dropout >= 0.f && options_.dropout < 1.f))
    throw std::invalid_argument(where() + "dropout must be in [0, 1), got " + std::to_string(options_.dropout));
}

std::vector<Shape> AdditiveAttentionImpl::compute_output_shape(const std::vector<Shape>& in) const {
  return detail::query_value_key_output_shapes(where(), in, options_.return_attention_scores);
}

void AdditiveAttentionImpl::build(const std::vector<Shape>& in) {
  if (in.empty() || in[0].rank() < 1 || in[0][-1] <= 0)
    shape_error("needs a query of known last size, got " + (in.empty() ? std::string("no input") : in[0].to_string()));
  if (options_.use_scale) scale_ = add_weight("scale", Shape{in[0][-1]}, "glorot_uniform");
}

// Keras' dropout of the attention weights: a mask in training, nothing otherwise.
Tensor AdditiveAttentionImpl::weights_dropout(const Shape& shape, Device device, bool training) const {
  if (!training || options_.dropout == 0.f || !in_plan_forward()) return Tensor();
  return dropout_mask(shape, device, options_.dropout, options_.seed, 0);
}

std::vector<Tensor> AdditiveAttentionImpl::call(const std::vector<Tensor>& inputs, bool training) {
  return call_with_masks(inputs, {}, training);
}

std::vector<SymbolicTensor> AdditiveAttentionImpl::compute_mask(const std::vector<SymbolicTensor>&,
                                                   const std::vector<SymbolicTensor>& masks) const {
  return detail::query_mask(masks, options_.return_attention_scores);
}

std::vector<Tensor> AdditiveAttentionImpl::call_with_masks(const std::vector<Tensor>& inputs, const std::vector<Tensor>& masks,
                                              bool training) {
  const Tensor& query = inputs[0];
  const Tensor& value = inputs[1];
  const Tensor& key = inputs.size() == 3 ? inputs[2] : value;
  Tensor terms = ops::tanh(ops::expand_dims(query, -2) + ops::expand_dims(key, -3));  // [N, T, S, dim]
  if (scale_) terms = scale_->value * terms;
  const Tensor scores = ops::sum(terms, {-1});  // [N, T, S]
  return detail::apply_scores(scores, value, options_.use_causal_mask, options_.return_attention_scores, masks,
                              weights_dropout(scores.shape(), scores.device(), training));
}

TOWER_REGISTER_LAYER(AdditiveAttentionImpl, "AdditiveAttention");

}  // namespace tower::layers
