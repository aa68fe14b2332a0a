#include "layers/attention.h"

#include <stdexcept>
#include <string>

#include "api/engine/layer_registry.h"
#include "api/ops/ops.h"
#include "layers/attention_utils.h"

namespace tower::layers {

AttentionImpl::AttentionImpl(Options options) : CustomLayer("Attention", options.name), options_(std::move(options)) {
  options_.name = name();
  if (options_.score_mode != "dot" && options_.score_mode != "concat")
    throw std::invalid_argument(where() + "score_mode must be \"dot\" or \"concat\", got \"" + options_.score_mode +
                                "\"");
  if (!(options_.dropout >= 0.f && options_.dropout < 1.f))
    throw std::invalid_argument(where() + "dropout must be in [0, 1), got " + std::to_string(options_.dropout));
}

std::vector<Shape> AttentionImpl::compute_output_shape(const std::vector<Shape>& in) const {
  return detail::query_value_key_output_shapes(where(), in, options_.return_attention_scores);
}

void AttentionImpl::build(const std::vector<Shape>&) {
  if (options_.use_scale) scale_ = add_weight("scale", Shape{}, "ones");
  if (options_.score_mode == "concat") concat_score_weight_ = add_weight("concat_score_weight", Shape{}, "ones");
}

// Keras' dropout of the attention weights: a mask in training, nothing otherwise.
Tensor AttentionImpl::weights_dropout(const Shape& shape, Device device, bool training) const {
  if (!training || options_.dropout == 0.f || !in_plan_forward()) return Tensor();
  return dropout_mask(shape, device, options_.dropout, options_.seed, 0);
}

std::vector<Tensor> AttentionImpl::call(const std::vector<Tensor>& inputs, bool training) {
  return call_with_masks(inputs, {}, training);
}

std::vector<SymbolicTensor> AttentionImpl::compute_mask(const std::vector<SymbolicTensor>&,
                                                   const std::vector<SymbolicTensor>& masks) const {
  return detail::query_mask(masks, options_.return_attention_scores);
}

std::vector<Tensor> AttentionImpl::call_with_masks(const std::vector<Tensor>& inputs, const std::vector<Tensor>& masks,
                                              bool training) {
  const Tensor& query = inputs[0];
  const Tensor& value = inputs[1];
  const Tensor& key = inputs.size() == 3 ? inputs[2] : value;
  Tensor scores;
  if (options_.score_mode == "dot") {
    scores = ops::matmul(query, ops::transpose(key, {0, 2, 1}));  // [N, T, S]
    if (scale_) scores = scores * scale_->value;
  } else {
    Tensor sum = ops::expand_dims(query, -2) + ops::expand_dims(key, -3);  // [N, T, S, dim]
    if (scale_) sum = scale_->value * sum;
    scores = concat_score_weight_->value * ops::sum(ops::tanh(sum), {-1});
  }
  return detail::apply_scores(scores, value, options_.use_causal_mask, options_.return_attention_scores, masks,
                              weights_dropout(scores.shape(), scores.device(), training));
}

TOWER_REGISTER_LAYER(AttentionImpl, "Attention");

}  // namespace tower::layers
