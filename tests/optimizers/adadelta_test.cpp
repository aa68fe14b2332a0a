// Adadelta: Keras defaults, argument checks and the first step by hand.
#include <gtest/gtest.h>

#include <cmath>

#include "optimizers/optimizer_testing.h"

namespace tower::optimizers {
namespace {

using testing::expect_config;
using testing::expect_first_step;

TEST(Adadelta, DefaultsAreKeras) {
  expect_config(Adadelta(), {{"name", "adadelta"}, {"learning_rate", 0.001}, {"rho", 0.95}, {"epsilon", 1e-7}});
}

TEST(Adadelta, RejectsInvalidArguments) {
  EXPECT_THROW(Adadelta({.rho = 2.0}), std::invalid_argument);
  EXPECT_THROW(Adadelta({.epsilon = 0.0}), std::invalid_argument);
}

TEST(Adadelta, FirstStepByHand) {
  // accumulated_grad = (1 - rho) g^2; delta = -sqrt(0 + eps) g / sqrt(accumulated_grad + eps); var += lr delta.
  const double lr = 2.0, rho = 0.5, eps = 1e-4;
  expect_first_step(Adadelta({.learning_rate = lr, .rho = rho, .epsilon = eps}), [&](double v, double g) {
    const double delta = -std::sqrt(eps) * g / std::sqrt((1 - rho) * g * g + eps);
    return v + lr * delta;
  });
}

TEST(Adadelta, SlotsAreKerasNamed) {
  auto p = testing::make_problem(1);
  const OptimizerPtr opt = Adadelta();
  opt->build(p.variables);
  ASSERT_EQ(opt->variables().size(), 4u);
  EXPECT_EQ(opt->variables()[0]->path, "w/kernel/accumulated_grad");
  EXPECT_EQ(opt->variables()[1]->path, "w/kernel/accumulated_delta_var");
}

}  // namespace
}  // namespace tower::optimizers
