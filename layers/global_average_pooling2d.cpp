#include "layers/global_average_pooling2d.h"

#include "api/engine/layer_registry.h"
#include "layers/pooling_utils.h"

namespace tower::layers {

GlobalAveragePooling2DImpl::GlobalAveragePooling2DImpl(Options options)
    : Layer("GlobalAveragePooling2D", options.name), options_(std::move(options)) {
  options_.name = name();
  detail::check_global_pool_arguments(where(), options_.data_format);
}

std::vector<Shape> GlobalAveragePooling2DImpl::compute_output_shape(const std::vector<Shape>& in) const {
  check_num_inputs(in, 1);
  return {detail::global_pool2d_output_shape(where(), in[0], options_.keepdims)};
}

void GlobalAveragePooling2DImpl::forward(const ForwardContext& ctx) {
  detail::global_pool2d_forward(ctx, backend::PoolKind::average);
}

void GlobalAveragePooling2DImpl::backward(const BackwardContext& ctx) {
  detail::global_pool2d_backward(ctx, backend::PoolKind::average);
}

TOWER_REGISTER_LAYER(GlobalAveragePooling2DImpl, "GlobalAveragePooling2D");

}  // namespace tower::layers
