// Custom training loops under MirroredStrategy on 2 CPU replicas: distribute_dataset, run (a GradientTape per
// replica on the replica's plan, each replica's loss divided by the global batch) and reduce(SUM) of the
// gradients, applied once, must end where fit ends on the same data from the same initial weights: every weight
// within a relative difference of 1e-5 after 20 steps, against fit without a strategy and against fit under
// the same strategy (BatchNormalization's per-replica statistics included). Plain SGD, whose step follows the
// gradients' scale (Adam's would hide a sum taken as a mean).
#include <gtest/gtest.h>

#include <cmath>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "distribute/replica_testing.h"
#include "tower/tower.h"

namespace tower {
namespace {

using testing::relative_difference;

constexpr Index kBatch = 8;
constexpr int kSteps = 20;

const testing::Examples& examples() {
  static const testing::Examples e = testing::seeded_examples(kBatch * kSteps - 3, 31);  // a short last batch
  return e;
}

data::Dataset dataset() { return data::Dataset::from_tensor_slices({examples().x, examples().y}).batch(kBatch); }

Model make_model(const std::optional<distribute::Strategy>& strategy, bool batch_norm) {
  std::optional<distribute::StrategyScope> scope;
  if (strategy) scope.emplace(strategy->scope());
  return testing::small_convnet(batch_norm, false);
}

std::vector<Tensor> fit_weights(const std::optional<distribute::Strategy>& strategy, bool batch_norm,
                                const std::vector<Tensor>& initial) {
  Model model = make_model(strategy, batch_norm);
  model.set_weights(initial);
  model.compile(optimizers::SGD(0.1), losses::SparseCategoricalCrossentropy());
  FitOptions options;
  options.verbose = 0;
  model.fit(dataset(), options);
  return model.get_weights();
}

struct LoopResult {
  std::vector<Tensor> weights;
  int steps = 0;
  std::set<std::thread::id> threads;
  std::vector<double> losses;
};

LoopResult custom_loop(const distribute::Strategy& strategy, bool batch_norm, const std::vector<Tensor>& initial) {
  Model model = make_model(strategy, batch_norm);
  model.set_weights(initial);
  optimizers::OptimizerPtr optimizer = optimizers::SGD(0.1);
  losses::LossPtr loss_fn = losses::SparseCategoricalCrossentropy();
  LoopResult result;
  std::mutex mutex;
  auto it = distribute::distribute_dataset(strategy, dataset()).make_iterator();
  while (auto batch = it.next()) {
    struct Out {
      std::vector<Tensor> grads;
      Tensor loss;
    };
    distribute::PerReplica<Out> per_replica = distribute::run(strategy, model, *batch, [&](distribute::ReplicaStep& step) {
      {
        std::lock_guard<std::mutex> lock(mutex);
        result.threads.insert(std::this_thread::get_id());
      }
      GradientTape tape;
      Tensor probs = step.call(tape, step.batch()[0]);
      Tensor loss = tape.loss(loss_fn, step.batch()[1], probs, {.global_batch_size = step.global_batch_size()});
      return Out{tape.gradient(loss, step.trainable_weights()), loss};
    });
    distribute::PerReplica<std::vector<Tensor>> grads;
    distribute::PerReplica<Tensor> losses;
    for (Out& o : per_replica.values) {
      grads.values.push_back(o.grads);
      losses.values.push_back(o.loss);
    }
    const std::vector<Tensor> summed = distribute::reduce(strategy, distribute::ReduceOp::SUM, grads);
    result.losses.push_back(distribute::reduce(strategy, distribute::ReduceOp::SUM, losses).item());
    optimizer->apply_gradients(optimizers::zip(summed, model.trainable_weights()));
    ++result.steps;
  }
  result.weights = model.get_weights();
  return result;
}

void expect_same_weights(const std::vector<Tensor>& got, const std::vector<Tensor>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t k = 0; k < got.size(); ++k)
    EXPECT_LT(relative_difference(got[k], want[k]), 1e-5) << what << ", weight " << k;
}

TEST(CustomLoop, StrategyRunOnTwoCpuReplicasEqualsFit) {
  set_random_seed(41);
  const distribute::MirroredStrategy strategy({"cpu:0", "cpu:1"});
  const std::vector<Tensor> initial = make_model(std::nullopt, false).get_weights();
  const LoopResult loop = custom_loop(strategy, false, initial);
  EXPECT_EQ(loop.steps, kSteps);
  EXPECT_EQ(loop.threads.size(), 2u);  // fn ran on the two replica threads
  const std::vector<Tensor> fitted = fit_weights(std::nullopt, false, initial);
  expect_same_weights(loop.weights, fitted, "custom loop on 2 replicas against fit without a strategy");
  expect_same_weights(loop.weights, fit_weights(strategy, false, initial), "against fit on the same 2 replicas");
  // The weights moved: the comparison is not between two untrained models.
  EXPECT_GT(relative_difference(loop.weights[0], initial[0]), 1e-3);
  ASSERT_EQ(loop.losses.size(), static_cast<std::size_t>(kSteps));
  for (double l : loop.losses) EXPECT_TRUE(std::isfinite(l) && l > 0);
}

TEST(CustomLoop, PerReplicaBatchNormalizationEqualsFitUnderTheStrategy) {
  set_random_seed(42);
  const distribute::MirroredStrategy strategy({"cpu:0", "cpu:1"});
  const std::vector<Tensor> initial = make_model(strategy, true).get_weights();
  const LoopResult loop = custom_loop(strategy, true, initial);
  EXPECT_EQ(loop.steps, kSteps);
  EXPECT_GT(relative_difference(loop.weights[0], initial[0]), 1e-3);
  expect_same_weights(loop.weights, fit_weights(strategy, true, initial), "BatchNormalization per replica");
}

TEST(CustomLoop, MirroredVariablesTakeTheUpdates) {
  set_random_seed(43);
  const distribute::MirroredStrategy strategy({"cpu:0", "cpu:1"}, nullptr, {.mirror_variables = true});
  const std::vector<Tensor> initial = make_model(std::nullopt, false).get_weights();
  const LoopResult loop = custom_loop(strategy, false, initial);
  expect_same_weights(loop.weights, fit_weights(std::nullopt, false, initial), "mirrored variables");
}

// Every replica with rows of the batch runs once, with its id and the count of replicas in sync; a batch of one
// example leaves the second replica without rows, and run returns one value.
TEST(CustomLoop, RunReportsTheReplicasInSync) {
  const distribute::MirroredStrategy strategy({"cpu:0", "cpu:1"});
  Model model = make_model(strategy, false);
  const testing::Examples ex = testing::seeded_examples(9, 5);
  auto it = distribute::distribute_dataset(strategy, data::Dataset::from_tensor_slices({ex.x, ex.y}).batch(8))
                .make_iterator();
  struct Seen {
    int id, in_sync, local;
    Index rows, global;
  };
  auto seen = [&](distribute::ReplicaStep& step) {
    return Seen{step.replica_id_in_sync_group(), step.num_replicas_in_sync(), step.local_index(),
                step.batch()[0].dim(0), step.global_batch_size()};
  };
  const auto full = distribute::run(strategy, model, *it.next(), seen);
  ASSERT_EQ(full.values.size(), 2u);
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(full.values[r].id, r);
    EXPECT_EQ(full.values[r].local, r);
    EXPECT_EQ(full.values[r].in_sync, 2);
    EXPECT_EQ(full.values[r].rows, 4);
    EXPECT_EQ(full.values[r].global, 8);
  }
  const auto short_batch = distribute::run(strategy, model, *it.next(), seen);
  ASSERT_EQ(short_batch.values.size(), 1u);
  EXPECT_EQ(short_batch.values[0].in_sync, 1);
  EXPECT_EQ(short_batch.values[0].rows, 1);
  EXPECT_FALSE(it.next().has_value());
}

