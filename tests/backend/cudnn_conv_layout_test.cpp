// The numbers the CUDA backend hands cuDNN for a Conv2D (api/backend/cuda/cudnn_conv_layout.h), checked without a
// GPU: host loops do what cuDNN's documentation says it does with them (cudnnTransformTensor copies between
// strided views; the convolution pads symmetrically and reads an NHWC filter [out][kh][kw][in/groups]), and the
// results must equal the CPU backend's Conv2D forward, backward_data and backward_weights on the Keras layouts.
// Cases: Keras "same" with an odd padding total (stride 2, even kernels), symmetric and valid padding, groups,
// depthwise with a multiplier and dilation.
#include "api/backend/cuda/cudnn_conv_layout.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <string>
#include <vector>

#include "api/backend/backend.h"
#include "api/backend/math/data_movement.h"
#include "api/core/random.h"

namespace tower::backend::cuda {
namespace {

struct Case {
  std::string name;
  Conv2DParams p;
};

// Keras' padding for a square kernel and stride: "same" pads (out - 1) * stride + span - in in total, the odd one
// at the bottom/right.
Conv2DParams keras(Index h, Index w, Index in_c, Index out_c, int groups, int kernel, int stride, int dilation,
                   bool same) {
  Conv2DParams p{.batch = 2, .in_h = h, .in_w = w, .in_c = in_c, .out_c = out_c};
  p.kernel_h = p.kernel_w = kernel;
  p.stride_h = p.stride_w = stride;
  p.dilation_h = p.dilation_w = dilation;
  p.groups = groups;
  const Index span = Index{kernel - 1} * dilation + 1;
  const auto axis = [&](Index in, Index& out, int& before, int& after) {
    out = same ? (in + stride - 1) / stride : (in - span) / stride + 1;
    const Index total = same ? std::max<Index>((out - 1) * stride + span - in, 0) : 0;
    before = static_cast<int>(total / 2);
    after = static_cast<int>(total - total / 2);
  };
  axis(h, p.out_h, p.pad_top, p.pad_bottom);
  axis(w, p.out_w, p.pad_left, p.pad_right);
  return p;
}

std::vector<float> random_values(Index n, std::uint64_t seed) {
  Generator g(seed);
  std::vector<float> v(static_cast<std::size_t>(n));
  for (float& x : v) x = g.uniform(-1.f, 1.f);
  return v;
}

// cudnnTransformTensor: to[view_to(i)] = from[view_from(i)] for every index i of a [d0, d1, d2, d3] tensor.
void transform(const std::array<Index, 4>& dims, const float* from, const Strides4& from_strides, float* to,
               const Strides4& to_strides) {
  for (Index a = 0; a < dims[0]; ++a)
    for (Index b = 0; b < dims[1]; ++b)
      for (Index c = 0; c < dims[2]; ++c)
        for (Index d = 0; d < dims[3]; ++d)
          to[a * to_strides.n + b * to_strides.c + c * to_strides.h + d * to_strides.w] =
              from[a * from_strides.n + b * from_strides.c + c * from_strides.h + d * from_strides.w];
}

// cuDNN's grouped cross-correlation of an NHWC input [batch, h, w, in_c] with an NHWC filter
// [out][kh][kw][in/groups] and symmetric padding pad_h/pad_w: calls f(input index, filter index, output index) for
// every multiply.
template <class F>
void for_each_cudnn_tap(const Conv2DParams& p, const CudnnConvLayout& l, F&& f) {
  const Index h = l.padded_h, w = l.padded_w, group_in = p.in_c / p.groups, group_out = p.out_c / p.groups;
  const Index span_h = Index{p.kernel_h - 1} * p.dilation_h + 1, span_w = Index{p.kernel_w - 1} * p.dilation_w + 1;
  const Index out_h = (h + 2 * l.pad_h - span_h) / p.stride_h + 1, out_w = (w + 2 * l.pad_w - span_w) / p.stride_w + 1;
  ASSERT_EQ(out_h, p.out_h);
  ASSERT_EQ(out_w, p.out_w);
  for (Index n = 0; n < p.batch; ++n)
    for (Index oh = 0; oh < out_h; ++oh)
      for (Index ow = 0; ow < out_w; ++ow)
        for (Index o = 0; o < p.out_c; ++o)
          for (Index i = 0; i < p.kernel_h; ++i)
            for (Index j = 0; j < p.kernel_w; ++j) {
              const Index ih = oh * p.stride_h - l.pad_h + i * p.dilation_h;
              const Index iw = ow * p.stride_w - l.pad_w + j * p.dilation_w;
              if (ih < 0 || ih >= h || iw < 0 || iw >= w) continue;
              for (Index ci = 0; ci < group_in; ++ci)
                f(((n * h + ih) * w + iw) * p.in_c + o / group_out * group_in + ci,
                  ((o * p.kernel_h + i) * p.kernel_w + j) * group_in + ci,
                  ((n * out_h + oh) * out_w + ow) * p.out_c + o);
            }
}

void expect_close(const std::vector<float>& actual, const std::vector<float>& expected, const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  int bad = 0;
  for (std::size_t i = 0; i < actual.size(); ++i)
    if (!(std::fabs(actual[i] - expected[i]) <= 1e-4f + 1e-4f * std::fabs(expected[i])) && ++bad <= 5)
      ADD_FAILURE() << what << " element " << i << ": got " << actual[i] << ", expected " << expected[i];
  EXPECT_EQ(bad, 0) << what;
}

void check_case(const Case& c) {
  SCOPED_TRACE(c.name);
  const Conv2DParams& p = c.p;
  const CudnnConvLayout l = cudnn_conv_layout(p);
  const Index x_size = p.batch * p.in_h * p.in_w * p.in_c, y_size = p.batch * p.out_h * p.out_w * p.out_c;
  const Index group_in = p.in_c / p.groups, w_size = Index{p.kernel_h} * p.kernel_w * group_in * p.out_c;
  const Index input_size = p.batch * l.padded_h * l.padded_w * p.in_c;
  const std::array<Index, 4> w_dims{p.out_c, group_in, p.kernel_h, p.kernel_w};
  const std::vector<float> x = random_values(x_size, 1), w = random_values(w_size, 2), dy = random_values(y_size, 3);
  auto op = get(Device::cpu()).make_conv2d(p);

  // What the CUDA op feeds cuDNN: the padded input (or x itself) and the reordered kernel.
  std::vector<float> input(static_cast<std::size_t>(input_size), 0.f), filter(w.size());
  // The padded copy is Backend::pad2d's (math::Pad2D), the extra rows and columns before x.
  const math::Pad2DShape pad{p.in_h, p.in_w, p.in_c, l.padded_h, l.padded_w, l.extra_top, l.extra_left};
  if (l.padded())
    for (Index i = 0; i < input_size; ++i) math::Pad2D<1>{x.data(), input.data(), pad}(i);
  else
    input = x;
  transform(w_dims, w.data(), l.keras_kernel, filter.data(), l.cudnn_filter);
  EXPECT_EQ(l.padded(), l.padded_h != p.in_h || l.padded_w != p.in_w);

  std::vector<float> y(static_cast<std::size_t>(y_size), 0.f), y_cpu(y.size());
  for_each_cudnn_tap(p, l, [&](Index xi, Index wi, Index yi) { y[yi] += input[xi] * filter[wi]; });
  op->forward(x.data(), w.data(), nullptr, y_cpu.data());
  expect_close(y, y_cpu, "forward");

  std::vector<float> d_input(input.size(), 0.f), dx(x.size(), 99.f), dx_cpu(x.size());
  for_each_cudnn_tap(p, l, [&](Index xi, Index wi, Index yi) { d_input[xi] += dy[yi] * filter[wi]; });
  if (l.padded())
    for (Index i = 0; i < x_size; ++i) math::Pad2DBackward<1>{d_input.data(), dx.data(), pad}(i);
  else
    dx = d_input;
  op->backward_data(dy.data(), w.data(), dx_cpu.data());
  expect_close(dx, dx_cpu, "backward data");

  std::vector<float> d_filter(w.size(), 0.f), dw(w.size(), 99.f), dw_cpu(w.size());
  for_each_cudnn_tap(p, l, [&](Index xi, Index wi, Index yi) { d_filter[wi] += input[xi] * dy[yi]; });
  transform(w_dims, d_filter.data(), l.cudnn_filter, dw.data(), l.keras_kernel);
  op->backward_weights(x.data(), dy.data(), dw_cpu.data(), nullptr);
  expect_close(dw, dw_cpu, "backward weights");
}

TEST(CudnnConvLayout, AsymmetricSamePaddingGoesThroughAPaddedCopy) {
  const Conv2DParams p = keras(8, 10, 3, 4, 1, 3, 2, 1, true);
  ASSERT_EQ(p.pad_top, 0);
  ASSERT_EQ(p.pad_bottom, 1);
  const CudnnConvLayout l = cudnn_conv_layout(p);
  EXPECT_TRUE(l.padded());
  EXPECT_EQ(l.pad_h, 0);
  EXPECT_EQ(l.padded_h, 9);
  EXPECT_EQ(l.padded_w, 11);
  EXPECT_FALSE(cudnn_conv_layout(keras(7, 9, 3, 4, 1, 3, 1, 1, true)).padded());
}

TEST(CudnnConvLayout, CudnnArithmeticOnTheLayoutMatchesTheCpuBackend) {
  for (const Case& c : {
           Case{"same3x3s2_asymmetric", keras(8, 10, 3, 4, 1, 3, 2, 1, true)},
           Case{"same3x3s2_symmetric_odd", keras(7, 9, 3, 5, 1, 3, 2, 1, true)},
           Case{"same2x2s1_even_kernel", keras(5, 6, 2, 3, 1, 2, 1, 1, true)},
           Case{"same3x3s1", keras(6, 7, 3, 4, 1, 3, 1, 1, true)},
           Case{"valid3x3s2", keras(9, 8, 3, 2, 1, 3, 2, 1, false)},
           Case{"grouped_same3x3s2", keras(8, 8, 6, 9, 3, 3, 2, 1, true)},
           Case{"depthwise_multiplier2_same3x3s2", keras(6, 7, 4, 8, 4, 3, 2, 1, true)},
           Case{"depthwise_same5x5s2", keras(9, 9, 5, 5, 5, 5, 2, 1, true)},
           Case{"dilated_same2x2d3", keras(7, 8, 3, 2, 1, 2, 1, 3, true)},
       })
    check_case(c);
}

TEST(CudnnConvLayout, TheKernelViewsAddressKerasAndCudnnLayouts) {
  // Kernel 1x2 over 2 input and 3 output channels: Keras index ((i * kw + j) * in + c) * out + o, cuDNN's
  // ((o * kh + i) * kw + j) * in + c.
  const Conv2DParams p{
      .batch = 1, .in_h = 1, .in_w = 2, .in_c = 2, .out_h = 1, .out_w = 1, .out_c = 3, .kernel_h = 1, .kernel_w = 2};
  const CudnnConvLayout l = cudnn_conv_layout(p);
  for (Index o = 0; o < 3; ++o)
    for (Index c = 0; c < 2; ++c)
      for (Index j = 0; j < 2; ++j) {
        EXPECT_EQ(o * l.keras_kernel.n + c * l.keras_kernel.c + j * l.keras_kernel.w, (j * 2 + c) * 3 + o);
        EXPECT_EQ(o * l.cudnn_filter.n + c * l.cudnn_filter.c + j * l.cudnn_filter.w, (o * 2 + j) * 2 + c);
      }
}

}  // namespace
}  // namespace tower::backend::cuda
