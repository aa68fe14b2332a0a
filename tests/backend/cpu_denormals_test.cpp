// backend::flush_denormals: the CPU kernels flush denormal floats to zero while on (the default, as TensorFlow's
// CPU kernels), compute them exactly while off, on the caller's thread (short loops) and on OpenMP's (long loops),
// and leave the calling thread's own floating-point setting as it was.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

#include "api/backend/backend.h"
#include "api/core/device.h"

namespace tower::backend {
namespace {

#if defined(__x86_64__) || defined(__i386__)

// Restores the process-wide switch after each test.
class Denormals : public ::testing::Test {
 protected:
  void TearDown() override { set_flush_denormals(saved_); }
  bool saved_ = flush_denormals();
};

const float kDenormal = FLT_MIN / 64;  // about 1.8e-40: representable only as a denormal

// y = a * b elementwise for n elements, each a product of two normal floats whose exact result is denormal.
std::vector<float> products(Index n) {
  std::vector<float> a(static_cast<std::size_t>(n), FLT_MIN), b(static_cast<std::size_t>(n), 1.f / 64), y(a.size());
  get(Device::cpu()).mul(a.data(), b.data(), y.data(), n);
  return y;
}

// Adam's momentum m += (g - m) * (1 - beta_1) for a denormal m and a zero gradient, for n elements.
std::vector<float> decayed_momentum(Index n) {
  std::vector<float> var(static_cast<std::size_t>(n), 1.f), g(var.size(), 0.f), m(var.size(), kDenormal),
      v(var.size(), 1.f);
  OptimizerUpdate u;
  u.step = AdamStep{.alpha = 1e-3f, .one_minus_beta_1 = 0.1f, .one_minus_beta_2 = 1e-3f, .epsilon = 1e-7f};
  UpdateTensors t;
  t.variable = var.data();
  t.gradient = g.data();
  t.slots = {m.data(), v.data(), nullptr};
  t.n = n;
  get(Device::cpu()).apply_update(u, std::span<const UpdateTensors>(&t, 1));
  return m;
}

// Element counts on the calling thread alone and split over the OpenMP threads.
const Index kShort = 100, kLong = Index{1} << 17;

TEST_F(Denormals, OnByDefaultProductsAndSlotsThatWouldBeDenormalAreZero) {
  ASSERT_TRUE(flush_denormals()) << "TOWER_FLUSH_DENORMALS is set in this test's environment";
  for (Index n : {kShort, kLong}) {
    for (float y : products(n)) ASSERT_EQ(y, 0.f) << n << " elements";
    for (float m : decayed_momentum(n)) ASSERT_EQ(m, 0.f) << n << " elements";
  }
}

TEST_F(Denormals, OffComputesThemExactly) {
  set_flush_denormals(false);
  for (Index n : {kShort, kLong}) {
    for (float y : products(n)) ASSERT_EQ(y, FLT_MIN / 64) << n << " elements";
    for (float m : decayed_momentum(n)) ASSERT_EQ(m, kDenormal - kDenormal * 0.1f) << n << " elements";
  }
}

// oneDNN's products read denormal operands as they are, whether the flush is on or off, also where the CPU backend
// splits a dense layer's products over its threads (dense_product): x * W for a denormal x and W = 1 adds up to the
// normal in * x, which a product that read x as zero would leave 0.
TEST_F(Denormals, DenseProductsReadDenormalsEitherWay) {
  const int threads = num_threads();
  const Index rows = 9, in = 300, out = 129;  // W above the update's grain: split over 2 threads
  const std::vector<float> x(static_cast<std::size_t>(rows * in), kDenormal),
      w(static_cast<std::size_t>(in * out), 1.f), bias(static_cast<std::size_t>(out), 0.f);
  for (const bool flush : {true, false})
    for (const int n : {1, 2}) {
      set_flush_denormals(flush);
      set_num_threads(n);
      std::vector<float> y(static_cast<std::size_t>(rows * out));
      get(Device::cpu()).dense_product(DenseProduct::forward, rows, in, out, x.data(), w.data(), y.data(),
                                       {bias.data(), ActivationKind::relu, {}});
      for (float v : y)
        ASSERT_EQ(v, static_cast<float>(in) * kDenormal) << "flush " << flush << ", " << n << " threads";
    }
  set_num_threads(threads);
}

TEST_F(Denormals, TheCallingThreadKeepsItsOwnSetting) {
  const unsigned before = _mm_getcsr();
  products(kShort);
  products(kLong);
  EXPECT_EQ(_mm_getcsr(), before);
  // Arithmetic on this thread after the kernels still produces denormals.
  volatile float a = FLT_MIN, b = 1.f / 64;
  EXPECT_EQ(a * b, FLT_MIN / 64);
}

#endif

}  // namespace
}  // namespace tower::backend
