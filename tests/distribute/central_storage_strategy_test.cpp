// CentralStorageStrategy on CPU replicas: it trains exactly as MirroredStrategy does on the same devices, data and
// initial weights (weights after 20 steps and a fit with short batches to 1e-5, the same losses), both with every
// replica computing with the model's one copy of the variables in host memory (no replica holds a copy or an
// optimizer of its own) and with every replica reading the variables into a copy of its own at each step, as
// replicas on other devices than the parameter device do (read_copies). Its devices and errors as its header says.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>

#include "api/engine/plan.h"
#include "distribute/detail/mirrored_replicas.h"
#include "distribute/replica_testing.h"
#include "tower/tower.h"

namespace tower {
namespace {

using testing::relative_difference;

constexpr double kBound = 1e-5;
constexpr int kSteps = 20;
constexpr Index kBatch = 12;

struct Trained {
  std::optional<Model> model;
  std::vector<Tensor> weights;
  std::vector<double> losses;  // per epoch: 20 steps of 12, then 41 examples (short batches)
};

const testing::Examples& examples(bool short_run) {
  static const testing::Examples steps = testing::seeded_examples(kSteps * kBatch, 41);
  static const testing::Examples odd = testing::seeded_examples(41, 42);
  return short_run ? odd : steps;
}

std::vector<Tensor> values(const std::vector<VariablePtr>& variables) {
  std::vector<Tensor> out;
  for (const VariablePtr& v : variables) out.push_back(v->value.to(Device::cpu()).clone());
  return out;
}

Trained train(const distribute::Strategy& strategy, std::vector<Tensor>& initial) {
  Trained run;
  {
    auto scope = strategy.scope();
    run.model.emplace(testing::small_convnet(true, false));
    run.model->compile(optimizers::Adam(1e-3), losses::SparseCategoricalCrossentropy(),
                       {metrics::SparseCategoricalAccuracy()});
  }
  if (initial.empty())
    initial = run.model->get_weights();
  else
    run.model->set_weights(initial);
  FitOptions options;
  options.verbose = 0;
  for (const bool short_run : {false, true}) {
    const testing::Examples& e = examples(short_run);
    const callbacks::History h =
        run.model->fit(data::Dataset::from_tensor_slices({e.x, e.y}).batch(kBatch), options);
    run.losses.push_back(h["loss"][0]);
  }
  run.weights = run.model->get_weights();
  return run;
}

std::vector<std::string> cpu_devices(int n) {
  std::vector<std::string> devices;
  for (int r = 0; r < n; ++r) devices.push_back("cpu:" + std::to_string(r));
  return devices;
}

distribute::detail::MirroredReplicas& replicas_of(Model& model) {
  auto* r = dynamic_cast<distribute::detail::MirroredReplicas*>(model.impl().replicas());
  if (!r) throw std::logic_error("the model has no MirroredReplicas");
  return *r;
}

class CentralStorageEqualsMirrored : public ::testing::TestWithParam<std::tuple<int, bool>> {};

TEST_P(CentralStorageEqualsMirrored, SameWeightsAndLosses) {
  const auto [replicas, read_copies] = GetParam();
  std::vector<Tensor> initial;
  const Trained mirrored = train(distribute::MirroredStrategy(cpu_devices(replicas)), initial);
  const Trained central = train(
      distribute::CentralStorageStrategy(cpu_devices(replicas), std::nullopt, {.read_copies = read_copies}), initial);
  const std::vector<VariablePtr> variables = mirrored.model->weights();
  ASSERT_EQ(central.weights.size(), mirrored.weights.size());
  for (std::size_t i = 0; i < mirrored.weights.size(); ++i)
    EXPECT_LE(relative_difference(central.weights[i], mirrored.weights[i]), kBound) << variables[i]->path;
  ASSERT_EQ(central.losses.size(), mirrored.losses.size());
  for (std::size_t e = 0; e < mirrored.losses.size(); ++e)
    EXPECT_LE(std::fabs(central.losses[e] - mirrored.losses[e]), kBound * std::fabs(mirrored.losses[e]))
        << "epoch " << e;
  EXPECT_GT(relative_difference(central.weights[0], initial[0]), 1e-3) << "training did not move the weights";
}

INSTANTIATE_TEST_SUITE_P(, CentralStorageEqualsMirrored,
                         ::testing::Combine(::testing::Values(2, 3), ::testing::Bool()),
                         [](const ::testing::TestParamInfo<std::tuple<int, bool>>& info) {
                           return std::to_string(std::get<0>(info.param)) + "Replicas" +
                                  (std::get<1>(info.param) ? "_ReadCopies" : "");
                         });

// Every replica's plan computes with the model's own variables (the same objects, the same memory, on the
// parameter device), and no replica has an optimizer of its own: the one update is the model optimizer's.
TEST(CentralStorageStrategy, VariablesStayInOnePlace) {
  distribute::CentralStorageStrategy strategy(cpu_devices(3));
  EXPECT_EQ(strategy.parameter_device(), Device::cpu());
  std::optional<Model> model;
  {
    auto scope = strategy.scope();
    model.emplace(testing::small_convnet(true, false));
    model->compile(optimizers::Adam(1e-3), losses::SparseCategoricalCrossentropy());
  }
  const testing::Examples& e = examples(false);
  for (int s = 0; s < 3; ++s)
    model->train_on_batch(e.x.slice(s * kBatch, (s + 1) * kBatch), e.y.slice(s * kBatch, (s + 1) * kBatch));
  distribute::detail::MirroredReplicas& replicas = replicas_of(*model);
  ASSERT_EQ(replicas.num_local(), 3);
  EXPECT_FALSE(replicas.mirrored());
  for (int r = 0; r < replicas.num_local(); ++r) EXPECT_FALSE(replicas.has_copy(r)) << "replica " << r;
  const std::vector<VariablePtr> mine = model->weights(), trainable = model->trainable_weights();
  for (int r = 0; r < replicas.num_local(); ++r) {
    const std::vector<VariablePtr> theirs = replicas.replica_weights(r);
    ASSERT_EQ(theirs.size(), mine.size());
    for (std::size_t i = 0; i < mine.size(); ++i) {
      EXPECT_EQ(theirs[i].get(), mine[i].get()) << "replica " << r << " holds a copy of " << mine[i]->path;
      EXPECT_EQ(mine[i]->value.device(), strategy.parameter_device()) << mine[i]->path;
    }
    const Plan& plan = replicas.plan(r, kBatch / 3, true);
    ASSERT_EQ(plan.trainable_weights().size(), trainable.size());
    for (std::size_t i = 0; i < trainable.size(); ++i)
      EXPECT_EQ(plan.trainable_weights()[i].get(), trainable[i].get())
          << "replica " << r << "'s plan computes with a copy of " << trainable[i]->path;
    EXPECT_FALSE(replicas.replica_optimizer(r)) << "replica " << r << " has an optimizer of its own";
  }
  EXPECT_EQ(model->optimizer()->iterations(), 3);
}

// Replicas reading copies: at every step each replica's copy holds the variables as they were when the step began,
// while the variables themselves (on the parameter device) take the one update; the moving statistics the first
// replica's batches updated are the variables' values; no replica has an optimizer.
TEST(CentralStorageStrategy, ReplicasReadTheVariablesAtEachStep) {
  distribute::CentralStorageStrategy strategy(cpu_devices(3), "cpu:0", {.read_copies = true});
  std::optional<Model> model;
  {
    auto scope = strategy.scope();
    model.emplace(testing::small_convnet(true, false));
    model->compile(optimizers::Adam(1e-3), losses::SparseCategoricalCrossentropy());
  }
  const testing::Examples& e = examples(false);
  for (int s = 0; s < 3; ++s) {
    const std::vector<Tensor> before = values(model->weights());
    model->train_on_batch(e.x.slice(s * kBatch, (s + 1) * kBatch), e.y.slice(s * kBatch, (s + 1) * kBatch));
    distribute::detail::MirroredReplicas& replicas = replicas_of(*model);
    const std::vector<VariablePtr> mine = model->weights();
    const std::vector<VariablePtr> trainable = model->trainable_weights();
    EXPECT_GT(relative_difference(mine[0]->value, before[0]), 0.0) << "step " << s << " did not update the variables";
    for (int r = 0; r < replicas.num_local(); ++r) {
      ASSERT_TRUE(replicas.has_copy(r)) << "replica " << r;
      EXPECT_FALSE(replicas.replica_optimizer(r)) << "replica " << r << " has an optimizer of its own";
      const std::vector<VariablePtr> theirs = replicas.replica_weights(r);
      ASSERT_EQ(theirs.size(), mine.size());
      for (std::size_t i = 0; i < mine.size(); ++i) {
        EXPECT_NE(theirs[i].get(), mine[i].get()) << "replica " << r << " computes with " << mine[i]->path;
        if (std::find(trainable.begin(), trainable.end(), mine[i]) != trainable.end())
          EXPECT_EQ(relative_difference(theirs[i]->value, before[i]), 0.0)
              << "step " << s << ": replica " << r << " did not read " << mine[i]->path;
      }
    }
    const std::vector<VariablePtr> statistics = model->non_trainable_weights();
    const std::vector<VariablePtr> first = replicas.replica_model(0).non_trainable_weights();
    ASSERT_EQ(first.size(), statistics.size());
    for (std::size_t i = 0; i < statistics.size(); ++i)
      EXPECT_EQ(relative_difference(statistics[i]->value, first[i]->value), 0.0) << statistics[i]->path;
  }
  EXPECT_EQ(model->optimizer()->iterations(), 3);
}

TEST(CentralStorageStrategy, DevicesAndType) {
  const distribute::CentralStorageStrategy two(cpu_devices(2), "cpu:0");
  EXPECT_EQ(two.type(), "CentralStorageStrategy");
  EXPECT_EQ(two.num_replicas_in_sync(), 2);
  EXPECT_EQ(two.devices(), cpu_devices(2));
  EXPECT_EQ(two.parameter_device(), Device::cpu());
  if (cuda_device_count() == 0) {
    const distribute::CentralStorageStrategy fallback;
    EXPECT_EQ(fallback.devices(), std::vector<std::string>{"cpu:0"});
    EXPECT_EQ(fallback.parameter_device(), Device::cpu());
  }
}

void expect_invalid(const std::function<void()>& make, const std::string& part) {
  try {
    make();
    ADD_FAILURE() << "no error; expected one containing: " << part;
  } catch (const std::invalid_argument& e) {
    const std::string message = e.what();
    EXPECT_EQ(message.rfind("CentralStorageStrategy: ", 0), 0u) << message;
    EXPECT_NE(message.find(part), std::string::npos) << message;
  }
}

TEST(CentralStorageStrategy, ErrorsNameTheProblem) {
  expect_invalid([] { distribute::CentralStorageStrategy(std::vector<std::string>{}); }, "empty");
  expect_invalid([] { distribute::CentralStorageStrategy({"cpu:0", "tpu:1"}); }, "tpu:1");
  expect_invalid([] { distribute::CentralStorageStrategy({"cpu:0", "cpu:0"}); }, "cpu:0");
  expect_invalid([] { distribute::CentralStorageStrategy({"cpu:0", "cpu:1"}, "tpu:0"); }, "tpu:0");
}

// On logical GPUs of one GPU the variables live on that GPU (the parameter device by default), every replica
// computes with them there, and training equals MirroredStrategy's on the same logical GPUs.
TEST(CentralStorageOnLogicalGpus, VariablesOnTheGpuTrainAsMirrored_CUDA) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no GPU visible";
  const testing::LogicalGpusPerGpu two(2);
  distribute::CentralStorageStrategy central({"gpu:0", "gpu:1"});
  EXPECT_EQ(central.parameter_device(), Device::cuda(0));
  std::vector<Tensor> initial;
  const Trained mirrored = train(distribute::MirroredStrategy({"gpu:0", "gpu:1"}), initial);
  const Trained got = train(central, initial);
  for (std::size_t i = 0; i < mirrored.weights.size(); ++i)
    EXPECT_LE(relative_difference(got.weights[i].to(Device::cpu()), mirrored.weights[i].to(Device::cpu())), kBound)
        << "weight " << i;
  for (const VariablePtr& v : got.model->weights()) EXPECT_EQ(v->value.device(), Device::cuda(0)) << v->path;
  Model trained = *got.model;
  EXPECT_FALSE(replicas_of(trained).mirrored());
}

// Variables in host memory, compute on GPUs: the replicas read them onto their GPUs at every step, the summed
// gradients come back to the host for the update. One GPU, then two physical GPUs (two or more needed).
TEST(CentralStorageOnGpus, HostVariablesTrainAsMirrored_CUDA) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no GPU visible";
  const testing::LogicalGpusPerGpu one(1);
  std::vector<std::vector<std::string>> device_sets = {{"gpu:0"}};
  if (cuda_device_count() >= 2) device_sets.push_back({"gpu:0", "gpu:1"});
  for (const std::vector<std::string>& devices : device_sets) {
    distribute::CentralStorageStrategy central(devices, "cpu:0");
    EXPECT_EQ(central.parameter_device(), Device::cpu());
    std::vector<Tensor> initial;
    const Trained mirrored = train(distribute::MirroredStrategy(devices), initial);
    const Trained got = train(central, initial);
    for (std::size_t i = 0; i < mirrored.weights.size(); ++i)
      EXPECT_LE(relative_difference(got.weights[i].to(Device::cpu()), mirrored.weights[i].to(Device::cpu())), kBound)
          << devices.size() << " GPU(s), weight " << i;
    for (const VariablePtr& v : got.model->weights()) EXPECT_EQ(v->value.device(), Device::cpu()) << v->path;
  }
}

}  // namespace
}  // namespace tower
