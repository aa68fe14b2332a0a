// Mirrored variables on the CPU: with MirroredStrategyOptions::mirror_variables, CPU replicas hold their own copies
// of every variable exactly as replicas on several physical GPUs do (a model rebuilt from the config per replica,
// its own optimizer and slots, the summed gradients copied to it or left in its buffer by an all-reduce). 2 and 4
// such replicas must train as one replica does (20 steps of 8 examples, then a fit whose short last batches leave
// replicas without rows), with and without synchronized BatchNormalization; every replica's copies must stay
// identical to the model's own variables (the first replica's), optimizer slots included; and what reads the
// model's weights (get_weights, save_weights, evaluate and predict) must see the trained values.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <optional>

#include "distribute/detail/device_communicator.h"
#include "distribute/detail/mirrored_replicas.h"
#include "distribute/replica_testing.h"
#include "tower/tower.h"

namespace tower {
namespace {

using testing::relative_difference;

constexpr double kBound = 1e-5;
constexpr int kSteps = 20;
constexpr Index kBatch = 8;

struct TrainedRun {
  std::optional<Model> model;
  std::vector<Tensor> weights;
  callbacks::History first, second;
  callbacks::Logs evaluation;
  Tensor predictions;
};

const testing::Examples& steps_examples() {
  static const testing::Examples e = testing::seeded_examples(kSteps * kBatch, 31);
  return e;
}
const testing::Examples& short_examples() {
  static const testing::Examples e = testing::seeded_examples(41, 32);
  return e;
}

TrainedRun train(const std::optional<distribute::Strategy>& strategy, bool batch_norm, std::vector<Tensor>& initial) {
  TrainedRun run;
  {
    std::optional<distribute::StrategyScope> scope;
    if (strategy) scope.emplace(strategy->scope());
    run.model.emplace(testing::small_convnet(batch_norm, true));
    run.model->compile(optimizers::Adam(1e-3), losses::SparseCategoricalCrossentropy(),
                       {metrics::SparseCategoricalAccuracy()});
  }
  if (initial.empty())
    initial = run.model->get_weights();
  else
    run.model->set_weights(initial);
  FitOptions options;
  options.verbose = 0;
  run.first = run.model->fit(
      data::Dataset::from_tensor_slices({steps_examples().x, steps_examples().y}).batch(kBatch), options);
  run.second = run.model->fit(
      data::Dataset::from_tensor_slices({short_examples().x, short_examples().y}).batch(kBatch), options);
  EvaluateOptions eval;
  eval.verbose = 0;
  run.evaluation = run.model->evaluate(
      data::Dataset::from_tensor_slices({steps_examples().x, steps_examples().y}).batch(kBatch), eval);
  run.predictions = run.model->predict(steps_examples().x);
  run.weights = run.model->get_weights();
  return run;
}

distribute::detail::MirroredReplicas& replicas_of(Model& model) {
  auto* r = dynamic_cast<distribute::detail::MirroredReplicas*>(model.impl().replicas());
  if (!r) throw std::logic_error("the model has no MirroredReplicas");
  return *r;
}

double max_abs_difference(const Tensor& a, const Tensor& b) {
  const Tensor x = a.to(Device::cpu()), y = b.to(Device::cpu());
  double worst = 0;
  for (Index i = 0; i < x.numel(); ++i)
    worst = std::max(worst, std::fabs(static_cast<double>(x.data<float>()[i]) - y.data<float>()[i]));
  return worst;
}

// Every replica's copies equal the model's own variables, bit for bit, and so do their optimizers' slots.
void expect_identical_copies(Model& model, const std::string& what) {
  distribute::detail::MirroredReplicas& replicas = replicas_of(model);
  ASSERT_TRUE(replicas.mirrored()) << what;
  const std::vector<VariablePtr> mine = model.weights();
  for (int r = 1; r < replicas.num_local(); ++r) {
    const std::vector<VariablePtr> theirs = replicas.replica_weights(r);
    ASSERT_EQ(theirs.size(), mine.size());
    for (std::size_t i = 0; i < mine.size(); ++i) {
      EXPECT_NE(theirs[i].get(), mine[i].get()) << what << ": replica " << r << " shares " << mine[i]->path;
      EXPECT_EQ(max_abs_difference(theirs[i]->value, mine[i]->value), 0.0)
          << what << ": replica " << r << "'s copy of " << mine[i]->path;
    }
    const auto& opt = replicas.replica_optimizer(r);
    ASSERT_TRUE(opt) << what << ": replica " << r << " has no optimizer";
    EXPECT_EQ(opt->iterations(), model.impl().optimizer()->iterations());
    const std::vector<VariablePtr>& slots = model.impl().optimizer()->variables();
    ASSERT_EQ(opt->variables().size(), slots.size());
    for (std::size_t i = 0; i < slots.size(); ++i)
      EXPECT_EQ(max_abs_difference(opt->variables()[i]->value, slots[i]->value), 0.0)
          << what << ": replica " << r << "'s slot " << slots[i]->path;
  }
}

void expect_same_run(const TrainedRun& got, const TrainedRun& want, const std::string& what) {
  ASSERT_EQ(got.weights.size(), want.weights.size());
  const std::vector<VariablePtr> variables = want.model->weights();
  for (std::size_t i = 0; i < want.weights.size(); ++i)
    EXPECT_LE(relative_difference(got.weights[i], want.weights[i]), kBound) << what << ": " << variables[i]->path;
  for (const auto* h : {&got.first, &got.second}) {
    const callbacks::History& w = h == &got.first ? want.first : want.second;
    for (const std::string& key : w.keys())
      EXPECT_LE(std::fabs((*h)[key][0] - w[key][0]), kBound * std::fabs(w[key][0])) << what << " " << key;
  }
  for (const auto& [key, value] : want.evaluation.entries())
    EXPECT_LE(std::fabs(*got.evaluation.get(key) - value), kBound * std::fabs(value)) << what << " evaluate " << key;
  EXPECT_LE(relative_difference(got.predictions, want.predictions), kBound) << what << ": predict()";
}

distribute::CrossDeviceOpsPtr nccl_over_threads() {
  return distribute::NcclAllReduce({.communicator = [](const std::vector<distribute::LogicalDevice>& devices) {
    return std::make_shared<distribute::detail::InProcessCommunicator>(static_cast<int>(devices.size()));
  }});
}

class MirroredVariablesEquivalence : public ::testing::TestWithParam<std::tuple<bool, int, bool>> {};

TEST_P(MirroredVariablesEquivalence, MatchOneReplicaAndStayIdentical) {
  const auto [batch_norm, replicas, all_reduce] = GetParam();
  std::vector<Tensor> initial;
  const TrainedRun single = train(std::nullopt, batch_norm, initial);
  std::vector<std::string> devices;
  for (int r = 0; r < replicas; ++r) devices.push_back("cpu:" + std::to_string(r));
  // NcclAllReduce's logic over threads leaves the sum in every replica's buffer; InProcessAllReduce in one buffer,
  // copied to the other replicas.
  distribute::MirroredStrategy strategy(devices, all_reduce ? nccl_over_threads() : nullptr,
                                        {.mirror_variables = true});
  TrainedRun mirrored = train(strategy, batch_norm, initial);
  const std::string what = std::to_string(replicas) + " replicas with copies" +
                           (batch_norm ? ", synchronized BN" : "") + (all_reduce ? ", all-reduce" : "");
  expect_same_run(mirrored, single, what);
  expect_identical_copies(*mirrored.model, what);
  EXPECT_GT(relative_difference(mirrored.weights[0], initial[0]), 1e-3) << "training did not move the weights";
}

INSTANTIATE_TEST_SUITE_P(, MirroredVariablesEquivalence,
                         ::testing::Combine(::testing::Bool(), ::testing::Values(2, 4), ::testing::Bool()),
                         [](const ::testing::TestParamInfo<std::tuple<bool, int, bool>>& info) {
                           return std::string(std::get<0>(info.param) ? "SyncBN" : "NoBN") + "_" +
                                  std::to_string(std::get<1>(info.param)) + "Replicas" +
                                  (std::get<2>(info.param) ? "_AllReduce" : "");
                         });

// Per-replica BatchNormalization: the moving statistics are the first replica's, copied to the others after every
// step, so every copy holds the same values (and evaluate under the strategy agrees with the model alone).
TEST(MirroredVariables, MovingStatisticsAreTheFirstReplicas) {
  distribute::MirroredStrategy strategy({"cpu:0", "cpu:1", "cpu:2"}, nullptr, {.mirror_variables = true});
  std::optional<Model> model;
  {
    auto scope = strategy.scope();
    model.emplace(testing::small_convnet(true, false));
    model->compile(optimizers::SGD(0.05), losses::SparseCategoricalCrossentropy());
  }
  const testing::Examples& e = steps_examples();
  for (int s = 0; s < 5; ++s)
    model->train_on_batch(e.x.slice(s * 12, (s + 1) * 12), e.y.slice(s * 12, (s + 1) * 12));
  expect_identical_copies(*model, "per-replica BN");
  const Tensor moving_mean = model->impl().non_trainable_weights()[0]->value;
  EXPECT_GT(max_abs_difference(moving_mean, Tensor::zeros(moving_mean.shape())), 0.0) << "the statistics never moved";
}

// The model's weights are the first replica's: get_weights, save_weights / load_weights (a Tower weights file,
// matched by position) into a model without a
// strategy, and that model's evaluate see the trained values. Weights written into the model afterwards
// (set_weights) reach every replica's copies before the next evaluate.
TEST(MirroredVariables, ModelWeightsAreTheTrainedValues) {
  std::vector<Tensor> initial;
  distribute::MirroredStrategy strategy({"cpu:0", "cpu:1"}, nullptr, {.mirror_variables = true});
  TrainedRun mirrored = train(strategy, true, initial);
  const auto path = (std::filesystem::temp_directory_path() / "tower_mirrored_variables.weights").string();
  mirrored.model->save_weights(path);
  Model fresh = testing::small_convnet(true, true);
  fresh.compile(optimizers::Adam(1e-3), losses::SparseCategoricalCrossentropy(),
                {metrics::SparseCategoricalAccuracy()});
  fresh.load_weights(path);
  std::remove(path.c_str());
  const std::vector<Tensor> loaded = fresh.get_weights();
  ASSERT_EQ(loaded.size(), mirrored.weights.size());
  for (std::size_t i = 0; i < loaded.size(); ++i) EXPECT_EQ(max_abs_difference(loaded[i], mirrored.weights[i]), 0.0);
  EvaluateOptions eval;
  eval.verbose = 0;
  const auto data = data::Dataset::from_tensor_slices({steps_examples().x, steps_examples().y}).batch(kBatch);
  const callbacks::Logs alone = fresh.evaluate(data, eval);
  for (const auto& [key, value] : alone.entries())
    EXPECT_LE(std::fabs(*mirrored.evaluation.get(key) - value), kBound * std::fabs(value)) << key;

  // Back to the initial weights through the model: the copies follow before evaluate runs on them.
  mirrored.model->set_weights(initial);
  fresh.set_weights(initial);
  const callbacks::Logs reset = mirrored.model->evaluate(data, eval);
  const callbacks::Logs reset_alone = fresh.evaluate(data, eval);
  for (const auto& [key, value] : reset_alone.entries())
    EXPECT_LE(std::fabs(*reset.get(key) - value), kBound * std::fabs(value)) << "after set_weights: " << key;
  const std::vector<VariablePtr> mine = mirrored.model->weights();
  const std::vector<VariablePtr> theirs = replicas_of(*mirrored.model).replica_weights(1);
  for (std::size_t i = 0; i < mine.size(); ++i)
    EXPECT_EQ(max_abs_difference(theirs[i]->value, initial[i]), 0.0) << mine[i]->path;
}

// A layer frozen between fits: every replica's copy freezes it too, and training still matches one replica.
TEST(MirroredVariables, FreezingALayerReachesTheCopies) {
  std::vector<Tensor> initial;
  const auto train_frozen = [&](const std::optional<distribute::Strategy>& strategy) {
    std::optional<Model> model;
    {
      std::optional<distribute::StrategyScope> scope;
      if (strategy) scope.emplace(strategy->scope());
      model.emplace(testing::small_convnet(false, false));
      model->compile(optimizers::Adam(1e-3), losses::SparseCategoricalCrossentropy());
    }
    if (initial.empty())
      initial = model->get_weights();
    else
      model->set_weights(initial);
    const auto data = data::Dataset::from_tensor_slices({steps_examples().x, steps_examples().y}).batch(kBatch);
    FitOptions options;
    options.verbose = 0;
    model->fit(data, options);
    model->impl().layers()[1]->set_trainable(false);
    model->fit(data, options);
    return model->get_weights();
  };
  const std::vector<Tensor> single = train_frozen(std::nullopt);
  distribute::MirroredStrategy strategy({"cpu:0", "cpu:1"}, nullptr, {.mirror_variables = true});
  const std::vector<Tensor> mirrored = train_frozen(strategy);
  ASSERT_EQ(mirrored.size(), single.size());
  for (std::size_t i = 0; i < single.size(); ++i) EXPECT_LE(relative_difference(mirrored[i], single[i]), kBound) << i;
}


// fit, compile with another optimizer in the same scope, fit: Keras' compile replaces the optimizer entirely, so
// every replica's copies take the new optimizer's steps (its type, hyperparameters and fresh slots).
TEST(MirroredVariables, RecompilingReplacesEveryReplicasOptimizer) {
  struct Transition {
    std::string name;
    std::function<optimizers::OptimizerPtr()> first, second;
  };
  const std::vector<Transition> transitions{
      {"SGD -> Adam", [] { return optimizers::SGD(0.05); }, [] { return optimizers::Adam(1e-3); }},
      {"Adam 0.01 -> 0.001", [] { return optimizers::Adam(1e-2); }, [] { return optimizers::Adam(1e-3); }},
      {"SGD momentum -> SGD", [] { return optimizers::SGD({.learning_rate = 0.05, .momentum = 0.9}); },
       [] { return optimizers::SGD(0.05); }},
  };
  for (const Transition& t : transitions) {
    std::vector<Tensor> initial;
    const auto train_twice = [&](const std::optional<distribute::Strategy>& strategy) {
      std::optional<Model> model;
      std::optional<distribute::StrategyScope> scope;
      if (strategy) scope.emplace(strategy->scope());
      model.emplace(testing::small_convnet(false, false));
      model->compile(t.first(), losses::SparseCategoricalCrossentropy());
      if (initial.empty())
        initial = model->get_weights();
      else
        model->set_weights(initial);
      const auto data = data::Dataset::from_tensor_slices({steps_examples().x, steps_examples().y}).batch(kBatch);
      FitOptions options;
      options.verbose = 0;
      model->fit(data, options);
      model->compile(t.second(), losses::SparseCategoricalCrossentropy());
      model->fit(data, options);
      return *model;
    };
    const Model single = train_twice(std::nullopt);
    distribute::MirroredStrategy strategy({"cpu:0", "cpu:1"}, nullptr, {.mirror_variables = true});
    Model mirrored = train_twice(strategy);
    const std::vector<Tensor> want = single.get_weights(), got = mirrored.get_weights();
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t i = 0; i < want.size(); ++i)
      EXPECT_LE(relative_difference(got[i], want[i]), kBound) << t.name << ": " << single.weights()[i]->path;
    expect_identical_copies(mirrored, t.name);
  }
}

// An optimizer without slots (SGD without momentum): a replica's optimizer made after the model's has taken its
// first step (a layer frozen between fits remakes the copies; BackupAndRestore restores a built optimizer) is
// built for the copies of every variable the model's optimizer was built for.
TEST(MirroredVariables, SlotlessOptimizerAfterFreezingOrResuming) {
  std::vector<Tensor> initial;
  const auto data = data::Dataset::from_tensor_slices({steps_examples().x, steps_examples().y}).batch(kBatch);
  FitOptions options;
  options.verbose = 0;
  const auto make = [&](const std::optional<distribute::Strategy>& strategy) {
    std::optional<Model> model;
    std::optional<distribute::StrategyScope> scope;
    if (strategy) scope.emplace(strategy->scope());
    model.emplace(testing::small_convnet(false, false));
    model->compile(optimizers::SGD(0.1), losses::SparseCategoricalCrossentropy());
    if (initial.empty())
      initial = model->get_weights();
    else
      model->set_weights(initial);
    return *model;
  };
  const auto expect_same = [](const Model& got, const Model& want, const std::string& what) {
    const std::vector<Tensor> g = got.get_weights(), w = want.get_weights();
    ASSERT_EQ(g.size(), w.size());
    for (std::size_t i = 0; i < w.size(); ++i)
      EXPECT_LE(relative_difference(g[i], w[i]), kBound) << what << ": " << want.weights()[i]->path;
  };
  distribute::MirroredStrategy strategy({"cpu:0", "cpu:1"}, nullptr, {.mirror_variables = true});
  {
    Model single = make(std::nullopt), mirrored = make(strategy);
    for (Model* m : {&single, &mirrored}) {
      m->fit(data, options);
      m->impl().layers()[1]->set_trainable(false);
      m->fit(data, options);
    }
    expect_same(mirrored, single, "frozen between fits");
  }
  {
    // Two epochs, the second resumed by a fresh model from the first's backup.
    const std::string dir = (std::filesystem::temp_directory_path() / "tower_mirrored_slotless_backup").string();
    std::filesystem::remove_all(dir);
    Model single = make(std::nullopt);
    options.epochs = 2;
    single.fit(data, options);
    Model interrupted = make(strategy);
    options.epochs = 1;
    options.callbacks = {std::make_shared<callbacks::BackupAndRestore>(
        dir, callbacks::BackupAndRestoreOptions{.delete_checkpoint = false})};
    interrupted.fit(data, options);
    Model resumed = make(strategy);
    options.epochs = 2;
    resumed.fit(data, options);
    std::filesystem::remove_all(dir);
    expect_same(resumed, single, "resumed by BackupAndRestore");
    expect_identical_copies(resumed, "resumed by BackupAndRestore");
  }
}

}  // namespace
}  // namespace tower