TEST(CustomLoop, ReduceSumAndMean) {
  const distribute::MirroredStrategy strategy({"cpu:0", "cpu:1"});
  distribute::PerReplica<Tensor> v{{Tensor::from_vector(std::vector<float>{1.f, 2.f}, {2}), Tensor::from_vector(std::vector<float>{3.f, 6.f}, {2})}};
  EXPECT_EQ(distribute::reduce(strategy, distribute::ReduceOp::SUM, v).to_vector(), (std::vector<float>{4.f, 8.f}));
  EXPECT_EQ(distribute::reduce(strategy, distribute::ReduceOp::MEAN, v).to_vector(), (std::vector<float>{2.f, 4.f}));
  distribute::PerReplica<std::vector<Tensor>> lists{{{Tensor(), Tensor::full({1}, 1.f)}, {Tensor(), Tensor::full({1}, 2.f)}}};
  const std::vector<Tensor> r = distribute::reduce(strategy, distribute::ReduceOp::SUM, lists);
  EXPECT_FALSE(r[0].defined());  // unconnected on every replica stays unconnected
  EXPECT_EQ(r[1].item(), 3.f);
  distribute::PerReplica<Tensor> bad{{Tensor::full({2}, 1.f), Tensor::full({3}, 1.f)}};
  EXPECT_THROW(distribute::reduce(strategy, distribute::ReduceOp::SUM, bad), std::invalid_argument);
}

TEST(CustomLoop, RunRejectsAModelOfAnotherStrategy) {
  const distribute::MirroredStrategy a({"cpu:0", "cpu:1"}), b({"cpu:0", "cpu:1"});
  Model model = make_model(a, false);
  auto it = distribute::distribute_dataset(b, dataset()).make_iterator();
  const auto batch = it.next();
  try {
    distribute::run(b, model, *batch, [](distribute::ReplicaStep&) {});
    ADD_FAILURE() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("another strategy"), std::string::npos) << e.what();
  }
  // A model made outside any scope under a strategy of 2 replicas.
  Model outside = make_model(std::nullopt, false);
  EXPECT_THROW(distribute::run(b, outside, *batch, [](distribute::ReplicaStep&) {}), std::invalid_argument);
}

}  // namespace
}  // namespace tower
