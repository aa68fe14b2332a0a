// Adafactor: Keras defaults, argument checks, and its slots: factored second moments (r over the last axis, c over
// the second last) for a variable of rank >= 2, scalars below.
#include <gtest/gtest.h>

#include "optimizers/optimizer_testing.h"

namespace tower::optimizers {
namespace {

using testing::expect_config;

TEST(Adafactor, DefaultsAreKeras) {
  expect_config(Adafactor(), {{"name", "adafactor"},
                              {"learning_rate", 0.001},
                              {"beta_2_decay", -0.8},
                              {"epsilon_1", 1e-30},
                              {"epsilon_2", 1e-3},
                              {"clip_threshold", 1.0},
                              {"relative_step", true}});
}

TEST(Adafactor, RejectsInvalidArguments) {
  try {
    Adafactor({.clip_threshold = 0.0});
    FAIL() << "clip_threshold = 0 accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "Adafactor: argument 'clip_threshold' must be > 0, got 0.0");
  }
  EXPECT_THROW(Adafactor({.beta_2_decay = 0.5}), std::invalid_argument);
  EXPECT_THROW(Adafactor({.epsilon_1 = -1.0}), std::invalid_argument);
  EXPECT_THROW(Adafactor({.epsilon_2 = -1.0}), std::invalid_argument);
}

TEST(Adafactor, FactorsTheLastTwoDimensions) {
  const Adafactor opt;
  const std::vector<VariablePtr> vars = {testing::make_variable("d/kernel", Tensor::zeros(Shape{2, 3, 4})),
                                         testing::make_variable("d/bias", Tensor::zeros(Shape{5}))};
  opt->build(vars);
  const std::vector<VariablePtr>& slots = opt->variables();
  ASSERT_EQ(slots.size(), 6u);
  EXPECT_EQ(slots[0]->path, "d/kernel/r");
  EXPECT_EQ(slots[0]->value.shape(), (Shape{2, 3}));
  EXPECT_EQ(slots[1]->path, "d/kernel/c");
  EXPECT_EQ(slots[1]->value.shape(), (Shape{2, 4}));
  EXPECT_EQ(slots[2]->path, "d/kernel/velocity");
  EXPECT_EQ(slots[2]->value.shape(), (Shape{2, 3, 4}));
  EXPECT_EQ(slots[3]->value.shape(), Shape{});
  EXPECT_EQ(slots[4]->value.shape(), Shape{});
  EXPECT_EQ(slots[5]->value.shape(), (Shape{5}));
}

}  // namespace
}  // namespace tower::optimizers
