// The CPU (oneDNN) Conv2DOp against naive loops over the Keras layouts: forward, backward_data and
// backward_weights for plain, strided 'same' (asymmetric padding), dilated, grouped and depthwise convolutions,
// and forward with a fused ReLU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "api/backend/backend.h"
#include "api/core/random.h"
#include "backend/backend_testing.h"

namespace tower::backend {
namespace {

using backend_testing::random_values;

struct Case {
  std::string name;
  Conv2DParams p;
};

// Fills in out_h/out_w from the other fields.
Conv2DParams with_out(Conv2DParams p) {
  p.out_h = (p.in_h + p.pad_top + p.pad_bottom - (p.kernel_h - 1) * p.dilation_h - 1) / p.stride_h + 1;
  p.out_w = (p.in_w + p.pad_left + p.pad_right - (p.kernel_w - 1) * p.dilation_w - 1) / p.stride_w + 1;
  return p;
}

Index x_size(const Conv2DParams& p) { return p.batch * p.in_h * p.in_w * p.in_c; }
Index y_size(const Conv2DParams& p) { return p.batch * p.out_h * p.out_w * p.out_c; }
Index w_size(const Conv2DParams& p) { return Index{p.kernel_h} * p.kernel_w * (p.in_c / p.groups) * p.out_c; }

// Calls f(x_index, w_index, y_index) for every multiply of the convolution, in Keras layouts.
template <class F> void for_each_tap(const Conv2DParams& p, F&& f) {
  const Index icg = p.in_c / p.groups, ocg = p.out_c / p.groups;
  for (Index n = 0; n < p.batch; ++n)
    for (Index oh = 0; oh < p.out_h; ++oh)
      for (Index ow = 0; ow < p.out_w; ++ow)
        for (Index oc = 0; oc < p.out_c; ++oc) {
          const Index group = oc / ocg;
          const Index yi = ((n * p.out_h + oh) * p.out_w + ow) * p.out_c + oc;
          for (Index kh = 0; kh < p.kernel_h; ++kh)
            for (Index kw = 0; kw < p.kernel_w; ++kw) {
              const Index ih = oh * p.stride_h - p.pad_top + kh * p.dilation_h;
              const Index iw = ow * p.stride_w - p.pad_left + kw * p.dilation_w;
              if (ih < 0 || ih >= p.in_h || iw < 0 || iw >= p.in_w) continue;
              for (Index ic = 0; ic < icg; ++ic) {
                const Index xi = ((n * p.in_h + ih) * p.in_w + iw) * p.in_c + group * icg + ic;
                const Index wi = ((kh * p.kernel_w + kw) * icg + ic) * p.out_c + oc;
                f(xi, wi, yi);
              }
            }
        }
}

void expect_close(const std::vector<float>& actual, const std::vector<double>& expected, const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  int bad = 0;
  for (std::size_t i = 0; i < actual.size(); ++i)
    if (!(std::fabs(actual[i] - expected[i]) <= 1e-4 + 1e-4 * std::fabs(expected[i])) && ++bad <= 5)
      ADD_FAILURE() << what << " element " << i << ": got " << actual[i] << ", expected " << expected[i];
  EXPECT_EQ(bad, 0) << what;
}

// Runs every entry point of the op twice on outputs pre-filled with garbage (so accumulating instead of
// overwriting would show) and compares with the naive loops.
void check_case(const Case& c) {
  SCOPED_TRACE(c.name);
  const Conv2DParams& p = c.p;
  auto op = get(Device::cpu()).make_conv2d(p);
  const std::vector<float> x = random_values(x_size(p), 1), w = random_values(w_size(p), 2),
                           bias = random_values(p.out_c, 3), dy = random_values(y_size(p), 4);

  std::vector<double> y_ref(static_cast<std::size_t>(y_size(p))), dx_ref(x.size()), dw_ref(w.size()),
      db_ref(bias.size());
  for_each_tap(p, [&](Index xi, Index wi, Index yi) {
    y_ref[yi] += static_cast<double>(x[xi]) * w[wi];
    dx_ref[xi] += static_cast<double>(dy[yi]) * w[wi];
    dw_ref[wi] += static_cast<double>(dy[yi]) * x[xi];
  });
  std::vector<double> y_bias_ref = y_ref;
  for (std::size_t i = 0; i < y_ref.size(); ++i) {
    y_bias_ref[i] += bias[i % bias.size()];
    db_ref[i % bias.size()] += dy[i];
  }
  if (p.relu)
    for (std::vector<double>* y : {&y_ref, &y_bias_ref})
      for (double& v : *y) v = std::max(v, 0.0);

  for (int round = 0; round < 2; ++round) {
    std::vector<float> y(y_ref.size(), 7.f), dx(x.size(), 7.f), dw(w.size(), 7.f), db(bias.size(), 7.f);
    op->forward(x.data(), w.data(), bias.data(), y.data());
    expect_close(y, y_bias_ref, "forward with bias");
    op->forward(x.data(), w.data(), nullptr, y.data());
    expect_close(y, y_ref, "forward without bias");
    op->backward_data(dy.data(), w.data(), dx.data());
    expect_close(dx, dx_ref, "backward_data");
    op->backward_weights(x.data(), dy.data(), dw.data(), db.data());
    expect_close(dw, dw_ref, "backward_weights kernel");
    expect_close(db, db_ref, "backward_weights bias");
    std::fill(dw.begin(), dw.end(), 7.f);
    op->backward_weights(x.data(), dy.data(), dw.data(), nullptr);
    expect_close(dw, dw_ref, "backward_weights kernel without bias");
  }
}

Conv2DParams params(Index batch, Index h, Index w, Index in_c, Index out_c, int k, int stride = 1, int groups = 1) {
  Conv2DParams p;
  p.batch = batch;
  p.in_h = h;
  p.in_w = w;
  p.in_c = in_c;
  p.out_c = out_c;
  p.kernel_h = p.kernel_w = k;
  p.stride_h = p.stride_w = stride;
  p.groups = groups;
  return p;
}

TEST(CpuConv2D, PlainValid) { check_case({"plain 3x3", with_out(params(2, 5, 6, 3, 4, 3))}); }

TEST(CpuConv2D, NonSquareKernelOddSizes) {
  Conv2DParams p = params(3, 7, 5, 5, 7, 1);
  p.kernel_h = 3;
  p.kernel_w = 2;
  check_case({"3x2 kernel", with_out(p)});
}

TEST(CpuConv2D, StridedSameWithAsymmetricPadding) {
  // Keras 'same', stride 2, 3x3 on 7x8: out 4x4, pads (top 1, bottom 1) and (left 0, right 1).
  Conv2DParams p = params(2, 7, 8, 3, 5, 3, 2);
  p.pad_top = 1;
  p.pad_bottom = 1;
  p.pad_left = 0;
  p.pad_right = 1;
  p = with_out(p);
  ASSERT_EQ(p.out_h, 4);
  ASSERT_EQ(p.out_w, 4);
  check_case({"strided same", p});
}

TEST(CpuConv2D, StrideTwoOneByOne) { check_case({"1x1 stride 2", with_out(params(2, 9, 7, 6, 5, 1, 2))}); }

TEST(CpuConv2D, Dilated) {
  // 3x3 dilated by 2 with 'same' padding (2 on each side), and a rectangular dilation without padding.
  Conv2DParams p = params(2, 7, 6, 3, 4, 3);
  p.dilation_h = p.dilation_w = 2;
  p.pad_top = p.pad_bottom = p.pad_left = p.pad_right = 2;
  check_case({"dilated 2 same", with_out(p)});
  Conv2DParams q = params(1, 9, 8, 2, 3, 3);
  q.dilation_h = 3;
  q.dilation_w = 2;
  check_case({"dilated 3x2 valid", with_out(q)});
}

TEST(CpuConv2D, Grouped) {
  Conv2DParams p = params(2, 6, 5, 4, 6, 3, 1, 2);
  p.pad_top = p.pad_bottom = p.pad_left = p.pad_right = 1;
  check_case({"groups 2", with_out(p)});
}

TEST(CpuConv2D, Depthwise) {
  Conv2DParams m1 = params(2, 6, 7, 5, 5, 3, 1, 5);
  m1.pad_top = m1.pad_bottom = m1.pad_left = m1.pad_right = 1;
  check_case({"depthwise multiplier 1", with_out(m1)});
  Conv2DParams m2 = params(2, 7, 5, 3, 6, 3, 2, 3);
  m2.pad_top = 1;
  m2.pad_bottom = 1;
  m2.pad_left = 1;
  m2.pad_right = 1;
  check_case({"depthwise multiplier 2 strided", with_out(m2)});
}

TEST(CpuConv2D, BlockedChannelCounts) {
  // Channel counts at and around oneDNN's SIMD block sizes, where it picks blocked weight layouts.
  check_case({"1x1 32->48", with_out(params(2, 5, 5, 32, 48, 1))});
  check_case({"3x3 17->19", [] {
                Conv2DParams p = params(1, 6, 6, 17, 19, 3);
                p.pad_top = p.pad_left = 1;
                p.pad_bottom = p.pad_right = 1;
                return with_out(p);
              }()});
  Conv2DParams dw = params(2, 8, 8, 32, 32, 3, 2, 32);
  dw.pad_top = dw.pad_left = 0;
  dw.pad_bottom = dw.pad_right = 1;
  check_case({"depthwise 32 stride 2 same", with_out(dw)});
}

TEST(CpuConv2D, FusedRelu) {
  Conv2DParams p = with_out(params(2, 6, 5, 3, 4, 3));
  p.relu = true;
  check_case({"plain 3x3 with relu", p});
  Conv2DParams dw = with_out(params(2, 6, 6, 8, 8, 3, 1, 8));
  dw.relu = true;
  check_case({"depthwise with relu", dw});
}

TEST(CpuConv2D, ManyRowsSplitTheBiasGradientOverThreads) {
  check_case({"32 channels over 2592 positions", with_out(params(8, 20, 20, 2, 32, 3))});
}

TEST(CpuConv2D, RejectsInconsistentParameters) {
  Conv2DParams p = with_out(params(1, 5, 5, 3, 4, 3));
  p.out_h += 1;
  EXPECT_THROW(get(Device::cpu()).make_conv2d(p), std::invalid_argument);
  EXPECT_THROW(get(Device::cpu()).make_conv2d(with_out(params(1, 5, 5, 3, 4, 3, 1, 2))), std::invalid_argument);
}

}  // namespace
}  // namespace tower::backend
