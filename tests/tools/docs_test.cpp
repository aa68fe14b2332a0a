// docs/experiments.md names everything an experiment can use: every layer type, optimizer, learning-rate
// schedule, loss, metric, callback and application the registries know.
#include <gtest/gtest.h>

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

// The names after "known: " in a registry's error for an unknown name.
std::vector<std::string> known_from_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    const std::string m = e.what();
    const std::size_t at = m.find("known: ");
    std::vector<std::string> out;
    std::istringstream list(at == std::string::npos ? "" : m.substr(at + 7));
    std::string name;
    while (std::getline(list, name, ',')) out.push_back(name.substr(name.find_first_not_of(' ')));
    return out;
  }
  return {};
}

TEST(ExperimentDocs, NameEveryRegisteredObject) {
  const std::string text = docs();
  ASSERT_FALSE(text.empty());
  std::vector<std::string> names = registered_layer_types();
  for (const auto& list : {losses::loss_types(), metrics::metric_types(), callbacks::callback_types(), application_names()})
    names.insert(names.end(), list.begin(), list.end());
  const std::vector<std::string> optimizers = known_from_error([] { optimizers::optimizer_from_config(Config("?")); });
  const std::vector<std::string> schedules = known_from_error(
      [] { optimizers::schedules::schedule_from_config(Config::parse_json(R"({"class_name": "?"})")); });
  EXPECT_EQ(optimizers.size(), 8u);
  EXPECT_EQ(schedules.size(), 6u);
  names.insert(names.end(), schedules.begin(), schedules.end());
  for (const std::string& n : names) EXPECT_NE(text.find(n), std::string::npos) << n << " is not in docs/experiments.md";
  std::string lower = text;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const std::string& n : optimizers)
    EXPECT_NE(lower.find(n), std::string::npos) << n << " is not in docs/experiments.md";
}

}  // namespace
}  // namespace tower::experiment
