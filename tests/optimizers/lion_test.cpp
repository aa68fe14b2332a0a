// Lion: Keras defaults, argument checks (naming the optimizer and the value) and the first step by hand.
#include <gtest/gtest.h>

#include <cmath>

#include "optimizers/optimizer_testing.h"

namespace tower::optimizers {
namespace {

using testing::expect_config;
using testing::expect_first_step;

TEST(Lion, DefaultsAreKeras) {
  expect_config(Lion(), {{"name", "lion"}, {"learning_rate", 0.001}, {"beta_1", 0.9}, {"beta_2", 0.99}});
}

TEST(Lion, RejectsInvalidArguments) {
  try {
    Lion({.beta_1 = 0.0});
    FAIL() << "beta_1 = 0 accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "Lion: argument 'beta_1' must be in (0, 1], got 0.0");
  }
  EXPECT_THROW(Lion({.beta_1 = 1.5}), std::invalid_argument);
  EXPECT_THROW(Lion({.beta_2 = -0.1}), std::invalid_argument);
}

TEST(Lion, FirstStepByHand) {
  // m starts at 0: var -= lr * sign((1 - beta_1) g).
  const double lr = 0.05;
  expect_first_step(Lion({.learning_rate = lr, .beta_1 = 0.5}),
                    [&](double v, double g) { return v - lr * (g > 0 ? 1.0 : g < 0 ? -1.0 : 0.0); });
}

}  // namespace
}  // namespace tower::optimizers
