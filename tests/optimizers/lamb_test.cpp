// Lamb: Keras defaults, argument checks and the first step by hand (the trust ratio over each whole variable).
#include <gtest/gtest.h>

#include <cmath>

#include "optimizers/optimizer_testing.h"

namespace tower::optimizers {
namespace {

using testing::expect_config;

TEST(Lamb, DefaultsAreKeras) {
  expect_config(Lamb(), {{"name", "lamb"}, {"learning_rate", 0.001}, {"beta_1", 0.9}, {"beta_2", 0.999},
                         {"epsilon", 1e-7}});
}

TEST(Lamb, RejectsInvalidArguments) {
  EXPECT_THROW(Lamb({.beta_1 = 1.0}), std::invalid_argument);
  EXPECT_THROW(Lamb({.beta_2 = -0.5}), std::invalid_argument);
  EXPECT_THROW(Lamb({.epsilon = -1.0}), std::invalid_argument);
}

TEST(Lamb, FirstStepScalesByTheTrustRatio) {
  // After one step m_hat = g and v_hat = g^2, so u = g / (|g| + eps) and var -= lr * ||var|| / ||u|| * u.
  const double lr = 0.1, eps = 1e-7;
  testing::Problem p = testing::make_problem(1);
  std::vector<std::vector<float>> before;
  for (const VariablePtr& v : p.variables) before.push_back(v->value.to_vector());
  Lamb({.learning_rate = lr, .epsilon = eps})->apply_gradients(p.variables, p.gradients[0]);
  for (std::size_t k = 0; k < p.variables.size(); ++k) {
    const std::vector<float> g = p.gradients[0][k].to_vector();
    double w2 = 0, u2 = 0;
    for (std::size_t i = 0; i < g.size(); ++i) {
      const double u = g[i] / (std::fabs(g[i]) + eps);
      w2 += double(before[k][i]) * before[k][i];
      u2 += u * u;
    }
    std::vector<float> want(g.size());
    for (std::size_t i = 0; i < g.size(); ++i)
      want[i] = static_cast<float>(before[k][i] - lr * std::sqrt(w2 / u2) * g[i] / (std::fabs(g[i]) + eps));
    tower::testing::expect_near(p.variables[k]->value, want, 1e-6f, 1e-5f, p.variables[k]->path);
  }
}

}  // namespace
}  // namespace tower::optimizers
