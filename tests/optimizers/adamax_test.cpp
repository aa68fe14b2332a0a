// Adamax: Keras defaults, argument checks and the first step by hand.
#include <gtest/gtest.h>

#include <cmath>

#include "optimizers/optimizer_testing.h"

namespace tower::optimizers {
namespace {

using testing::expect_config;
using testing::expect_first_step;

TEST(Adamax, DefaultsAreKeras) {
  expect_config(Adamax(), {{"name", "adamax"},
                           {"learning_rate", 0.001},
                           {"beta_1", 0.9},
                           {"beta_2", 0.999},
                           {"epsilon", 1e-7}});
}

TEST(Adamax, RejectsInvalidArguments) {
  EXPECT_THROW(Adamax({.beta_1 = 1.0}), std::invalid_argument);
  EXPECT_THROW(Adamax({.beta_2 = -0.5}), std::invalid_argument);
  EXPECT_THROW(Adamax({.epsilon = -1.0}), std::invalid_argument);
}

TEST(Adamax, FirstStepByHand) {
  // m = (1 - beta_1) g, u = |g|, var -= lr m / ((1 - beta_1) (u + eps)).
  const double lr = 0.05, b1 = 0.5, eps = 1e-7;
  expect_first_step(Adamax({.learning_rate = lr, .beta_1 = b1}), [&](double v, double g) {
    return v - lr * (1 - b1) * g / ((1 - b1) * (std::fabs(g) + eps));
  });
}

}  // namespace
}  // namespace tower::optimizers
