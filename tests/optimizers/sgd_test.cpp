// SGD: Keras defaults, construction, argument checks and the momentum / Nesterov updates by hand.
#include <gtest/gtest.h>

#include "optimizers/optimizer_testing.h"

namespace tower::optimizers {
namespace {

using testing::expect_config;
using testing::expect_first_step;
using testing::make_problem;

TEST(SGD, DefaultsAreKeras) {
  const SGD opt;
  expect_config(opt, {{"name", "sgd"},
                      {"learning_rate", 0.01},
                      {"momentum", 0.0},
                      {"nesterov", false},
                      {"weight_decay", nullptr},
                      {"clipnorm", nullptr},
                      {"global_clipnorm", nullptr},
                      {"clipvalue", nullptr}});
  EXPECT_EQ(opt->type(), "SGD");
}

TEST(SGD, ConstructionForms) {
  EXPECT_EQ(SGD(0.05)->learning_rate(), 0.05);
  const SGD opt({.learning_rate = 0.2, .momentum = 0.9, .nesterov = true, .clipnorm = 1.0});
  EXPECT_EQ(opt->options().momentum, 0.9);
  EXPECT_TRUE(opt->options().nesterov);
  const OptimizerPtr base = opt;
  EXPECT_EQ(base.get(), opt.ptr().get());
  expect_config(base, {{"learning_rate", 0.2}, {"clipnorm", 1.0}});
  const SGD scheduled(schedules::InverseTimeDecay({.initial_learning_rate = 1.0, .decay_steps = 1, .decay_rate = 1.0}));
  EXPECT_EQ(scheduled->learning_rate(), 1.0);
}

TEST(SGD, RejectsMomentumOutsideTheUnitInterval) {
  EXPECT_THROW(SGD({.momentum = -0.1}), std::invalid_argument);
  EXPECT_THROW(SGD({.momentum = 1.5}), std::invalid_argument);
}

TEST(SGD, PlainStepByHand) {
  expect_first_step(SGD(0.3), [](double v, double g) { return v - 0.3 * g; });
}

TEST(SGD, MomentumAndNesterovByHand) {
  for (const bool nesterov : {false, true}) {
    SCOPED_TRACE(nesterov ? "nesterov" : "momentum");
    auto p = make_problem(2);
    const OptimizerPtr opt = SGD({.learning_rate = 0.1, .momentum = 0.9, .nesterov = nesterov});
    std::vector<float> v = p.variables[1]->value.to_vector(), m(v.size(), 0.f);
    for (int step = 0; step < 2; ++step) {
      const std::vector<float> g = p.gradients[step][1].to_vector();
      opt->apply_gradients(p.variables, p.gradients[step]);
      for (std::size_t i = 0; i < v.size(); ++i) {
        m[i] = 0.9f * m[i] - 0.1f * g[i];
        v[i] += nesterov ? 0.9f * m[i] - 0.1f * g[i] : m[i];
      }
      tower::testing::expect_near(p.variables[1]->value, v, 1e-6f, 1e-5f, "bias");
    }
    ASSERT_EQ(opt->variables().size(), 2u);
    EXPECT_EQ(opt->variables()[1]->path, "w/bias/momentum");
    tower::testing::expect_near(opt->variables()[1]->value, m, 1e-6f, 1e-5f, "momentum");
  }
}

TEST(SGD, NoSlotsWithoutMomentum) {
  auto p = make_problem(1);
  const OptimizerPtr opt = SGD(0.1);
  opt->apply_gradients(p.variables, p.gradients[0]);
  EXPECT_TRUE(opt->variables().empty());
}

}  // namespace
}  // namespace tower::optimizers
