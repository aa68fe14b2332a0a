// Ftrl: Keras defaults, argument checks (naming the optimizer and the value), the accumulator's initial value and
// the first step by hand.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "optimizers/optimizer_testing.h"

namespace tower::optimizers {
namespace {

using testing::expect_config;
using testing::expect_first_step;

TEST(Ftrl, DefaultsAreKeras) {
  expect_config(Ftrl(), {{"name", "ftrl"},
                         {"learning_rate", 0.001},
                         {"learning_rate_power", -0.5},
                         {"initial_accumulator_value", 0.1},
                         {"l1_regularization_strength", 0.0},
                         {"l2_regularization_strength", 0.0},
                         {"l2_shrinkage_regularization_strength", 0.0},
                         {"beta", 0.0}});
}

TEST(Ftrl, RejectsNegativeStrengthsAndAPositivePower) {
  try {
    Ftrl({.l1_regularization_strength = -0.5});
    FAIL() << "a negative l1 strength accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "Ftrl: argument 'l1_regularization_strength' must be >= 0, got -0.5");
  }
  EXPECT_THROW(Ftrl({.l2_regularization_strength = -1.0}), std::invalid_argument);
  EXPECT_THROW(Ftrl({.l2_shrinkage_regularization_strength = -1.0}), std::invalid_argument);
  EXPECT_THROW(Ftrl({.initial_accumulator_value = -0.1}), std::invalid_argument);
  EXPECT_THROW(Ftrl({.learning_rate_power = 0.5}), std::invalid_argument);
}

TEST(Ftrl, AccumulatorStartsAtItsInitialValue) {
  const Ftrl opt({.initial_accumulator_value = 0.25});
  testing::Problem p = testing::make_problem(1);
  opt->build(p.variables);
  ASSERT_EQ(opt->variables().size(), 4u);
  EXPECT_EQ(opt->variables()[0]->path, "w/kernel/accumulator");
  EXPECT_EQ(opt->variables()[0]->value.to_vector()[0], 0.25f);
  EXPECT_EQ(opt->variables()[1]->path, "w/kernel/linear");
}

TEST(Ftrl, FirstStepByHand) {
  // acc = a + g^2, linear = g - (sqrt(acc) - sqrt(a)) / lr * v, var = (clip(linear, l1) - linear) / (sqrt(acc) / lr).
  const double lr = 0.1, a = 0.1, l1 = 0.01;
  expect_first_step(Ftrl({.learning_rate = lr, .l1_regularization_strength = l1}), [&](double v, double g) {
    const double acc = a + g * g;
    const double linear = g - (std::sqrt(acc) - std::sqrt(a)) / lr * v;
    return (std::clamp(linear, -l1, l1) - linear) / (std::sqrt(acc) / lr);
  });
}

}  // namespace
}  // namespace tower::optimizers
