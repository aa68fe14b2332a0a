#include "layers/pooling_utils.h"

#include <algorithm>
#include <cctype>
#include <memory>
#include <stdexcept>

#include "layers/conv_utils.h"

namespace tower::layers::detail {

namespace {

struct PoolState : LayerState {
  Shape input_shape;
  Device device;
  std::unique_ptr<backend::Pool2DOp> op;
};

// Built with += because GCC 12 warns (-Wrestrict, a false positive) on "(" + std::to_string(...).
std::string size2(const Size2& s) {
  std::string text = "(";
  text += std::to_string(s.h);
  text += ", ";
  text += std::to_string(s.w);
  return text + ")";
}

void check_channels_last(const std::string& where, std::string& data_format) {
  if (data_format.empty()) data_format = "channels_last";
  if (data_format != "channels_last")
    throw std::invalid_argument(where + "data_format '" + data_format +
                                "' is not supported: Tower keeps images channels_last (NHWC)");
}

// An unknown (-1) input size gives an unknown output size.
Index pooled_size(Index in, int pool, int stride, bool same) {
  return in < 0 ? -1 : conv_axis(in, pool, stride, 1, same).out;
}

void check_rank4(const std::string& where, const Shape& input) {
  if (input.rank() != 4)
    throw ShapeError(where + "expects input of rank 4 (batch, height, width, channels), got shape " +
                     input.to_string());
  if (input[3] <= 0)
    throw ShapeError(where + "the channels of the input must be known, got shape " + input.to_string());
}

}  // namespace

PoolGeometry check_pool_arguments(const std::string& where, backend::PoolKind kind, const Size2& pool_size,
                                  std::optional<Size2>& strides, std::string& padding, std::string& data_format) {
  std::transform(padding.begin(), padding.end(), padding.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (padding != "valid" && padding != "same")
    throw std::invalid_argument(where + "padding must be 'valid' or 'same', got '" + padding + "'");
  check_channels_last(where, data_format);
  if (pool_size.h <= 0 || pool_size.w <= 0)
    throw std::invalid_argument(where + "pool_size must be positive, got " + size2(pool_size));
  if (!strides) strides = pool_size;
  if (strides->h <= 0 || strides->w <= 0)
    throw std::invalid_argument(where + "strides must be positive, got " + size2(*strides));
  return PoolGeometry{kind, pool_size, *strides, padding == "same"};
}

PoolGeometry check_pool1d_arguments(const std::string& where, backend::PoolKind kind, const Size1& pool_size,
                                    std::optional<Size1>& strides, std::string& padding, std::string& data_format) {
  if (pool_size.value <= 0)
    throw std::invalid_argument(where + "pool_size must be positive, got " + std::to_string(pool_size.value));
  if (!strides) strides = pool_size;
  if (strides->value <= 0)
    throw std::invalid_argument(where + "strides must be positive, got " + std::to_string(strides->value));
  std::optional<Size2> strides_2d = Size2(1, strides->value);
  return check_pool_arguments(where, kind, Size2(1, pool_size.value), strides_2d, padding, data_format);
}

Shape pool1d_output_shape(const std::string& where, const Shape& input, const PoolGeometry& g) {
  if (input.rank() != 3)
    throw ShapeError(where + "expects input of rank 3 (batch, steps, channels), got shape " + input.to_string());
  if (input[2] <= 0)
    throw ShapeError(where + "the channels of the input must be known, got shape " + input.to_string());
  const Index steps = pooled_size(input[1], g.pool_size.w, g.strides.w, g.same);
  if (steps == 0)
    throw ShapeError(where + "with padding 'valid' the pool_size " + std::to_string(g.pool_size.w) +
                     " is longer than the steps of input shape " + input.to_string());
  return Shape{input[0], steps, input[2]};
}

Shape global_pool1d_output_shape(const std::string& where, const Shape& input, bool keepdims) {
  if (input.rank() != 3)
    throw ShapeError(where + "expects input of rank 3 (batch, steps, channels), got shape " + input.to_string());
  if (input[2] <= 0)
    throw ShapeError(where + "the channels of the input must be known, got shape " + input.to_string());
  return keepdims ? Shape{input[0], 1, input[2]} : Shape{input[0], input[2]};
}

Shape pool2d_output_shape(const std::string& where, const Shape& input, const PoolGeometry& g) {
  check_rank4(where, input);
  const Index h = pooled_size(input[1], g.pool_size.h, g.strides.h, g.same);
  const Index w = pooled_size(input[2], g.pool_size.w, g.strides.w, g.same);
  if (h == 0 || w == 0)
    throw ShapeError(where + "with padding 'valid' the pool_size " + size2(g.pool_size) +
                     " is larger than the input (height, width) of shape " + input.to_string());
  return Shape{input[0], h, w, input[3]};
}

backend::Pool2DParams pool2d_params(const Shape& input, const PoolGeometry& g) {
  const ConvAxis h = conv_axis(input[1], g.pool_size.h, g.strides.h, 1, g.same);
  const ConvAxis w = conv_axis(input[2], g.pool_size.w, g.strides.w, 1, g.same);
  backend::Pool2DParams p;
  p.kind = g.kind;
  p.batch = input[0];
  p.in_h = input[1];
  p.in_w = input[2];
  p.channels = input[3];
  p.out_h = h.out;
  p.out_w = w.out;
  p.pool_h = g.pool_size.h;
  p.pool_w = g.pool_size.w;
  p.stride_h = g.strides.h;
  p.stride_w = g.strides.w;
  p.pad_top = h.pad_before;
  p.pad_bottom = h.pad_after;
  p.pad_left = w.pad_before;
  p.pad_right = w.pad_after;
  return p;
}

void pool2d_forward(const ForwardContext& ctx, const PoolGeometry& g) {
  const Tensor& x = ctx.inputs[0];
  PoolState& st = ctx.get_state<PoolState>();
  if (!st.op || st.input_shape != x.shape() || !(st.device == x.device())) {
    st.op = backend::get(x.device()).make_pool2d(pool2d_params(x.shape(), g));
    st.input_shape = x.shape();
    st.device = x.device();
  }
  // The layer cannot know whether a backward follows (the plan may want input gradients in inference
  // mode), so max pooling always records its argmax; average pooling keeps nothing either way.
  st.op->forward(x.data<float>(), ctx.outputs[0].data<float>(), g.kind == backend::PoolKind::max || ctx.training);
}

void pool2d_backward(const BackwardContext& ctx) {
  if (!ctx.grad_inputs[0].defined()) return;
  PoolState& st = ctx.get_state<PoolState>();
  if (!st.op) throw std::logic_error("pooling backward without a preceding forward");
  st.op->backward(ctx.grad_outputs[0].data<float>(), ctx.grad_inputs[0].data<float>());
}

void check_global_pool_arguments(const std::string& where, std::string& data_format) {
  check_channels_last(where, data_format);
}

Shape global_pool2d_output_shape(const std::string& where, const Shape& input, bool keepdims) {
  check_rank4(where, input);
  return keepdims ? Shape{input[0], 1, 1, input[3]} : Shape{input[0], input[3]};
}

void global_pool2d_forward(const ForwardContext& ctx, backend::PoolKind kind) {
  const Tensor& x = ctx.inputs[0];
  backend::get(x.device())
      .global_pool(kind, x.data<float>(), ctx.outputs[0].data<float>(), x.dim(0), x.dim(1) * x.dim(2), x.dim(3));
}

void global_pool2d_backward(const BackwardContext& ctx, backend::PoolKind kind) {
  Tensor& dx = ctx.grad_inputs[0];
  if (!dx.defined()) return;
  const bool is_max = kind == backend::PoolKind::max;
  const float* x = is_max ? ctx.inputs[0].data<float>() : nullptr;
  const float* y = is_max ? ctx.outputs[0].data<float>() : nullptr;
  backend::get(dx.device())
      .global_pool_backward(kind, x, y, ctx.grad_outputs[0].data<float>(), dx.data<float>(), dx.dim(0),
                            dx.dim(1) * dx.dim(2), dx.dim(3));
}

}  // namespace tower::layers::detail
