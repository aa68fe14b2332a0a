// RMSprop: Keras defaults, argument checks, plain and centered-with-momentum steps by hand, slots per option.
#include <gtest/gtest.h>

#include <cmath>

#include "optimizers/optimizer_testing.h"

namespace tower::optimizers {
namespace {

using testing::expect_config;
using testing::expect_first_step;
using testing::make_problem;

TEST(RMSprop, DefaultsAreKeras) {
  expect_config(RMSprop(), {{"name", "rm_sprop"},
                            {"learning_rate", 0.001},
                            {"rho", 0.9},
                            {"momentum", 0.0},
                            {"epsilon", 1e-7},
                            {"centered", false}});
}

TEST(RMSprop, RejectsInvalidArguments) {
  EXPECT_THROW(RMSprop({.rho = 1.5}), std::invalid_argument);
  EXPECT_THROW(RMSprop({.momentum = -0.1}), std::invalid_argument);
  EXPECT_THROW(RMSprop({.epsilon = -1.0}), std::invalid_argument);
}

TEST(RMSprop, FirstStepByHand) {
  expect_first_step(RMSprop(0.01), [](double v, double g) { return v - 0.01 * g / std::sqrt(0.1 * g * g + 1e-7); });
}

TEST(RMSprop, CenteredWithMomentumFirstStepByHand) {
  // velocity = 0.2 g^2, average = 0.2 g, increment = lr g / sqrt(velocity - average^2 + eps), momentum = increment.
  expect_first_step(RMSprop({.learning_rate = 0.01, .rho = 0.8, .momentum = 0.9, .epsilon = 1e-4, .centered = true}),
                    [](double v, double g) {
                      const double velocity = 0.2 * g * g, average = 0.2 * g;
                      return v - 0.01 * g / std::sqrt(velocity - average * average + 1e-4);
                    });
}

TEST(RMSprop, SlotsFollowTheOptions) {
  auto p = make_problem(1);
  const OptimizerPtr plain = RMSprop();
  plain->build(p.variables);
  EXPECT_EQ(plain->variables().size(), 2u);
  const OptimizerPtr full = RMSprop({.momentum = 0.5, .centered = true});
  full->build(p.variables);
  ASSERT_EQ(full->variables().size(), 6u);
  EXPECT_EQ(full->variables()[0]->path, "w/kernel/velocity");
  EXPECT_EQ(full->variables()[1]->path, "w/kernel/momentum");
  EXPECT_EQ(full->variables()[2]->path, "w/kernel/average_gradient");
}

}  // namespace
}  // namespace tower::optimizers
