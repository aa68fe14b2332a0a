// Registry (io/registry.h): the one mechanism behind every from_config. Names, aliases, Keras' serialized form,
// and the errors for each kind of mistake; then that every registry of Tower is one of them.
#include <gtest/gtest.h>

#include "api/callbacks/callback_registry.h"
#include "api/engine/layer_registry.h"
#include "api/io/registry.h"
#include "api/losses/loss.h"
#include "api/metrics/metric.h"
#include "api/optimizers/optimizer.h"
#include "api/optimizers/schedules.h"

namespace tower {
namespace {

// A registry of ints: the factory returns the "value" argument, or the class's default.
void add_numbers(Registry<int>& r) {
  r.add("One", [](const Config& a) { return a.contains("value") ? static_cast<int>(a.at("value").as_int()) : 1; },
        {"one", "uno"});
  r.add("Two", [](const Config&) { return 2; });
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no ConfigError)";
}

TEST(Registry, BuildsFromANameAnAliasOrKerasSerializedForm) {
  Registry<int> r("number");
  add_numbers(r);
  EXPECT_EQ(r.from_config(Config("One")), 1);
  EXPECT_EQ(r.from_config(Config("uno")), 1);
  EXPECT_EQ(r.from_config(Config::parse_json(R"({"class_name": "One", "config": {"value": 7}})")), 7);
  EXPECT_EQ(r.from_config(Config::parse_json(
                R"({"module": "keras.x", "class_name": "One", "config": {"value": 3}, "registered_name": null})")),
            3);
  EXPECT_EQ(r.from_config(Config::parse_json(R"({"class_name": "Two", "config": null})")), 2);
  EXPECT_EQ(r.class_names(), (std::vector<std::string>{"One", "Two"}));
  EXPECT_EQ(r.find("one"), "One");
  EXPECT_EQ(r.find("ONE"), "");  // names are case-sensitive, as Keras' are
}

TEST(Registry, EachMistakeHasItsMessage) {
  Registry<int> r("number");
  add_numbers(r);
  EXPECT_EQ(error_of([&] { r.from_config(Config("Tow")); }),
            "unknown number 'Tow' (did you mean 'Two'?); known: One, Two, one, uno");
  EXPECT_EQ(error_of([&] { r.from_config(Config(3)); }), "a number is a name or {class_name, config}, got 3");
  EXPECT_EQ(error_of([&] { r.from_config(Config::parse_json(R"({"class_name": "One", "confg": {}})")); }),
            "number 'One': unknown key 'confg' (did you mean 'config'?) (expected class_name and config)");
  const Registry<int> vowel("integer");
  EXPECT_EQ(error_of([&] { vowel.from_config(Config(true)); }),
            "an integer is a name or {class_name, config}, got true");
}

TEST(Registry, AProgramAddsItsOwnClasses) {
  Registry<int> r("number");
  add_numbers(r);
  r.add("Three", [](const Config&) { return 3; }, {"three"});
  EXPECT_EQ(r.from_config(Config("three")), 3);
  r.add("Two", [](const Config&) { return 22; });  // replaces
  EXPECT_EQ(r.from_config(Config("Two")), 22);
}

TEST(Registry, EveryKindOfObjectIsBuiltThroughOne) {
  EXPECT_EQ(layer_registry().what(), "layer type");
  EXPECT_EQ(losses::registry().find("mse"), "MeanSquaredError");
  EXPECT_EQ(metrics::registry().find("sparse_categorical_accuracy"), "SparseCategoricalAccuracy");
  EXPECT_EQ(optimizers::registry().find("adam"), "Adam");
  EXPECT_EQ(optimizers::schedules::registry().find("CosineDecay"), "CosineDecay");
  EXPECT_EQ(callbacks::registry().find("EarlyStopping"), "EarlyStopping");
  EXPECT_EQ(initializers::registry().find("he_normal"), "HeNormal");
  EXPECT_EQ(regularizers::registry().find("l1_l2"), "L1L2");
  EXPECT_EQ(activations::registry().find("relu6"), "relu6");
  // The same errors everywhere.
  EXPECT_EQ(error_of([] { optimizers::optimizer_from_config(Config("adamm")); })
                .find("unknown optimizer 'adamm' (did you mean 'adam'?); known: Adadelta, "),
            0u);
  EXPECT_EQ(error_of([] { initializers::Initializer::from_config(Config("he_norml")); })
                .find("unknown initializer 'he_norml' (did you mean 'he_normal'?); known: Constant, "),
            0u);
}

TEST(Registry, LayersAcceptTheKeysOfAFunctionalModelsLayerEntries) {
  const Config entry = Config::parse_json(R"({"class_name": "Dense", "name": "fc", "inbound_nodes": [],
      "build_config": {"input_shape": [null, 3]}, "config": {"units": 2, "name": "fc"}})");
  EXPECT_EQ(layer_from_config(entry)->name(), "fc");
}

TEST(Registry, InitializerAndRegularizerArgumentsAreCheckedPerClass) {
  EXPECT_EQ(error_of([] {
              initializers::Initializer::from_config(
                  Config::parse_json(R"({"class_name": "GlorotUniform", "config": {"stddev": 1}})"));
            }),
            "initializer GlorotUniform: unknown argument 'stddev'; its arguments: seed");
  const auto l1l2 = regularizers::Regularizer::from_config(Config("l1_l2"));
  EXPECT_DOUBLE_EQ(l1l2.l1, 0.01);
  EXPECT_DOUBLE_EQ(l1l2.l2, 0.01);
  const auto only_l1 =
      regularizers::Regularizer::from_config(Config::parse_json(R"({"class_name": "L1L2", "config": {"l1": 0.5}})"));
  EXPECT_DOUBLE_EQ(only_l1.l1, 0.5);
  EXPECT_DOUBLE_EQ(only_l1.l2, 0.0);
  EXPECT_DOUBLE_EQ(regularizers::Regularizer::from_config(Config("L2")).l2, 0.01);
}

}  // namespace
}  // namespace tower
