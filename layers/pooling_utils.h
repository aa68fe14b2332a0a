#pragma once
// Internal to layers/ (not part of the public API): what the pooling layers share.
//   MaxPooling2D / AveragePooling2D: Keras' argument checks, TF/Keras output sizes and "same" padding (the
//   convolution's conv_axis with dilation 1), forward/backward on the backend's Pool2DOp.
//   GlobalAveragePooling2D / GlobalMaxPooling2D: shape checks and forward/backward on Backend::global_pool.
#include <optional>
#include <string>

#include "api/backend/backend.h"
#include "api/engine/layer.h"
#include "api/engine/layer_options.h"

namespace tower::layers::detail {

// What a pooling layer fixes at construction; the per-call sizes come from the input.
struct PoolGeometry {
  backend::PoolKind kind = backend::PoolKind::max;
  Size2 pool_size{2, 2}, strides{2, 2};
  bool same = false;
};

// Checks the arguments Keras checks and returns the geometry: positive pool_size, positive strides (none
// means pool_size, and `strides` is set to it, as Keras' config shows), padding 'valid' or
// 'same' (any case; lowercased in place), data_format 'channels_last' (empty means channels_last and is
// filled in). Throws std::invalid_argument prefixed with `where`.
PoolGeometry check_pool_arguments(const std::string& where, backend::PoolKind kind, const Size2& pool_size,
                                  std::optional<Size2>& strides, std::string& padding, std::string& data_format);

// The 1-D form for MaxPooling1D / AveragePooling1D, which pool [batch, 1, steps, channels] views with the
// geometry's pool_size (1, p) and strides (1, s); messages in 1-D terms.
PoolGeometry check_pool1d_arguments(const std::string& where, backend::PoolKind kind, const Size1& pool_size,
                                    std::optional<Size1>& strides, std::string& padding, std::string& data_format);
// [batch, steps, channels] -> [batch, out_steps, channels]; batch and steps may be unknown (-1). Throws ShapeError
// prefixed with `where` for another rank, unknown channels, or a 'valid' window longer than the input.
Shape pool1d_output_shape(const std::string& where, const Shape& input, const PoolGeometry& g);
// [batch, steps, channels] -> [batch, channels], or [batch, 1, channels] with keepdims. Throws ShapeError prefixed
// with `where` for another rank or unknown channels.
Shape global_pool1d_output_shape(const std::string& where, const Shape& input, bool keepdims);

// The output shape for an NHWC input [batch, h, w, channels]; batch, h and w may be unknown (-1), which
// stays unknown. Throws ShapeError prefixed with `where` for another rank, unknown channels, or a 'valid'
// window larger than the input.
Shape pool2d_output_shape(const std::string& where, const Shape& input, const PoolGeometry& g);

// The backend parameters for a concrete input shape.
backend::Pool2DParams pool2d_params(const Shape& input, const PoolGeometry& g);

// ctx.outputs[0] = pool(ctx.inputs[0]). The backend op (made on the first call for a shape) lives in the
// node's state; max pooling always keeps its argmax there, so backward works after an inference-mode
// forward too (a plan compiled with training = false and backward = true, e.g. input gradients).
void pool2d_forward(const ForwardContext& ctx, const PoolGeometry& g);
// ctx.grad_inputs[0] (if wanted) from ctx.grad_outputs[0]; reads neither inputs nor outputs.
void pool2d_backward(const BackwardContext& ctx);

// data_format 'channels_last' (empty means channels_last and is filled in); throws std::invalid_argument
// prefixed with `where` otherwise.
void check_global_pool_arguments(const std::string& where, std::string& data_format);
// [batch, h, w, c] -> [batch, c], or [batch, 1, 1, c] with keepdims. Throws ShapeError prefixed with `where`
// for another rank or unknown channels.
Shape global_pool2d_output_shape(const std::string& where, const Shape& input, bool keepdims);
void global_pool2d_forward(const ForwardContext& ctx, backend::PoolKind kind);
// Max reads ctx.inputs[0] and ctx.outputs[0] (the first position that attained the maximum gets dy);
// average reads neither.
void global_pool2d_backward(const BackwardContext& ctx, backend::PoolKind kind);

}  // namespace tower::layers::detail
