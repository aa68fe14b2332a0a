// Optimizers against Keras itself: every tests/reference/optimizers/<case>.json except schedules.json, written by
// make_optimizer_fixtures.py (Keras 3 on TensorFlow), holds an optimizer config, two variables, five steps of
// gradients and the variables after each step. Each file is one test, OptimizerKeras.Matches/<case>:
//
//   optimizer_from_config(fixture "optimizer") -> exclude_from_weight_decay (where the fixture names variables)
//   -> apply_gradients step by step -> compare the learning rate before each step and both variables after it
//   (tolerances in optimizer_testing.h) -> with use_ema, finalize_variable_values and compare again.
//
// OptimizerKeras.ReadsKerasConfig/<case> builds the optimizer from the config Keras itself wrote (with its
// name, use_ema, ... and a schedule's "module") and checks that it is the same optimizer.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <optional>

#include "optimizers/optimizer_testing.h"

namespace tower::optimizers {
namespace {

namespace fs = std::filesystem;
using testing::kAtol;
using testing::kRtol;

std::vector<std::string> case_names() {
  std::vector<std::string> names;
  std::error_code ec;
  if (!fs::is_directory(testing::fixture_dir(), ec)) return names;
  for (const auto& entry : fs::directory_iterator(testing::fixture_dir(), ec)) {
    const fs::path& p = entry.path();
    if (entry.is_regular_file() && p.extension() == ".json" && p.stem() != "schedules")
      names.push_back(p.stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::vector<VariablePtr> fixture_variables(const Config& doc) {
  std::vector<VariablePtr> vars;
  for (const Config& v : doc.at("variables").as_list())
    vars.push_back(testing::make_variable("dense/" + v.at("name").as_string(), testing::tensor_from(v)));
  return vars;
}

std::vector<Tensor> tensors_of(const Config& list) {
  std::vector<Tensor> out;
  for (const Config& t : list.as_list()) out.push_back(testing::tensor_from(t));
  return out;
}

class OptimizerKeras : public ::testing::TestWithParam<std::string> {};

TEST_P(OptimizerKeras, Matches) {
  const Config doc = testing::load_fixture(GetParam());
  const OptimizerPtr opt = optimizer_from_config(doc.at("optimizer"));
  ASSERT_EQ(opt->type(), doc.at("optimizer").at("class_name").as_string());
  if (doc.contains("exclude_from_weight_decay")) {
    std::vector<std::string> names;
    for (const Config& n : doc.at("exclude_from_weight_decay").as_list()) names.push_back(n.as_string());
    opt->exclude_from_weight_decay(names);
  }
  const std::vector<VariablePtr> vars = fixture_variables(doc);
  const Config::List& gradients = doc.at("gradients").as_list();
  const Config::List& after = doc.at("after").as_list();
  const Config::List& rates = doc.at("learning_rates").as_list();
  ASSERT_EQ(gradients.size(), after.size());
  for (std::size_t step = 0; step < gradients.size(); ++step) {
    SCOPED_TRACE("step " + std::to_string(step + 1));
    const double want_lr = rates[step].as_double();
    EXPECT_NEAR(opt->learning_rate(), want_lr, kAtol + kRtol * std::fabs(want_lr));
    opt->apply_gradients(vars, tensors_of(gradients[step]));
    const std::vector<Tensor> want = tensors_of(after[step]);
    for (std::size_t i = 0; i < vars.size(); ++i)
      tower::testing::expect_near(vars[i]->value, want[i], kAtol, kRtol, vars[i]->path);
  }
  EXPECT_EQ(opt->iterations(), static_cast<std::int64_t>(gradients.size()));
  if (doc.contains("finalized")) {
    SCOPED_TRACE("finalize_variable_values");
    opt->finalize_variable_values(vars);
    const std::vector<Tensor> want = tensors_of(doc.at("finalized"));
    for (std::size_t i = 0; i < vars.size(); ++i)
      tower::testing::expect_near(vars[i]->value, want[i], kAtol, kRtol, vars[i]->path);
  }
}

TEST_P(OptimizerKeras, ReadsKerasConfig) {
  const Config doc = testing::load_fixture(GetParam());
  const OptimizerPtr ours = optimizer_from_config(doc.at("optimizer"));
  const OptimizerPtr from_keras = optimizer_from_config(doc.at("keras_config"));
  Config theirs_config = from_keras->get_config(), ours_config = ours->get_config();
  // Keras keeps a constant learning rate in a float32 variable and writes that value (0.05 -> 0.0500000007...).
  const Config& lr = theirs_config.at("learning_rate");
  if (lr.is_number()) {
    EXPECT_EQ(static_cast<float>(lr.as_double()), static_cast<float>(ours_config.at("learning_rate").as_double()));
    theirs_config.set("learning_rate", 0.0);
    ours_config.set("learning_rate", 0.0);
  }
  EXPECT_EQ(theirs_config, ours_config) << theirs_config.to_json() << "\nvs\n" << ours_config.to_json();
  // Keras' own values for every argument it wrote (Tower writes the same keys).
  const Config mine = from_keras->get_config();
  for (const auto& [key, value] : doc.at("keras_config").at("config").as_map()) {
    if (key == "learning_rate" || !mine.contains(key)) continue;  // checked above
    EXPECT_EQ(mine.at(key), value) << key;
  }
}

INSTANTIATE_TEST_SUITE_P(, OptimizerKeras, ::testing::ValuesIn(case_names()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(OptimizerKeras);

TEST(OptimizerKerasFixtures, CoverEveryOptimizer) {
  const std::vector<std::string> names = case_names();
  ASSERT_FALSE(names.empty()) << "no fixtures in " << testing::fixture_dir()
                              << "; run tests/reference/make_optimizer_fixtures.py";
  for (const char* type : {"SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Adamax", "Nadam", "Lion",
                           "Ftrl", "Lamb", "Adafactor"}) {
    const auto n = std::count_if(names.begin(), names.end(),
                                 [&](const std::string& s) { return s.rfind(std::string(type) + "_", 0) == 0; });
    EXPECT_GE(n, 2) << type;
  }
}

// Keras' fit with each new optimizer and with the base options (use_ema with its overwrites and the final swap,
// gradient_accumulation_steps, exclude_from_weight_decay): tests/reference/optimizers/fit/<case>.json, written by
// make_optimizer_fixtures.py. The same fit runs without a strategy (one training step per batch, as a captured
// step runs it: prepare_step, run_step, finish_step) and under MirroredStrategy on two CPU replicas; both must end
// where Keras does (per-epoch loss and final weights within 2e-4).
std::vector<std::string> fit_case_names() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(testing::fixture_dir() / "fit", ec))
    if (entry.path().extension() == ".json") names.push_back(entry.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

constexpr double kFitTolerance = 2e-4;

void expect_fit_matches_keras(const Config& doc, const std::optional<distribute::Strategy>& strategy) {
  std::optional<Model> model;
  OptimizerPtr opt = optimizer_from_config(doc.at("optimizer"));
  std::vector<std::string> excluded;
  for (const Config& n : doc.at("exclude_from_weight_decay").as_list()) excluded.push_back(n.as_string());
  opt->exclude_from_weight_decay(excluded);
  {
    std::optional<distribute::StrategyScope> scope;
    if (strategy) scope.emplace(strategy->scope());
    model.emplace(Sequential({InputLayer({.shape = {4}}), layers::Dense({.units = 3})}));
    model->compile(opt, losses::MeanSquaredError());
  }
  model->set_weights({testing::tensor_from(doc.at("kernel")), testing::tensor_from(doc.at("bias"))});
  FitOptions options;
  options.batch_size = 4;
  options.epochs = 3;
  options.shuffle = false;
  options.verbose = 0;
  const callbacks::History history =
      model->fit(testing::tensor_from(doc.at("x")), testing::tensor_from(doc.at("y")), options);
  const Config::List& loss = doc.at("loss").as_list();
  ASSERT_EQ(history["loss"].size(), loss.size());
  for (std::size_t e = 0; e < loss.size(); ++e)
    EXPECT_NEAR(history["loss"][e], loss[e].as_double(), kFitTolerance * std::max(1.0, std::fabs(loss[e].as_double())))
        << "epoch " << e;
  const std::vector<Tensor> weights = model->get_weights();
  const std::vector<Tensor> want = tensors_of(doc.at("after"));
  ASSERT_EQ(weights.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i)
    tower::testing::expect_near(weights[i], want[i], kFitTolerance, kFitTolerance, i == 0 ? "kernel" : "bias");
}

class OptimizerKerasFit : public ::testing::TestWithParam<std::string> {};

TEST_P(OptimizerKerasFit, MatchesKeras) {
  expect_fit_matches_keras(testing::load_fixture("fit/" + GetParam()), std::nullopt);
}

TEST_P(OptimizerKerasFit, MatchesKerasOnTwoCpuReplicas) {
  const distribute::MirroredStrategy strategy({"cpu:0", "cpu:1"});
  ASSERT_EQ(strategy.num_replicas_in_sync(), 2);
  expect_fit_matches_keras(testing::load_fixture("fit/" + GetParam()), strategy);
}

INSTANTIATE_TEST_SUITE_P(, OptimizerKerasFit, ::testing::ValuesIn(fit_case_names()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(OptimizerKerasFit);

}  // namespace
}  // namespace tower::optimizers
