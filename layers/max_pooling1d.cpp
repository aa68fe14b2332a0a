#include "layers/max_pooling1d.h"

#include "api/engine/layer_registry.h"
#include "layers/view_utils.h"

namespace tower::layers {

MaxPooling1DImpl::MaxPooling1DImpl(Options options)
    : Layer("MaxPooling1D", options.name), options_(std::move(options)) {
  options_.name = name();
  geometry_ = detail::check_pool1d_arguments(where(), backend::PoolKind::max, options_.pool_size, options_.strides,
                                             options_.padding, options_.data_format);
}

std::vector<Shape> MaxPooling1DImpl::compute_output_shape(const std::vector<Shape>& in) const {
  check_num_inputs(in, 1);
  return {detail::pool1d_output_shape(where(), in[0], geometry_)};
}

void MaxPooling1DImpl::forward(const ForwardContext& ctx) {
  detail::forward_on_views(ctx, detail::as_image(ctx.inputs[0].shape()), detail::as_image(ctx.outputs[0].shape()),
                           [&](const ForwardContext& v) { detail::pool2d_forward(v, geometry_); });
}

void MaxPooling1DImpl::backward(const BackwardContext& ctx) {
  if (!ctx.grad_inputs[0].defined()) return;
  detail::backward_on_views(ctx, detail::as_image(ctx.grad_inputs[0].shape()),
                            detail::as_image(ctx.grad_outputs[0].shape()),
                            [&](const BackwardContext& v) { detail::pool2d_backward(v); });
}

TOWER_REGISTER_LAYER(MaxPooling1DImpl, "MaxPooling1D");

}  // namespace tower::layers
