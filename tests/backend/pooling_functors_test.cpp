// The pooling functors of api/backend/math/pooling.h, which the CUDA backend runs in its kernels, run here in host
// loops and compared bit for bit with the CPU backend's pooling (cpu/cpu_pool2d.cpp): max and average, forward
// and backward, on odd shapes with 2x2 and 3x3 windows, strides 1 and 2 and Keras' "valid" and "same" padding
// (asymmetric where the total is odd). Max-pooling inputs are distinct values, so each window has one argmax.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "api/backend/backend.h"
#include "api/backend/math/pooling.h"
#include "api/core/random.h"
#include "backend/backend_testing.h"

namespace tower::backend {
namespace {

using namespace backend_testing;

// The parameters Keras' MaxPooling2D / AveragePooling2D pass for a square window and stride on [2, in_h, in_w, 5]:
// "same" pads (out - 1) * stride + pool - in in total, the odd one at the bottom/right.
Pool2DParams keras_params(PoolKind kind, Index in_h, Index in_w, int pool, int stride, bool same) {
  Pool2DParams p{.kind = kind, .batch = 2, .in_h = in_h, .in_w = in_w, .channels = 5};
  p.pool_h = p.pool_w = pool;
  p.stride_h = p.stride_w = stride;
  const auto axis = [&](Index in, Index& out, int& before, int& after) {
    out = same ? (in + stride - 1) / stride : (in - pool) / stride + 1;
    const int total = same ? std::max(static_cast<int>((out - 1) * stride + pool - in), 0) : 0;
    before = total / 2;
    after = total - before;
  };
  axis(in_h, p.out_h, p.pad_top, p.pad_bottom);
  axis(in_w, p.out_w, p.pad_left, p.pad_right);
  return p;
}

std::string describe(const Pool2DParams& p) {
  return std::string(p.kind == PoolKind::max ? "max" : "average") + " in " + std::to_string(p.in_h) + "x" +
         std::to_string(p.in_w) + " pool " + std::to_string(p.pool_h) + " stride " + std::to_string(p.stride_h) +
         " pads t" + std::to_string(p.pad_top) + " b" + std::to_string(p.pad_bottom) + " l" +
         std::to_string(p.pad_left) + " r" + std::to_string(p.pad_right);
}


// f(i) for every i in [0, n): the host form of the CUDA backend's for_each.
template <class F>
void run(Index n, const F& f) {
  for (Index i = 0; i < n; ++i) f(i);
}

// Every shape the brief of the functors names: 2x2 and 3x3 windows, strides 1 and 2, "valid" and "same", on
// odd image sizes.
std::vector<Pool2DParams> keras_cases(PoolKind kind) {
  std::vector<Pool2DParams> cases;
  for (const auto& [in_h, in_w] : {std::pair<Index, Index>{7, 9}, {6, 5}})
    for (int pool : {2, 3})
      for (int stride : {1, 2})
        for (bool same : {false, true}) cases.push_back(keras_params(kind, in_h, in_w, pool, stride, same));
  Pool2DParams gaps = keras_params(kind, 7, 8, 2, 3, false);  // a stride wider than the window skips inputs
  cases.push_back(gaps);
  return cases;
}

TEST(PoolingFunctors, MaxForwardAndBackwardMatchTheCpuBackend) {
  for (const Pool2DParams& p : keras_cases(PoolKind::max)) {
    SCOPED_TRACE(describe(p));
    const std::vector<float> x = distinct_values(x_size(p), 3), dy = random_values(y_size(p), 4);
    std::vector<float> y(static_cast<std::size_t>(y_size(p))), dx(x.size(), 99.f);
    std::vector<Index> argmax(y.size(), -1);
    run(y_size(p), math::MaxPool2D{p, x.data(), y.data(), argmax.data()});
    run(x_size(p), math::MaxPool2DBackward{p, dy.data(), argmax.data(), dx.data()});
    for (std::size_t i = 0; i < y.size(); ++i) ASSERT_EQ(x[static_cast<std::size_t>(argmax[i])], y[i]) << i;

    std::vector<float> y_inference(y.size());
    run(y_size(p), math::MaxPool2D{p, x.data(), y_inference.data(), nullptr});
    EXPECT_EQ(y_inference, y);

    auto op = get(Device::cpu()).make_pool2d(p);
    std::vector<float> y_cpu(y.size()), dx_cpu(x.size());
    op->forward(x.data(), y_cpu.data(), true);
    op->backward(dy.data(), dx_cpu.data());
    EXPECT_EQ(y, y_cpu);
    EXPECT_EQ(dx, dx_cpu);
  }
}

TEST(PoolingFunctors, AverageForwardAndBackwardMatchTheCpuBackend) {
  for (const Pool2DParams& p : keras_cases(PoolKind::average)) {
    SCOPED_TRACE(describe(p));
    const std::vector<float> x = random_values(x_size(p), 5), dy = random_values(y_size(p), 6);
    std::vector<float> y(static_cast<std::size_t>(y_size(p))), dx(x.size(), 99.f);
    run(y_size(p), math::AveragePool2D{p, x.data(), y.data()});
    run(x_size(p), math::AveragePool2DBackward{p, dy.data(), dx.data()});

    auto op = get(Device::cpu()).make_pool2d(p);
    std::vector<float> y_cpu(y.size()), dx_cpu(x.size());
    op->forward(x.data(), y_cpu.data(), true);
    op->backward(dy.data(), dx_cpu.data());
    EXPECT_EQ(y, y_cpu);
    EXPECT_EQ(dx, dx_cpu);
  }
}

TEST(PoolingFunctors, MaxBackwardAddsTheGradientsOfOverlappingWindowsWithTheSameArgmax) {
  // One channel 1x3 row [0, 5, 1] with a 1x2 window at stride 1: both windows pick the 5.
  const Pool2DParams p{.batch = 1,
                       .in_h = 1,
                       .in_w = 3,
                       .channels = 1,
                       .out_h = 1,
                       .out_w = 2,
                       .pool_h = 1,
                       .pool_w = 2,
                       .stride_h = 1,
                       .stride_w = 1};
  const std::vector<float> x{0.f, 5.f, 1.f}, dy{0.25f, 2.f};
  std::vector<float> y(2), dx(3);
  std::vector<Index> argmax(2);
  run(2, math::MaxPool2D{p, x.data(), y.data(), argmax.data()});
  run(3, math::MaxPool2DBackward{p, dy.data(), argmax.data(), dx.data()});
  EXPECT_EQ(y, (std::vector<float>{5.f, 5.f}));
  EXPECT_EQ(argmax, (std::vector<Index>{1, 1}));
  EXPECT_EQ(dx, (std::vector<float>{0.f, 2.25f, 0.f}));
}

TEST(PoolingFunctors, AverageDividesByTheCountOfInputElements) {
  // 2x2 ones-to-fours with a 3x3 window at stride 1 padded 1 on every side: each window holds all four inputs.
  const Pool2DParams p{.kind = PoolKind::average,
                       .batch = 1,
                       .in_h = 2,
                       .in_w = 2,
                       .channels = 1,
                       .out_h = 2,
                       .out_w = 2,
                       .pool_h = 3,
                       .pool_w = 3,
                       .stride_h = 1,
                       .stride_w = 1,
                       .pad_top = 1,
                       .pad_bottom = 1,
                       .pad_left = 1,
                       .pad_right = 1};
  const std::vector<float> x{1.f, 2.f, 3.f, 4.f};
  std::vector<float> y(4);
  run(4, math::AveragePool2D{p, x.data(), y.data()});
  EXPECT_EQ(y, (std::vector<float>{2.5f, 2.5f, 2.5f, 2.5f}));
}

TEST(PoolingFunctors, CoveringWindowsAreExactlyTheWindowsThatHoldThePosition) {
  for (Index in = 1; in <= 9; ++in)
    for (int pool = 1; pool <= 4; ++pool)
      for (int stride = 1; stride <= 4; ++stride)
        for (int pad = 0; pad < pool; ++pad) {
          const Index out = (in + 2 * pad - pool) / stride + 1;
          if (out <= 0) continue;
          for (Index i = 0; i < in; ++i) {
            std::vector<Index> expected;
            for (Index o = 0; o < out; ++o) {
              const math::Span w = math::pool_window(o, pool, stride, pad, in);
              if (w.begin <= i && i < w.end) expected.push_back(o);
            }
            const math::Span got = math::covering_windows(i, pool, stride, pad, out);
            std::vector<Index> actual;
            for (Index o = got.begin; o < got.end; ++o) actual.push_back(o);
            EXPECT_EQ(actual, expected) << "in " << in << " pool " << pool << " stride " << stride << " pad " << pad
                                        << " position " << i;
          }
        }
}

TEST(PoolingFunctors, ParameterCheckAgreesWithTheCpuBackend) {
  Backend& cpu = get(Device::cpu());
  std::vector<Pool2DParams> bad;
  Pool2DParams p = keras_params(PoolKind::max, 7, 9, 3, 2, true);
  bad.push_back(p);
  bad.back().out_h += 1;
  bad.push_back(p);
  bad.back().pad_left = 3;  // a padding as wide as the window leaves a window without input
  bad.push_back(p);
  bad.back().stride_w = 0;
  bad.push_back(p);
  bad.back().channels = 0;
  for (const Pool2DParams& q : keras_cases(PoolKind::max)) EXPECT_TRUE(math::pool2d_params_valid(q)) << describe(q);
  for (const Pool2DParams& q : bad) {
    EXPECT_FALSE(math::pool2d_params_valid(q)) << describe(q);
    EXPECT_THROW(cpu.make_pool2d(q), std::invalid_argument) << describe(q);
  }
}

}  // namespace
}  // namespace tower::backend
