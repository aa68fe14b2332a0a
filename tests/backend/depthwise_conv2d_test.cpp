// The depthwise functors the CUDA backend runs (math/depthwise_conv2d.h) against the CPU backend's grouped
// convolution (oneDNN), forward (with bias and ReLU) and data gradient, by one and by four channels: MobileNetV2's
// shapes (3x3, stride 1 "same", stride 2 "valid" after ZeroPadding2D), Keras' asymmetric "same" at stride 2, a
// dilation, a channel multiplier of 2 and a 5x3 kernel.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "api/backend/backend.h"
#include "api/backend/math/depthwise_conv2d.h"
#include "backend/backend_testing.h"

namespace tower::backend {
namespace {

using backend_testing::random_values;

struct Case {
  std::string name;
  Conv2DParams p;
};

// A depthwise Conv2DParams: in [batch, h, w, c], multiplier m, kernel kh x kw, stride s, dilation d, padding
// (top, bottom, left, right); the output size follows.
Conv2DParams depthwise(Index batch, Index h, Index w, Index c, Index m, int kh, int kw, int s, int d, int top,
                       int bottom, int left, int right, bool relu) {
  Conv2DParams p;
  p.batch = batch, p.in_h = h, p.in_w = w, p.in_c = c, p.out_c = c * m;
  p.kernel_h = kh, p.kernel_w = kw, p.stride_h = p.stride_w = s, p.dilation_h = p.dilation_w = d;
  p.pad_top = top, p.pad_bottom = bottom, p.pad_left = left, p.pad_right = right;
  p.out_h = (h + top + bottom - d * (kh - 1) - 1) / s + 1;
  p.out_w = (w + left + right - d * (kw - 1) - 1) / s + 1;
  p.groups = static_cast<int>(c);
  p.relu = relu;
  return p;
}

void expect_close(const std::vector<float>& got, const std::vector<float>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int bad = 0;
  for (std::size_t i = 0; i < got.size(); ++i)
    if (!(std::fabs(got[i] - want[i]) <= 1e-5f * (1.f + std::fabs(want[i]))) && ++bad <= 5)
      ADD_FAILURE() << what << " element " << i << ": got " << got[i] << ", the CPU backend " << want[i];
  EXPECT_EQ(bad, 0) << what;
}

template <int V>
void check(const Conv2DParams& p, const std::string& name) {
  SCOPED_TRACE(name + (V == 4 ? ", by four channels" : ", by one channel"));
  ASSERT_TRUE(math::depthwise_fits(p));
  const Index xs = p.batch * p.in_h * p.in_w * p.in_c, ys = p.batch * p.out_h * p.out_w * p.out_c;
  const std::vector<float> x = random_values(xs, 1), w = random_values(Index{p.kernel_h} * p.kernel_w * p.out_c, 2),
                           bias = random_values(p.out_c, 3), dy = random_values(ys, 4);
  auto op = get(Device::cpu()).make_conv2d(p);
  std::vector<float> y(ys), y_cpu(ys), dx(xs, 99.f), dx_cpu(xs);
  op->forward(x.data(), w.data(), bias.data(), y_cpu.data());
  for (Index i = 0; i < ys / V; ++i) math::DepthwiseConv2DForward<V>{x.data(), w.data(), bias.data(), y.data(), p}(i);
  expect_close(y, y_cpu, "forward");
  op->backward_data(dy.data(), w.data(), dx_cpu.data());
  for (Index i = 0; i < xs / V; ++i) math::DepthwiseConv2DBackwardData<V>{dy.data(), w.data(), dx.data(), p}(i);
  expect_close(dx, dx_cpu, "backward data");
}

TEST(DepthwiseConv2D, FunctorsMatchTheCpuBackend) {
  const Case cases[] = {
      {"3x3 stride 1 same", depthwise(2, 9, 7, 8, 1, 3, 3, 1, 1, 1, 1, 1, 1, false)},
      {"3x3 stride 2 valid (after ZeroPadding2D)", depthwise(2, 9, 9, 12, 1, 3, 3, 2, 1, 0, 0, 0, 0, true)},
      {"3x3 stride 2 same (asymmetric)", depthwise(3, 8, 10, 4, 1, 3, 3, 2, 1, 0, 1, 0, 1, false)},
      {"3x3 dilation 2 same", depthwise(1, 11, 9, 8, 1, 3, 3, 1, 2, 2, 2, 2, 2, false)},
      {"5x3 stride 1 same, odd channels", depthwise(2, 6, 7, 5, 1, 5, 3, 1, 1, 2, 2, 1, 1, true)},
      {"3x3 multiplier 2", depthwise(2, 7, 7, 3, 2, 3, 3, 1, 1, 1, 1, 1, 1, false)},
  };
  for (const Case& c : cases) {
    check<1>(c.p, c.name);
    if (math::depthwise_by_four(c.p)) check<4>(c.p, c.name);
  }
}

TEST(DepthwiseConv2D, OnlyDepthwiseShapesThatFitTheIndexingAreTaken) {
  Conv2DParams p = depthwise(2, 9, 7, 8, 1, 3, 3, 1, 1, 1, 1, 1, 1, false);
  EXPECT_TRUE(math::depthwise_fits(p));
  p.groups = 4;  // grouped, not depthwise
  EXPECT_FALSE(math::depthwise_fits(p));
  p.groups = 1;
  EXPECT_FALSE(math::depthwise_fits(p));
  p = depthwise(Index{1} << 16, 128, 128, 8, 1, 3, 3, 1, 1, 1, 1, 1, 1, false);  // 2^33 elements
  EXPECT_FALSE(math::depthwise_fits(p));
}

}  // namespace
}  // namespace tower::backend
