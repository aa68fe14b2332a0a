#include "layers/global_max_pooling1d.h"

#include "api/engine/layer_registry.h"
#include "layers/pooling_utils.h"
#include "layers/view_utils.h"

namespace tower::layers {

GlobalMaxPooling1DImpl::GlobalMaxPooling1DImpl(Options options)
    : Layer("GlobalMaxPooling1D", options.name), options_(std::move(options)) {
  options_.name = name();
  detail::check_global_pool_arguments(where(), options_.data_format);
}

std::vector<Shape> GlobalMaxPooling1DImpl::compute_output_shape(const std::vector<Shape>& in) const {
  check_num_inputs(in, 1);
  return {detail::global_pool1d_output_shape(where(), in[0], options_.keepdims)};
}

// The 2-D global pooling over [batch, 1, steps, channels]; the output keeps its shape ([batch, channels] memory).
void GlobalMaxPooling1DImpl::forward(const ForwardContext& ctx) {
  detail::forward_on_views(ctx, detail::as_image(ctx.inputs[0].shape()), ctx.outputs[0].shape(),
                           [](const ForwardContext& v) { detail::global_pool2d_forward(v, backend::PoolKind::max); });
}

void GlobalMaxPooling1DImpl::backward(const BackwardContext& ctx) {
  if (!ctx.grad_inputs[0].defined()) return;
  detail::backward_on_views(
      ctx, detail::as_image(ctx.grad_inputs[0].shape()), ctx.grad_outputs[0].shape(),
      [](const BackwardContext& v) { detail::global_pool2d_backward(v, backend::PoolKind::max); });
}

TOWER_REGISTER_LAYER(GlobalMaxPooling1DImpl, "GlobalMaxPooling1D");

}  // namespace tower::layers
