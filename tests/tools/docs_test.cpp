// docs/experiments.md names everything an experiment can use: every layer type, optimizer, learning-rate
// schedule, loss, metric, callback and application the registries know.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "api/callbacks/callback_registry.h"
#include "api/losses/loss.h"
#include "api/metrics/metric.h"
#include "api/engine/layer_registry.h"
#include "api/optimizers/optimizer.h"
#include "api/optimizers/schedules.h"
#include "tools/experiment/applications.h"

namespace tower::experiment {
namespace {

std::string docs() {
  std::ifstream in(std::string(TOWER_SOURCE_DIR) + "/docs/experiments.md");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(ExperimentDocs, NameEveryRegisteredObject) {
  const std::string text = docs();
  ASSERT_FALSE(text.empty());
  std::vector<std::string> names = registered_layer_types();
  for (const auto& list : {losses::loss_types(), metrics::metric_types(), callbacks::callback_types(),
                           optimizers::optimizer_types(), optimizers::schedules::schedule_types(), application_names()})
    names.insert(names.end(), list.begin(), list.end());
  EXPECT_EQ(optimizers::optimizer_types().size(), 12u);
  EXPECT_EQ(optimizers::schedules::schedule_types().size(), 6u);
  // Registered by this test program itself, as a user's program registers its own layers.
  const std::vector<std::string> test_layers = {"SqueezeExcite", "GatedDense"};  // tests/layers/custom_layer_test.cpp
  for (const std::string& n : names)
    if (std::find(test_layers.begin(), test_layers.end(), n) == test_layers.end())
      EXPECT_NE(text.find(n), std::string::npos) << n << " is not in docs/experiments.md";
}

}  // namespace
}  // namespace tower::experiment
