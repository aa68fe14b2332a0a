// The CPU (oneDNN) Pool2DOp against naive NHWC loops: max and exclude-padding average pooling, forward in
// training and inference mode and backward, for valid, symmetric and asymmetric 'same' padding, non-square
// windows and strides, strides larger than the window, and odd channel counts. Max-pooling inputs are
// distinct values so each window has one argmax.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "api/backend/backend.h"
#include "api/core/random.h"
#include "backend/backend_testing.h"

namespace tower::backend {
namespace {

using namespace backend_testing;

void expect_close(const std::vector<float>& actual, const std::vector<float>& expected, const std::string& what) {
  backend_testing::expect_close(actual, expected, what, 1e-5f);
}

// Fills out_h/out_w from the other fields.
Pool2DParams with_out(Pool2DParams p) {
  p.out_h = (p.in_h + p.pad_top + p.pad_bottom - p.pool_h) / p.stride_h + 1;
  p.out_w = (p.in_w + p.pad_left + p.pad_right - p.pool_w) / p.stride_w + 1;
  return p;
}


struct Case {
  std::string name;
  Pool2DParams p;
};
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class CpuPool2D : public ::testing::TestWithParam<std::tuple<Case, PoolKind>> {};

TEST_P(CpuPool2D, MatchesNaiveLoops) {
  Pool2DParams p = std::get<0>(GetParam()).p;
  p.kind = std::get<1>(GetParam());
  const bool is_max = p.kind == PoolKind::max;
  const std::vector<float> x = is_max ? distinct_values(x_size(p), 1) : random_values(x_size(p), 1);
  const std::vector<float> dy = random_values(y_size(p), 2);
  std::vector<float> y_ref(static_cast<std::size_t>(y_size(p))), dx_ref(x.size(), 0.f);
  for_each_window(p, [&](Index yi, const std::vector<Index>& window) {
    ASSERT_FALSE(window.empty());
    if (is_max) {
      const Index arg = *std::max_element(window.begin(), window.end(), [&](Index a, Index b) { return x[a] < x[b]; });
      y_ref[yi] = x[arg];
      dx_ref[arg] += dy[yi];
    } else {
      double s = 0;
      for (Index i : window) s += x[i];
      y_ref[yi] = static_cast<float>(s / static_cast<double>(window.size()));
      for (Index i : window) dx_ref[i] += dy[yi] / static_cast<float>(window.size());
    }
  });

  auto op = get(Device::cpu()).make_pool2d(p);
  std::vector<float> y(y_ref.size(), 99.f), dx(x.size(), 99.f);
  op->forward(x.data(), y.data(), false);
  expect_close(y, y_ref, "inference forward");
  std::fill(y.begin(), y.end(), 99.f);
  op->forward(x.data(), y.data(), true);
  expect_close(y, y_ref, "training forward");
  op->backward(dy.data(), dx.data());
  expect_close(dx, dx_ref, "backward");
}

// 'same' cases use TF's padding: pad_total = max((out - 1) * stride + pool - in, 0), the extra on the bottom/right.
INSTANTIATE_TEST_SUITE_P(
    Shapes, CpuPool2D,
    ::testing::Combine(::testing::Values(Case{"valid2x2", with_out({.batch = 2, .in_h = 6, .in_w = 6, .channels = 3})},
                                         Case{"valid3x3s2_odd", with_out({.batch = 1,
                                                                          .in_h = 7,
                                                                          .in_w = 9,
                                                                          .channels = 5,
                                                                          .pool_h = 3,
                                                                          .pool_w = 3,
                                                                          .stride_h = 2,
                                                                          .stride_w = 2})},
                                         Case{"same3x3s2_symmetric", with_out({.batch = 2,
                                                                               .in_h = 7,
                                                                               .in_w = 7,
                                                                               .channels = 4,
                                                                               .pool_h = 3,
                                                                               .pool_w = 3,
                                                                               .stride_h = 2,
                                                                               .stride_w = 2,
                                                                               .pad_top = 1,
                                                                               .pad_bottom = 1,
                                                                               .pad_left = 1,
                                                                               .pad_right = 1})},
                                         Case{"same3x3s2_asymmetric", with_out({.batch = 2,
                                                                                .in_h = 6,
                                                                                .in_w = 8,
                                                                                .channels = 3,
                                                                                .pool_h = 3,
                                                                                .pool_w = 3,
                                                                                .stride_h = 2,
                                                                                .stride_w = 2,
                                                                                .pad_top = 0,
                                                                                .pad_bottom = 1,
                                                                                .pad_left = 0,
                                                                                .pad_right = 1})},
                                         Case{"same2x3s1", with_out({.batch = 1,
                                                                     .in_h = 4,
                                                                     .in_w = 5,
                                                                     .channels = 2,
                                                                     .pool_h = 2,
                                                                     .pool_w = 3,
                                                                     .stride_h = 1,
                                                                     .stride_w = 1,
                                                                     .pad_top = 0,
                                                                     .pad_bottom = 1,
                                                                     .pad_left = 1,
                                                                     .pad_right = 1})},
                                         Case{"stride_larger_than_pool", with_out({.batch = 2,
                                                                                   .in_h = 7,
                                                                                   .in_w = 7,
                                                                                   .channels = 3,
                                                                                   .pool_h = 2,
                                                                                   .pool_w = 2,
                                                                                   .stride_h = 3,
                                                                                   .stride_w = 3})},
                                         Case{"channels144", with_out({.batch = 2,
                                                                       .in_h = 5,
                                                                       .in_w = 5,
                                                                       .channels = 144,
                                                                       .pool_h = 2,
                                                                       .pool_w = 2,
                                                                       .stride_h = 2,
                                                                       .stride_w = 2,
                                                                       .pad_bottom = 1,
                                                                       .pad_right = 1})}),
                       ::testing::Values(PoolKind::max, PoolKind::average)),
    [](const auto& info) {
      return std::get<0>(info.param).name + (std::get<1>(info.param) == PoolKind::max ? "_max" : "_average");
    });

TEST(CpuPool2DOp, AverageSamePaddingDividesByTheValidCount) {
  // 2x2 ones, pool 3x3 stride 1 'same' (pad 1 each side): every window covers the 4 real elements = 1.0.
  Pool2DParams p = with_out({.kind = PoolKind::average,
                             .batch = 1,
                             .in_h = 2,
                             .in_w = 2,
                             .channels = 1,
                             .pool_h = 3,
                             .pool_w = 3,
                             .stride_h = 1,
                             .stride_w = 1,
                             .pad_top = 1,
                             .pad_bottom = 1,
                             .pad_left = 1,
                             .pad_right = 1});
  auto op = get(Device::cpu()).make_pool2d(p);
  std::vector<float> x{1, 2, 3, 4}, y(4);
  op->forward(x.data(), y.data(), false);
  expect_close(y, {2.5f, 2.5f, 2.5f, 2.5f}, "y");
}

TEST(CpuPool2DOp, MaxBackwardNeedsATrainingForward) {
  Pool2DParams p = with_out({.batch = 1, .in_h = 4, .in_w = 4, .channels = 1});
  auto op = get(Device::cpu()).make_pool2d(p);
  std::vector<float> x(16, 0.f), y(4), dy(4, 1.f), dx(16);
  op->forward(x.data(), y.data(), false);
  EXPECT_THROW(op->backward(dy.data(), dx.data()), std::logic_error);
}

TEST(CpuPool2DOp, RejectsInconsistentParameters) {
  Backend& be = get(Device::cpu());
  Pool2DParams p = with_out({.batch = 1, .in_h = 4, .in_w = 4, .channels = 1});
  p.out_h = 3;  // 4 with pool 2 stride 2 gives 2
  EXPECT_THROW(be.make_pool2d(p), std::invalid_argument);
  Pool2DParams q = with_out({.batch = 1, .in_h = 4, .in_w = 4, .channels = 1});
  q.stride_h = 0;
  EXPECT_THROW(be.make_pool2d(q), std::invalid_argument);
}

TEST(CpuPool2DOp, EmptyBatchIsANoOp) {
  Pool2DParams p = with_out({.batch = 0, .in_h = 4, .in_w = 4, .channels = 3});
  auto op = get(Device::cpu()).make_pool2d(p);
  op->forward(nullptr, nullptr, true);
  op->backward(nullptr, nullptr);
}

}  // namespace
}  // namespace tower::backend
