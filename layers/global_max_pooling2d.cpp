#include "layers/global_max_pooling2d.h"

#include "api/engine/layer_registry.h"
#include "layers/pooling_utils.h"

namespace tower::layers {

GlobalMaxPooling2DImpl::GlobalMaxPooling2DImpl(Options options)
    : Layer("GlobalMaxPooling2D", options.name), options_(std::move(options)) {
  options_.name = name();
  detail::check_global_pool_arguments(where(), options_.data_format);
}

std::vector<Shape> GlobalMaxPooling2DImpl::compute_output_shape(const std::vector<Shape>& in) const {
  check_num_inputs(in, 1);
  return {detail::global_pool2d_output_shape(where(), in[0], options_.keepdims)};
}

void GlobalMaxPooling2DImpl::forward(const ForwardContext& ctx) {
  detail::global_pool2d_forward(ctx, backend::PoolKind::max);
}

void GlobalMaxPooling2DImpl::backward(const BackwardContext& ctx) {
  detail::global_pool2d_backward(ctx, backend::PoolKind::max);
}

TOWER_REGISTER_LAYER(GlobalMaxPooling2DImpl, "GlobalMaxPooling2D");

}  // namespace tower::layers
