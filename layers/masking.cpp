#include "layers/masking.h"

#include "api/engine/layer_registry.h"
#include "api/ops/ops.h"

namespace tower::layers {

namespace {
// 1 where some feature of the last axis differs from `value`, else 0; keepdims keeps that axis as 1.
Tensor kept_steps(const Tensor& x, float value, bool keepdims) {
  return ops::max(ops::not_equal(x, ops::scalar(value, x.device())), {-1}, keepdims);
}
}  // namespace

MaskingImpl::MaskingImpl(Options options) : CustomLayer("Masking", options.name), options_(std::move(options)) {
  options_.name = name();
}

std::vector<Shape> MaskingImpl::compute_output_shape(const std::vector<Shape>& in) const {
  check_num_inputs(in, 1);
  if (in[0].rank() < 2) shape_error("expects [batch, steps, ...], got shape " + in[0].to_string());
  return {in[0]};
}

std::vector<Tensor> MaskingImpl::call(const std::vector<Tensor>& inputs, bool) {
  const Tensor& x = inputs[0];
  return {x * kept_steps(x, options_.mask_value, true)};
}

std::vector<SymbolicTensor> MaskingImpl::compute_mask(const std::vector<SymbolicTensor>& inputs,
                                                      const std::vector<SymbolicTensor>&) const {
  const float value = options_.mask_value;
  return {mask_op("MaskingMask", {inputs[0]},
                  [value](const std::vector<Tensor>& xs) { return kept_steps(xs[0], value, false); })};
}

TOWER_REGISTER_LAYER(MaskingImpl, "Masking");

}  // namespace tower::layers
