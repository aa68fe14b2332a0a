#pragma once
// Helpers shared by the optimizer tests: variables, Keras fixtures under TOWER_TEST_DATA_DIR/optimizers, and a
// loop that applies fixed gradients.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "api/optimizers/optimizers.h"
#include "testing/fixtures.h"
#include "testing/layer_test.h"
#include "tower/tower.h"

namespace tower::optimizers::testing {

// Keras' optimizers run in float32 with their own operation order (TensorFlow kernels, float32 powers for the
// bias corrections); Tower rounds coefficients computed in double once. Each step therefore differs by a few
// float32 ulps (about 1e-7 relative) of O(1) values, and five steps stay well inside rtol 1e-5; atol 1e-6
// covers elements that pass near zero, where a relative bound means nothing.
inline constexpr float kAtol = 1e-6f;
inline constexpr float kRtol = 1e-5f;

inline VariablePtr make_variable(const std::string& path, const Tensor& value) {
  auto v = std::make_shared<Variable>();
  v->name = path.substr(path.rfind('/') + 1);
  v->path = path;
  v->value = value;
  return v;
}

inline std::filesystem::path fixture_dir() { return tower::testing::reference_dir() / "optimizers"; }

// The parsed JSON of tests/reference/optimizers/<name>.json; throws std::runtime_error when it is missing.
inline Config load_fixture(const std::string& name) {
  return tower::testing::read_json_fixture("optimizers/" + name + ".json");
}

// {"shape": [...], "data": [...]} as a CPU tensor.
inline Tensor tensor_from(const Config& c) { return tower::testing::fixture_tensor(c); }

// Two variables ("w/kernel" [3, 4], "w/bias" [5]) with seeded values, and `steps` lists of seeded gradients.
struct Problem {
  std::vector<VariablePtr> variables;
  std::vector<std::vector<Tensor>> gradients;
};

inline Problem make_problem(int steps, std::uint64_t seed = 7) {
  Problem p;
  p.variables = {make_variable("w/kernel", tower::testing::random_tensor({3, 4}, seed)),
                 make_variable("w/bias", tower::testing::random_tensor({5}, seed + 1))};
  for (int s = 0; s < steps; ++s)
    p.gradients.push_back({tower::testing::random_tensor({3, 4}, seed + 100 + 2 * static_cast<std::uint64_t>(s)),
                           tower::testing::random_tensor({5}, seed + 101 + 2 * static_cast<std::uint64_t>(s))});
  return p;
}

// Applies one step of make_problem(1)'s gradients and checks every element of both variables against
// rule(value before, gradient), evaluated in double.
inline void expect_first_step(const OptimizerPtr& opt, const std::function<double(double, double)>& rule) {
  Problem p = make_problem(1);
  std::vector<std::vector<float>> before;
  for (const VariablePtr& v : p.variables) before.push_back(v->value.to_vector());
  opt->apply_gradients(p.variables, p.gradients[0]);
  for (std::size_t k = 0; k < p.variables.size(); ++k) {
    const std::vector<float> g = p.gradients[0][k].to_vector();
    std::vector<float> want(g.size());
    for (std::size_t i = 0; i < g.size(); ++i) want[i] = static_cast<float>(rule(before[k][i], g[i]));
    tower::testing::expect_near(p.variables[k]->value, want, kAtol, kRtol, p.variables[k]->path);
  }
}

// Every key of `expected` has that value in opt->get_config().
inline void expect_config(const OptimizerPtr& opt, const Config::Map& expected) {
  const Config c = opt->get_config();
  for (const auto& [key, value] : expected) {
    ASSERT_TRUE(c.contains(key)) << key << " missing from " << c.to_json();
    EXPECT_EQ(c.at(key), value) << key << " in " << c.to_json();
  }
}

}  // namespace tower::optimizers::testing
