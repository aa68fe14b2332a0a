// tower::ops on cuda:0 against the same ops on the CPU: one computation that uses every family (element-wise with
// broadcasting, comparisons and where, unary math, reductions, softmax, batched matmul and einsum, shapes,
// slicing, take and its repeated-index gradient, one_hot, pad, tile, repeat, cumsum, cast), its value and its
// gradients through a GradientTape; and a tape's gradients through two models (a generator into its
// discriminator, called twice). Skipped without a GPU; scripts/gpu-check.sh runs them where one is lent.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "testing/layer_test.h"
#include "tower/tower.h"

namespace tower {
namespace {

struct Result {
  std::vector<float> value;
  std::vector<std::vector<float>> grads;
};

Result run_everything(Device device) {
  const Tensor a = testing::random_tensor({2, 3, 4}, 1).to(device), b = testing::random_tensor({3, 1}, 2).to(device);
  const Tensor w = testing::random_tensor({2, 4, 5}, 3).to(device);
  const Tensor ids = Tensor::from_vector(std::vector<std::int32_t>{2, 0, 2, 1}, {4}).to(device);
  GradientTape tape;
  tape.watch(a);
  tape.watch(b);
  tape.watch(w);
  const Tensor e = ops::where(ops::greater(a, b), ops::power(ops::abs(a) + 1.f, 1.5f), ops::erf(a) * b) +
                   ops::log1p(ops::square(a)) - ops::rsqrt(ops::square(b) + 1.f);
  const Tensor r = ops::logsumexp(e, {-1}, true) + ops::max(e, {1}, true) - ops::min(e, {0, 2}, true) +
                   ops::log_softmax(e, 1) + ops::cumsum(e, 2) + ops::var(e, {2}, true);
  const Tensor m = ops::matmul(r, w) + ops::einsum("bij,bjk->bik", r, w);                         // [2, 3, 5]
  const Tensor s = ops::strided_slice(m, {0, 2, 4}, {2, -4, -6}, {1, -1, -2});                      // [2, 3, 3]
  const Tensor t = ops::take(s, ids, 2);                                                            // [2, 3, 4]
  const Tensor p = ops::pad(ops::tile(t, {1, 1, 2}), {{0, 0}, {1, 0}, {0, 2}}, 0.5f);              // [2, 4, 10]
  const Tensor q = ops::repeat(ops::slice(p, {0, 1, 0}, {2, 2, 10}), 2, 1);                        // [2, 4, 10]
  const Tensor h = ops::one_hot(ids, 3) * ops::expand_dims(ops::cast(ids, DType::float32), 1);
  const Tensor y = ops::sum(ops::softmax(q, -1) * p) + ops::mean(ops::stack({q, p}, 0)) + ops::sum(h);
  Result out;
  out.value = y.to(Device::cpu()).to_vector();
  for (const Tensor& g : tape.gradient(y, std::vector<Tensor>{a, b, w})) out.grads.push_back(g.to(Device::cpu()).to_vector());
  return out;
}

// The computation itself, on the CPU: it runs, is finite, and every source gets a gradient of its shape.
TEST(OpsOnTheGpu, TheComputationRunsOnTheCpu) {
  const Result cpu = run_everything(Device::cpu());
  ASSERT_EQ(cpu.value.size(), 1u);
  EXPECT_TRUE(std::isfinite(cpu.value[0]));
  ASSERT_EQ(cpu.grads.size(), 3u);
  EXPECT_EQ(cpu.grads[0].size(), 24u);
  EXPECT_EQ(cpu.grads[1].size(), 3u);
  EXPECT_EQ(cpu.grads[2].size(), 40u);
  for (const auto& g : cpu.grads)
    for (float v : g) EXPECT_TRUE(std::isfinite(v));
}

TEST(OpsOnTheGpu, EveryFamilyMatchesTheCpuValuesAndGradients_CUDA) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no GPU";
  const Result cpu = run_everything(Device::cpu()), gpu = run_everything(Device::cuda(0));
  ASSERT_EQ(gpu.value.size(), 1u);
  EXPECT_NEAR(gpu.value[0], cpu.value[0], 1e-4 * (1 + std::fabs(cpu.value[0])));
  ASSERT_EQ(gpu.grads.size(), cpu.grads.size());
  for (std::size_t k = 0; k < cpu.grads.size(); ++k) {
    ASSERT_EQ(gpu.grads[k].size(), cpu.grads[k].size());
    for (std::size_t i = 0; i < cpu.grads[k].size(); ++i)
      EXPECT_NEAR(gpu.grads[k][i], cpu.grads[k][i], 1e-4 * (1 + std::fabs(cpu.grads[k][i]))) << k << " [" << i << "]";
  }
}

// A generator's step through its discriminator on a GPU: the discriminator called twice on one tape, gradients
// into its inputs and on into the generator, as on the CPU.
TEST(OpsOnTheGpu, AGeneratorsGradientsThroughItsDiscriminatorMatchTheCpu_CUDA) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no GPU";
  std::vector<std::vector<float>> grads[2];
  for (int d = 0; d < 2; ++d) {
    set_random_seed(13);
    SymbolicTensor z_in = Input({2});
    Model generator(z_in, layers::Dense({.units = 3, .activation = "tanh"})(z_in));
    SymbolicTensor x_in = Input({3});
    Model discriminator(x_in, layers::Dense({.units = 1})(layers::Dense({.units = 5, .activation = "relu"})(x_in)));
    const Device device = d == 0 ? Device::cpu() : Device::cuda(0);
    generator.to(device);
    discriminator.to(device);
    GradientTape tape;
    const Tensor p = tape.call(discriminator, tape.call(generator, testing::random_tensor({4, 2}, 31)));
    const Tensor p2 = tape.call(discriminator, tape.call(generator, testing::random_tensor({4, 2}, 32)));
    const Tensor loss = ops::mean(ops::square(p)) + ops::mean(p2);
    for (const Tensor& g : tape.gradient(loss, generator.trainable_weights())) grads[d].push_back(g.to(Device::cpu()).to_vector());
  }
  ASSERT_EQ(grads[0].size(), grads[1].size());
  for (std::size_t k = 0; k < grads[0].size(); ++k)
    for (std::size_t i = 0; i < grads[0][k].size(); ++i)
      EXPECT_NEAR(grads[1][k][i], grads[0][k][i], 1e-5 + 1e-4 * std::fabs(grads[0][k][i])) << k << " [" << i << "]";
}

}  // namespace
}  // namespace tower
