#include "layers/average_pooling2d.h"

#include "api/engine/layer_registry.h"

namespace tower::layers {

AveragePooling2DImpl::AveragePooling2DImpl(Options options)
    : Layer("AveragePooling2D", options.name), options_(std::move(options)) {
  options_.name = name();
  geometry_ = detail::check_pool_arguments(where(), backend::PoolKind::average, options_.pool_size, options_.strides,
                                           options_.padding, options_.data_format);
}

std::vector<Shape> AveragePooling2DImpl::compute_output_shape(const std::vector<Shape>& in) const {
  check_num_inputs(in, 1);
  return {detail::pool2d_output_shape(where(), in[0], geometry_)};
}

void AveragePooling2DImpl::forward(const ForwardContext& ctx) { detail::pool2d_forward(ctx, geometry_); }

void AveragePooling2DImpl::backward(const BackwardContext& ctx) { detail::pool2d_backward(ctx); }

TOWER_REGISTER_LAYER(AveragePooling2DImpl, "AveragePooling2D");

}  // namespace tower::layers
