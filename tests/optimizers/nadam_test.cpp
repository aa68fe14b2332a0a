// Nadam: Keras defaults, argument checks, the u_product schedule and the first step by hand.
#include <gtest/gtest.h>

#include <cmath>

#include "optimizers/optimizer_testing.h"

namespace tower::optimizers {
namespace {

using testing::expect_config;
using testing::expect_first_step;

// Keras' momentum schedule, with beta_1 and 0.96 rounded to float32 as Keras casts them.
double u(double beta_1, int t) {
  return static_cast<float>(beta_1) * (1 - 0.5 * std::pow(static_cast<double>(0.96f), t));
}

TEST(Nadam, DefaultsAreKeras) {
  expect_config(Nadam(), {{"name", "nadam"},
                          {"learning_rate", 0.001},
                          {"beta_1", 0.9},
                          {"beta_2", 0.999},
                          {"epsilon", 1e-7}});
}

TEST(Nadam, RejectsInvalidArguments) {
  EXPECT_THROW(Nadam({.beta_1 = 1.0}), std::invalid_argument);
  EXPECT_THROW(Nadam({.beta_2 = 1.0}), std::invalid_argument);
  EXPECT_THROW(Nadam({.epsilon = -1.0}), std::invalid_argument);
}

TEST(Nadam, UProductIsTheRunningProductOfTheMomentumSchedule) {
  const Nadam opt({.beta_1 = 0.8});
  EXPECT_EQ(opt->u_product(0), 1.0);
  EXPECT_DOUBLE_EQ(opt->u_product(1), u(0.8, 1));
  EXPECT_DOUBLE_EQ(opt->u_product(3), u(0.8, 1) * u(0.8, 2) * u(0.8, 3));
  // Going back (set_iterations after a restore) recomputes from the start.
  EXPECT_DOUBLE_EQ(opt->u_product(2), u(0.8, 1) * u(0.8, 2));
}

TEST(Nadam, FirstStepByHand) {
  // t = 1: m = (1 - b1) g, v = (1 - b2) g^2, m_hat = u2 m / (1 - u1 u2) + (1 - u1) g / (1 - u1),
  // v_hat = v / (1 - b2), var -= lr m_hat / (sqrt(v_hat) + eps).
  const double lr = 0.02, b1 = 0.9, b2 = 0.999, eps = 1e-7;
  expect_first_step(Nadam(lr), [&](double var, double g) {
    const double u1 = u(b1, 1), u2 = u(b1, 2);
    const double m = (1 - b1) * g, v = (1 - b2) * g * g;
    const double m_hat = u2 * m / (1 - u1 * u2) + (1 - u1) * g / (1 - u1);
    return var - lr * m_hat / (std::sqrt(v / (1 - b2)) + eps);
  });
}

}  // namespace
}  // namespace tower::optimizers
