// AdamW: Keras defaults and its identity with Adam given the same weight decay.
#include <gtest/gtest.h>

#include "optimizers/optimizer_testing.h"

namespace tower::optimizers {
namespace {

using testing::expect_config;
using testing::make_problem;

TEST(AdamW, DefaultsAreKeras) {
  const AdamW opt;
  expect_config(opt, {{"name", "adam_w"},
                      {"learning_rate", 0.001},
                      {"weight_decay", 0.004},
                      {"beta_1", 0.9},
                      {"beta_2", 0.999},
                      {"epsilon", 1e-7},
                      {"amsgrad", false}});
  EXPECT_EQ(opt->type(), "AdamW");
  EXPECT_EQ(opt->options().weight_decay, 0.004);
}

TEST(AdamW, IsAdamWithDecoupledWeightDecay) {
  auto a = make_problem(3), b = make_problem(3);
  const OptimizerPtr adamw = AdamW({.learning_rate = 0.01, .weight_decay = 0.1, .amsgrad = true});
  const OptimizerPtr adam = Adam({.learning_rate = 0.01, .amsgrad = true, .weight_decay = 0.1});
  for (int step = 0; step < 3; ++step) {
    adamw->apply_gradients(a.variables, a.gradients[step]);
    adam->apply_gradients(b.variables, b.gradients[step]);
  }
  for (std::size_t i = 0; i < a.variables.size(); ++i)
    tower::testing::expect_near(a.variables[i]->value, b.variables[i]->value, 0.f, 0.f, a.variables[i]->path);
}

TEST(AdamW, RejectsInvalidArguments) {
  EXPECT_THROW(AdamW({.beta_1 = 1.0}), std::invalid_argument);
  EXPECT_THROW(AdamW({.weight_decay = -1.0}), std::invalid_argument);
  EXPECT_THROW(AdamW({.clipnorm = 1.0, .clipvalue = 1.0}), std::invalid_argument);
}

}  // namespace
}  // namespace tower::optimizers
