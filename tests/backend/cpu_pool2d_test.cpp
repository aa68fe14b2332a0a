// The CPU Pool2DOp (cpu/cpu_pool2d.cpp) against naive NHWC loops: max and exclude-padding average pooling, forward
// in training and inference mode and backward, for valid, symmetric and asymmetric 'same' padding, non-square
// windows and strides, strides larger than the window, and odd channel counts (distinct max-pooling inputs, so
// each window has one argmax). Then ties against the functors the CUDA backend runs (bit for bit), the same bits
// on one and two threads, and the gradients against finite differences.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "api/backend/backend.h"
#include "api/backend/math/pooling.h"
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

// Max pooling over few distinct values (many ties) and average pooling, on odd sizes, overlapping and skipping
// windows and channel counts that are no multiple of a vector: the CPU kernel gives exactly the bits of the
// functors of math/pooling.h run element by element (what the CUDA backend runs), ties going to the first
// element in row-major window order.
TEST(CpuPool2DOp, MatchesTheFunctorsBitForBitTiesIncluded) {
  const auto params = [](PoolKind kind, Index channels, int pool, int stride, int pad_a, int pad_b) {
    return with_out({.kind = kind,
                     .batch = 3,
                     .in_h = 9,
                     .in_w = 11,
                     .channels = channels,
                     .pool_h = pool,
                     .pool_w = pool,
                     .stride_h = stride,
                     .stride_w = stride,
                     .pad_top = pad_a,
                     .pad_bottom = pad_b,
                     .pad_left = pad_b,
                     .pad_right = pad_a});
  };
  for (const PoolKind kind : {PoolKind::max, PoolKind::average})
    for (const Pool2DParams& p : {params(kind, 37, 3, 1, 1, 1), params(kind, 67, 3, 2, 0, 1),
                                  params(kind, 5, 2, 2, 0, 1), params(kind, 17, 2, 3, 0, 0)}) {
      SCOPED_TRACE(math::describe_pool2d(p));
      std::vector<float> x = random_values(x_size(p), 7);
      if (kind == PoolKind::max)
        for (float& v : x) v = std::round(v);  // -1, 0 and 1 only: most windows tie
      const std::vector<float> dy = random_values(y_size(p), 8);
      std::vector<float> y(static_cast<std::size_t>(y_size(p))), dx(x.size());
      std::vector<Index> argmax(y.size());
      if (kind == PoolKind::max) {
        for (Index i = 0; i < y_size(p); ++i) math::MaxPool2D{p, x.data(), y.data(), argmax.data()}(i);
        for (Index i = 0; i < x_size(p); ++i) math::MaxPool2DBackward{p, dy.data(), argmax.data(), dx.data()}(i);
      } else {
        for (Index i = 0; i < y_size(p); ++i) math::AveragePool2D{p, x.data(), y.data()}(i);
        for (Index i = 0; i < x_size(p); ++i) math::AveragePool2DBackward{p, dy.data(), dx.data()}(i);
      }
      auto op = get(Device::cpu()).make_pool2d(p);
      std::vector<float> y_cpu(y.size(), 99.f), y_inference(y.size(), 99.f), dx_cpu(x.size(), 99.f);
      op->forward(x.data(), y_inference.data(), false);
      op->forward(x.data(), y_cpu.data(), true);
      op->backward(dy.data(), dx_cpu.data());
      EXPECT_EQ(y_inference, y);
      EXPECT_EQ(y_cpu, y);
      EXPECT_EQ(dx_cpu, dx);
    }
}

// Big enough to be split over the threads: each row is computed by one thread in one order, so the bits do not
// depend on the thread count.
TEST(CpuPool2DOp, SameBitsOnOneAndTwoThreads) {
  const int threads = num_threads();
  for (const PoolKind kind : {PoolKind::max, PoolKind::average}) {
    const Pool2DParams p = with_out({.kind = kind,
                                     .batch = 5,
                                     .in_h = 29,
                                     .in_w = 27,
                                     .channels = 33,
                                     .pool_h = 3,
                                     .pool_w = 3,
                                     .stride_h = 2,
                                     .stride_w = 2,
                                     .pad_top = 1,
                                     .pad_bottom = 1,
                                     .pad_left = 1,
                                     .pad_right = 1});
    const std::vector<float> x = random_values(x_size(p), 9), dy = random_values(y_size(p), 10);
    std::vector<std::vector<float>> ys, dxs;
    for (const int t : {1, 2}) {
      set_num_threads(t);
      auto op = get(Device::cpu()).make_pool2d(p);
      ys.emplace_back(static_cast<std::size_t>(y_size(p)));
      dxs.emplace_back(x.size());
      op->forward(x.data(), ys.back().data(), true);
      op->backward(dy.data(), dxs.back().data());
    }
    set_num_threads(threads);
    EXPECT_EQ(ys[0], ys[1]);
    EXPECT_EQ(dxs[0], dxs[1]);
  }
}

// dx against central differences of L = sum(y * r): pooling is piecewise linear, and distinct max-pooling inputs
// 0.05 apart keep every argmax in place under a step of 1e-3.
TEST(CpuPool2DOp, GradientsMatchFiniteDifferences) {
  for (const PoolKind kind : {PoolKind::max, PoolKind::average}) {
    const Pool2DParams p = with_out({.kind = kind,
                                     .batch = 2,
                                     .in_h = 5,
                                     .in_w = 6,
                                     .channels = 3,
                                     .pool_h = 3,
                                     .pool_w = 2,
                                     .stride_h = 2,
                                     .stride_w = 1,
                                     .pad_top = 1,
                                     .pad_bottom = 1,
                                     .pad_left = 0,
                                     .pad_right = 1});
    SCOPED_TRACE(math::describe_pool2d(p));
    std::vector<float> x = distinct_values(x_size(p), 11);
    const std::vector<float> r = random_values(y_size(p), 12);
    auto op = get(Device::cpu()).make_pool2d(p);
    std::vector<float> y(r.size()), dx(x.size());
    const auto loss = [&] {
      op->forward(x.data(), y.data(), true);
      double l = 0;
      for (std::size_t i = 0; i < y.size(); ++i) l += static_cast<double>(y[i]) * r[i];
      return l;
    };
    loss();
    op->backward(r.data(), dx.data());
    const float step = 1e-3f;
    std::vector<float> numeric(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) {
      const float saved = x[i];
      x[i] = saved + step;
      const double up = loss();
      x[i] = saved - step;
      const double down = loss();
      x[i] = saved;
      numeric[i] = static_cast<float>((up - down) / (2.0 * step));
    }
    backend_testing::expect_close(dx, numeric, "dx", 2e-3f);
  }
}

}  // namespace
}  // namespace tower::backend
