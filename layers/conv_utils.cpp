#include "layers/conv_utils.h"

#include <algorithm>
#include <cctype>
#include <memory>
#include <stdexcept>

namespace tower::layers::detail {

namespace {

struct ConvState : LayerState {
  Shape input_shape;
  Device device;
  std::unique_ptr<backend::Conv2DOp> op;
  Tensor pre;  // pre-activation output, kept when the activation's gradient needs its input
  Tensor dz;   // gradient before the activation
};

std::string size2(const Size2& s) {
  std::string text = "(";
  text += std::to_string(s.h);
  text += ", ";
  text += std::to_string(s.w);
  return text + ")";
}

// Plain ReLU runs inside the convolution rather than as another pass over its output.
bool fuses(const activations::Activation& act) { return act.name() == "relu"; }

backend::Conv2DOp& ensure_op(ConvState& st, const Tensor& x, const ConvGeometry& g,
                             const activations::Activation& act) {
  if (!st.op || st.input_shape != x.shape() || !(st.device == x.device())) {
    backend::Conv2DParams p = conv2d_params(x.shape(), g);
    p.relu = fuses(act);
    st.op = backend::get(x.device()).make_conv2d(p);
    st.input_shape = x.shape();
    st.device = x.device();
  }
  return *st.op;
}

void ensure_scratch(Tensor& t, const Tensor& like) {
  if (!t.defined() || t.shape() != like.shape() || !(t.device() == like.device()))
    t = Tensor(like.shape(), DType::float32, like.device());
}

ConvAxis width_axis(Index in, const ConvGeometry& g) {
  return g.causal ? causal_conv_axis(in, g.kernel_size.w, g.strides.w, g.dilation_rate.w)
                  : conv_axis(in, g.kernel_size.w, g.strides.w, g.dilation_rate.w, g.same);
}

}  // namespace

ConvAxis conv_axis(Index in, int kernel, int stride, int dilation, bool same) {
  const Index span = static_cast<Index>(kernel - 1) * dilation + 1;
  ConvAxis a;
  if (!same) {
    a.out = in >= span ? (in - span) / stride + 1 : 0;
    return a;
  }
  a.out = (in + stride - 1) / stride;
  const Index total = std::max<Index>((a.out - 1) * stride + span - in, 0);
  a.pad_before = static_cast<int>(total / 2);
  a.pad_after = static_cast<int>(total - total / 2);
  return a;
}

ConvAxis causal_conv_axis(Index in, int kernel, int stride, int dilation) {
  const int pad = (kernel - 1) * dilation;
  ConvAxis a = conv_axis(in + pad, kernel, stride, dilation, false);
  a.pad_before = pad;
  return a;
}

ConvGeometry check_conv_arguments(const std::string& where, const Size2& kernel_size, const Size2& strides,
                                  std::string& padding, std::string& data_format, const Size2& dilation_rate) {
  std::transform(padding.begin(), padding.end(), padding.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (padding != "valid" && padding != "same")
    throw std::invalid_argument(where + "padding must be 'valid' or 'same', got '" + padding + "'");
  if (data_format.empty()) data_format = "channels_last";
  if (data_format != "channels_last")
    throw std::invalid_argument(where + "data_format '" + data_format +
                                "' is not supported: Tower keeps images channels_last (NHWC)");
  if (kernel_size.h <= 0 || kernel_size.w <= 0)
    throw std::invalid_argument(where + "kernel_size must be positive, got " + size2(kernel_size));
  if (strides.h <= 0 || strides.w <= 0)
    throw std::invalid_argument(where + "strides must be positive, got " + size2(strides));
  if (dilation_rate.h <= 0 || dilation_rate.w <= 0)
    throw std::invalid_argument(where + "dilation_rate must be positive, got " + size2(dilation_rate));
  if (std::max(strides.h, strides.w) > 1 && std::max(dilation_rate.h, dilation_rate.w) > 1)
    throw std::invalid_argument(where + "strides > 1 not supported in conjunction with dilation_rate > 1, got strides=" +
                                size2(strides) + " and dilation_rate=" + size2(dilation_rate));
  ConvGeometry g;
  g.kernel_size = kernel_size;
  g.strides = strides;
  g.dilation_rate = dilation_rate;
  g.same = padding == "same";
  return g;
}

ConvGeometry check_conv1d_arguments(const std::string& where, const Size1& kernel_size, const Size1& strides,
                                    std::string& padding, std::string& data_format, const Size1& dilation_rate,
                                    bool allow_causal) {
  std::transform(padding.begin(), padding.end(), padding.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  const bool causal = allow_causal && padding == "causal";
  if (padding != "valid" && padding != "same" && !causal)
    throw std::invalid_argument(where + "padding must be 'valid', 'same'" + (allow_causal ? " or 'causal'" : "") +
                                ", got '" + padding + "'");
  if (kernel_size.value <= 0)
    throw std::invalid_argument(where + "kernel_size must be positive, got " + std::to_string(kernel_size.value));
  if (strides.value <= 0)
    throw std::invalid_argument(where + "strides must be positive, got " + std::to_string(strides.value));
  if (dilation_rate.value <= 0)
    throw std::invalid_argument(where + "dilation_rate must be positive, got " + std::to_string(dilation_rate.value));
  if (strides.value > 1 && dilation_rate.value > 1)
    throw std::invalid_argument(where + "strides > 1 not supported in conjunction with dilation_rate > 1, got " +
                                "strides=" + std::to_string(strides.value) +
                                " and dilation_rate=" + std::to_string(dilation_rate.value));
  std::string padding_2d = causal ? "valid" : padding;
  ConvGeometry g = check_conv_arguments(where, Size2(1, kernel_size.value), Size2(1, strides.value), padding_2d,
                                        data_format, Size2(1, dilation_rate.value));
  g.causal = causal;
  return g;
}

Shape conv1d_output_shape(const std::string& where, const Shape& input, const ConvGeometry& g) {
  if (input.rank() != 3)
    throw ShapeError(where + "expects input of rank 3 (batch, steps, channels), got shape " + input.to_string());
  if (input[1] == 0 || input[2] <= 0)
    throw ShapeError(where + "the channels of the input must be known and its steps non-zero, got shape " +
                     input.to_string());
  if (input[2] % g.groups != 0)
    throw ShapeError(where + "the number of input channels must be divisible by groups=" +
                     std::to_string(g.groups) + ", got input shape " + input.to_string());
  if (input[1] < 0) return Shape{input[0], -1, g.filters};  // unknown steps: known per call
  const ConvAxis w = width_axis(input[1], g);
  if (w.out <= 0)
    throw ShapeError(where + "with padding 'valid' the kernel of size " + std::to_string(g.kernel_size.w) +
                     " (dilated extent " + std::to_string((g.kernel_size.w - 1) * g.dilation_rate.w + 1) +
                     ") is longer than the steps of input shape " + input.to_string());
  return Shape{input[0], w.out, g.filters};
}

Shape conv2d_output_shape(const std::string& where, const Shape& input, const ConvGeometry& g) {
  if (input.rank() != 4)
    throw ShapeError(where + "expects input of rank 4 (batch, height, width, channels), got shape " +
                     input.to_string());
  if (input[1] <= 0 || input[2] <= 0 || input[3] <= 0)
    throw ShapeError(where + "height, width and channels of the input must be known, got shape " +
                     input.to_string());
  if (input[3] % g.groups != 0)
    throw ShapeError(where + "the number of input channels must be divisible by groups=" +
                     std::to_string(g.groups) + ", got input shape " + input.to_string());
  const ConvAxis h = conv_axis(input[1], g.kernel_size.h, g.strides.h, g.dilation_rate.h, g.same);
  const ConvAxis w = width_axis(input[2], g);
  if (h.out <= 0 || w.out <= 0) {
    const Size2 span{(g.kernel_size.h - 1) * g.dilation_rate.h + 1, (g.kernel_size.w - 1) * g.dilation_rate.w + 1};
    throw ShapeError(where + "with padding 'valid' the kernel " + size2(g.kernel_size) + " (dilated extent " +
                     size2(span) + ") is larger than the input (height, width) of shape " + input.to_string());
  }
  return Shape{input[0], h.out, w.out, g.filters};
}

backend::Conv2DParams conv2d_params(const Shape& input, const ConvGeometry& g) {
  const ConvAxis h = conv_axis(input[1], g.kernel_size.h, g.strides.h, g.dilation_rate.h, g.same);
  const ConvAxis w = width_axis(input[2], g);
  backend::Conv2DParams p;
  p.batch = input[0];
  p.in_h = input[1];
  p.in_w = input[2];
  p.in_c = input[3];
  p.out_h = h.out;
  p.out_w = w.out;
  p.out_c = g.filters;
  p.kernel_h = g.kernel_size.h;
  p.kernel_w = g.kernel_size.w;
  p.stride_h = g.strides.h;
  p.stride_w = g.strides.w;
  p.dilation_h = g.dilation_rate.h;
  p.dilation_w = g.dilation_rate.w;
  p.pad_top = h.pad_before;
  p.pad_bottom = h.pad_after;
  p.pad_left = w.pad_before;
  p.pad_right = w.pad_after;
  p.groups = g.groups;
  return p;
}

void conv2d_forward(const ForwardContext& ctx, const ConvGeometry& g, const Tensor& kernel, const Tensor* bias,
                    const activations::Activation& act) {
  const Tensor& x = ctx.inputs[0];
  Tensor& y = ctx.outputs[0];
  ConvState& st = ctx.get_state<ConvState>();
  Tensor z = y;
  if (!act.is_linear() && !act.output_suffices()) {
    ensure_scratch(st.pre, y);
    z = st.pre;
  }
  ensure_op(st, x, g, act).forward(x.data<float>(), kernel.data<float>(), bias ? bias->data<float>() : nullptr,
                                   z.data<float>());
  if (!act.is_linear() && !fuses(act)) act.forward(z, y);
}

void conv2d_backward(const BackwardContext& ctx, const ConvGeometry& g, const Tensor& kernel, bool has_bias,
                     const activations::Activation& act) {
  const Tensor& x = ctx.inputs[0];
  const Tensor& dy = ctx.grad_outputs[0];
  ConvState& st = ctx.get_state<ConvState>();
  Tensor dz = dy;
  if (!act.is_linear()) {
    ensure_scratch(st.dz, dy);
    const Tensor& y = ctx.outputs[0];
    act.backward(act.output_suffices() ? y : st.pre, y, dy, st.dz);
    dz = st.dz;
  }
  backend::Conv2DOp& op = ensure_op(st, x, g, act);
  if (!ctx.weight_grads.empty())
    op.backward_weights(x.data<float>(), dz.data<float>(), ctx.weight_grads[0].data<float>(),
                        has_bias ? ctx.weight_grads[1].data<float>() : nullptr);
  if (ctx.grad_inputs[0].defined())
    op.backward_data(dz.data<float>(), kernel.data<float>(), ctx.grad_inputs[0].data<float>());
}

}  // namespace tower::layers::detail
