// Adam: Keras defaults, construction, argument checks, the first step by hand and amsgrad's running maximum.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "optimizers/optimizer_testing.h"

namespace tower::optimizers {
namespace {

using testing::expect_config;
using testing::expect_first_step;
using testing::make_problem;

TEST(Adam, DefaultsAreKeras) {
  expect_config(Adam(), {{"name", "adam"},
                         {"learning_rate", 0.001},
                         {"beta_1", 0.9},
                         {"beta_2", 0.999},
                         {"epsilon", 1e-7},
                         {"amsgrad", false},
                         {"weight_decay", nullptr}});
}

TEST(Adam, ConstructionForms) {
  const Adam opt({.learning_rate = 1e-3, .beta_1 = 0.8, .clipnorm = 1.0});
  EXPECT_EQ(opt->options().beta_1, 0.8);
  expect_config(opt, {{"beta_1", 0.8}, {"beta_2", 0.999}, {"clipnorm", 1.0}});
  EXPECT_EQ(Adam(0.01)->learning_rate(), 0.01);
  const OptimizerPtr base = Adam(2e-3);
  EXPECT_EQ(base->type(), "Adam");
}

TEST(Adam, RejectsInvalidArguments) {
  EXPECT_THROW(Adam({.beta_1 = 1.0}), std::invalid_argument);
  EXPECT_THROW(Adam({.beta_1 = -0.1}), std::invalid_argument);
  EXPECT_THROW(Adam({.beta_2 = 1.5}), std::invalid_argument);
  EXPECT_THROW(Adam({.epsilon = -1e-7}), std::invalid_argument);
  try {
    Adam({.beta_2 = 1.5});
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("beta_2"), std::string::npos) << e.what();
  }
}

TEST(Adam, FirstStepByHand) {
  // m = 0.1 g, v = 0.001 g^2, var -= m * lr * sqrt(1 - 0.999) / (1 - 0.9) / (sqrt(v) + eps).
  const double lr = 0.05, eps = 1e-7;
  expect_first_step(Adam(lr), [&](double var, double g) {
    const double m = 0.1 * g, v = 0.001 * g * g;
    return var - m * (lr * std::sqrt(0.001) / 0.1) / (std::sqrt(v) + eps);
  });
}

TEST(Adam, AmsgradKeepsTheLargestVelocity) {
  auto p = make_problem(2);
  // A large gradient, then a small one: the velocity decays, velocity_hat keeps its maximum.
  p.gradients[0][1].fill(2.f);
  p.gradients[1][1].fill(0.01f);
  const OptimizerPtr opt = Adam({.learning_rate = 0.1, .beta_2 = 0.5, .amsgrad = true});
  opt->apply_gradients(p.variables, p.gradients[0]);
  opt->apply_gradients(p.variables, p.gradients[1]);
  const auto& slots = opt->variables();
  ASSERT_EQ(slots.size(), 6u);
  ASSERT_EQ(slots[5]->path, "w/bias/velocity_hat");
  const float v1 = 0.5f * 4.f, v2 = v1 + (0.0001f - v1) * 0.5f;
  tower::testing::expect_near(slots[4]->value, std::vector<float>(5, v2), 1e-6f, 1e-5f, "velocity");
  tower::testing::expect_near(slots[5]->value, std::vector<float>(5, std::max(v1, v2)), 1e-6f, 1e-5f,
                              "velocity_hat");
}

}  // namespace
}  // namespace tower::optimizers
