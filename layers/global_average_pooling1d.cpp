#include "layers/global_average_pooling1d.h"

#include "api/engine/layer_registry.h"
#include "api/ops/ops.h"
#include "layers/pooling_utils.h"
#include "layers/view_utils.h"

namespace tower::layers {

GlobalAveragePooling1DImpl::GlobalAveragePooling1DImpl(Options options)
    : Layer("GlobalAveragePooling1D", options.name), options_(std::move(options)) {
  options_.name = name();
  detail::check_global_pool_arguments(where(), options_.data_format);
}

std::vector<Shape> GlobalAveragePooling1DImpl::compute_output_shape(const std::vector<Shape>& in) const {
  check_num_inputs(in, 1);
  return {detail::global_pool1d_output_shape(where(), in[0], options_.keepdims)};
}

// The 2-D global pooling over [batch, 1, steps, channels]; the output keeps its shape ([batch, channels] memory).
namespace {
// A mask [N, T] as [N, T, 1] weights that sum to 1 over each sequence's steps (Keras' masked mean; a sequence with
// every step masked divides 0 by 0, as Keras does).
Tensor step_weights(const Tensor& mask, const Shape& x, const std::string& where) {
  if (mask.shape() != Shape{x[0], x[1]})
    throw std::invalid_argument(where + "the mask of shape " + mask.shape().to_string() +
                                " does not fit the input of shape " + x.to_string() + " (expected [batch, steps])");
  const Tensor m = ops::expand_dims(mask, -1);
  return m / ops::sum(m, {1}, true);
}
}  // namespace

void GlobalAveragePooling1DImpl::forward(const ForwardContext& ctx) {
  if (!ctx.masks.empty() && ctx.masks[0].defined()) {
    const Tensor& x = ctx.inputs[0];
    const Tensor y = ops::sum(x * step_weights(ctx.masks[0], x.shape(), where()), {1}, options_.keepdims);
    Tensor out = ctx.outputs[0];
    out.copy_from(y);
    return;
  }
  detail::forward_on_views(
      ctx, detail::as_image(ctx.inputs[0].shape()), ctx.outputs[0].shape(),
      [](const ForwardContext& v) { detail::global_pool2d_forward(v, backend::PoolKind::average); });
}

void GlobalAveragePooling1DImpl::backward(const BackwardContext& ctx) {
  if (!ctx.grad_inputs[0].defined()) return;
  if (!ctx.masks.empty() && ctx.masks[0].defined()) {
    Tensor dx = ctx.grad_inputs[0];
    const Shape& x = dx.shape();
    const Tensor dy = ops::reshape(ctx.grad_outputs[0], Shape{x[0], 1, x[2]});
    dx.copy_from(ops::broadcast_to(dy * step_weights(ctx.masks[0], x, where()), x));
    return;
  }
  detail::backward_on_views(
      ctx, detail::as_image(ctx.grad_inputs[0].shape()), ctx.grad_outputs[0].shape(),
      [](const BackwardContext& v) { detail::global_pool2d_backward(v, backend::PoolKind::average); });
}

TOWER_REGISTER_LAYER(GlobalAveragePooling1DImpl, "GlobalAveragePooling1D");

}  // namespace tower::layers
