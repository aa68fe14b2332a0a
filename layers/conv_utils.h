#pragma once
// Internal to layers/ (not part of the public API): what Conv2D and DepthwiseConv2D share. Output sizes and
// "same" padding exactly as TF/Keras compute them, the argument checks Keras makes, and the forward/backward
// of a convolution with fused bias and activation on the backend's Conv2DOp.
#include <string>

#include "api/activations/activations.h"
#include "api/backend/backend.h"
#include "api/engine/layer.h"
#include "api/engine/layer_options.h"

namespace tower::layers::detail {

// One spatial axis of a convolution. 'valid': out = (in - span) / stride + 1 with span = (kernel-1)*dilation+1,
// no padding (out <= 0 when span > in). 'same': out = ceil(in / stride), pad_total =
// max((out-1)*stride + span - in, 0), pad_before = pad_total / 2 and the rest after (bottom/right).
struct ConvAxis {
  Index out = 0;
  int pad_before = 0, pad_after = 0;
};
ConvAxis conv_axis(Index in, int kernel, int stride, int dilation, bool same);
// Keras' 'causal' (Conv1D): pad_before = (kernel-1)*dilation, pad_after = 0, then 'valid':
// out = (in - 1) / stride + 1, so output t sees inputs up to t * stride and none after.
ConvAxis causal_conv_axis(Index in, int kernel, int stride, int dilation);

// What a convolution layer fixes at construction; the per-call sizes come from the input.
struct ConvGeometry {
  Size2 kernel_size, strides, dilation_rate;
  bool same = false;
  bool causal = false;  // the width axis padded causally (causal_conv_axis) instead of by `same`
  int groups = 1;  // in_channels for a depthwise convolution
  Index filters = 0;  // output channels
};

// Checks the arguments Keras checks at construction and returns the geometry with groups and filters as
// given: positive kernel_size, strides and dilation_rate, padding 'valid' or 'same' (any case),
// data_format 'channels_last' (empty means the default, channels_last), and not strides > 1 together with
// dilation_rate > 1. Lowercases `padding` and fills an empty `data_format`. Throws std::invalid_argument
// prefixed with `where`.
ConvGeometry check_conv_arguments(const std::string& where, const Size2& kernel_size, const Size2& strides,
                                  std::string& padding, std::string& data_format, const Size2& dilation_rate);

// The 1-D form of check_conv_arguments for the 1-D layers (kernel_size (1, k) and so on on [batch, 1, width,
// channels] views), with messages in 1-D terms: padding 'valid', 'same' or, when allow_causal, 'causal' (which sets
// the geometry's `causal`).
ConvGeometry check_conv1d_arguments(const std::string& where, const Size1& kernel_size, const Size1& strides,
                                    std::string& padding, std::string& data_format, const Size1& dilation_rate,
                                    bool allow_causal);

// The output shape [batch, out_width, g.filters] for an input [batch, width, channels] (batch and width may be -1,
// which stays unknown). Throws ShapeError prefixed with `where` for another rank, unknown channels, channels not
// divisible by g.groups, or a 'valid' convolution whose dilated kernel is longer than the input.
Shape conv1d_output_shape(const std::string& where, const Shape& input, const ConvGeometry& g);

// The output shape for an NHWC input [batch, h, w, channels] (batch may be -1). Throws ShapeError prefixed
// with `where` for another rank, unknown h, w or channels, channels not divisible by g.groups, or a
// 'valid' convolution whose dilated kernel is larger than the input.
Shape conv2d_output_shape(const std::string& where, const Shape& input, const ConvGeometry& g);

// The backend parameters for a concrete input shape.
backend::Conv2DParams conv2d_params(const Shape& input, const ConvGeometry& g);

// ctx.outputs[0] = activation(conv(ctx.inputs[0], kernel) + bias); bias may be null. The backend op (made on
// the first call for a shape) and scratch live in the node's state.
void conv2d_forward(const ForwardContext& ctx, const ConvGeometry& g, const Tensor& kernel, const Tensor* bias,
                    const activations::Activation& activation);
// Input gradient (if wanted) and weight gradients (kernel, then bias when has_bias; unless frozen).
// Reads ctx.inputs[0] and, for a non-linear activation, ctx.outputs[0].
void conv2d_backward(const BackwardContext& ctx, const ConvGeometry& g, const Tensor& kernel, bool has_bias,
                     const activations::Activation& activation);

}  // namespace tower::layers::detail
