// Adagrad: Keras defaults, the accumulator's initial value, argument checks and two steps by hand.
#include <gtest/gtest.h>

#include <cmath>

#include "optimizers/optimizer_testing.h"

namespace tower::optimizers {
namespace {

using testing::expect_config;
using testing::make_problem;

TEST(Adagrad, DefaultsAreKeras) {
  expect_config(Adagrad(), {{"name", "adagrad"},
                            {"learning_rate", 0.001},
                            {"initial_accumulator_value", 0.1},
                            {"epsilon", 1e-7}});
}

TEST(Adagrad, RejectsInvalidArguments) {
  EXPECT_THROW(Adagrad({.initial_accumulator_value = -0.1}), std::invalid_argument);
  EXPECT_THROW(Adagrad({.epsilon = -1.0}), std::invalid_argument);
}

TEST(Adagrad, AccumulatorStartsAtItsInitialValue) {
  auto p = make_problem(1);
  const OptimizerPtr opt = Adagrad({.initial_accumulator_value = 0.25});
  opt->build(p.variables);
  ASSERT_EQ(opt->variables().size(), 2u);
  EXPECT_EQ(opt->variables()[1]->path, "w/bias/accumulator");
  tower::testing::expect_near(opt->variables()[1]->value, std::vector<float>(5, 0.25f), 0.f, 0.f, "accumulator");
}

TEST(Adagrad, TwoStepsByHand) {
  auto p = make_problem(2);
  const double lr = 0.2, eps = 1e-3;
  const OptimizerPtr opt = Adagrad({.learning_rate = lr, .initial_accumulator_value = 0.5, .epsilon = eps});
  std::vector<double> v(5), acc(5, 0.5);
  const std::vector<float> v0 = p.variables[1]->value.to_vector();
  for (std::size_t i = 0; i < 5; ++i) v[i] = v0[i];
  for (int step = 0; step < 2; ++step) {
    const std::vector<float> g = p.gradients[step][1].to_vector();
    opt->apply_gradients(p.variables, p.gradients[step]);
    std::vector<float> want(5);
    for (std::size_t i = 0; i < 5; ++i) {
      acc[i] += static_cast<double>(g[i]) * g[i];
      v[i] -= lr * g[i] / std::sqrt(acc[i] + eps);
      want[i] = static_cast<float>(v[i]);
    }
    tower::testing::expect_near(p.variables[1]->value, want, testing::kAtol, testing::kRtol, "bias");
  }
}

}  // namespace
}  // namespace tower::optimizers
