#include "layers/global_average_pooling1d.h"

#include "api/engine/layer_registry.h"
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
void GlobalAveragePooling1DImpl::forward(const ForwardContext& ctx) {
  detail::forward_on_views(
      ctx, detail::as_image(ctx.inputs[0].shape()), ctx.outputs[0].shape(),
      [](const ForwardContext& v) { detail::global_pool2d_forward(v, backend::PoolKind::average); });
}

void GlobalAveragePooling1DImpl::backward(const BackwardContext& ctx) {
  if (!ctx.grad_inputs[0].defined()) return;
  detail::backward_on_views(
      ctx, detail::as_image(ctx.grad_inputs[0].shape()), ctx.grad_outputs[0].shape(),
      [](const BackwardContext& v) { detail::global_pool2d_backward(v, backend::PoolKind::average); });
}

TOWER_REGISTER_LAYER(GlobalAveragePooling1DImpl, "GlobalAveragePooling1D");

}  // namespace tower::layers
