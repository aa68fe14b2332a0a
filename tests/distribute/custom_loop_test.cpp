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
#include <stdexcept>
#include <string>
#include <set>
#include <thread>

#include "distribute/replica_testing.h"
#include "testing/fixtures.h"
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
                                const std::vector<Tensor>& initial,
                                optimizers::OptimizerPtr optimizer = optimizers::SGD(0.1)) {
  Model model = make_model(strategy, batch_norm);
  model.set_weights(initial);
  model.compile(std::move(optimizer), losses::SparseCategoricalCrossentropy());
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

// Replicas reading copies of the central variables: the first replica's batches move the moving statistics in its
// copy, and run() copies them to the central variables after the step, as fit does (Replicas::after_update).
TEST(CustomLoop, CentralStorageReadingCopiesMovesTheMovingStatistics) {
  set_random_seed(44);
  const distribute::CentralStorageStrategy strategy({"cpu:0", "cpu:1"}, std::nullopt, {.read_copies = true});
  const std::vector<Tensor> initial = make_model(strategy, true).get_weights();
  const LoopResult loop = custom_loop(strategy, true, initial);
  expect_same_weights(loop.weights, fit_weights(strategy, true, initial), "central storage, replicas reading copies");
  Model probe = make_model(std::nullopt, true);
  probe.set_weights(loop.weights);
  const std::vector<VariablePtr> statistics = probe.impl().non_trainable_weights();
  ASSERT_FALSE(statistics.empty());
  double largest = 0;  // moving_mean starts at 0
  for (float v : statistics[0]->value.to_vector()) largest = std::max(largest, std::fabs(static_cast<double>(v)));
  EXPECT_GT(largest, 1e-5) << statistics[0]->path << " never moved";
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

// tf.distribute's reduce(MEAN, axis=None) divides the sum by num_replicas_in_sync, whether or not every replica had
// rows (tests/reference/distribute/reduce.json, from make_distribute_reduce_fixtures.py): each replica's column
// sums of its rows of a global batch, reduced; a batch of one row leaves the second replica without rows (and
// without a value), and MEAN gives half the first replica's value.
TEST(CustomLoop, ReduceMeanDividesByTheReplicasInSync) {
  const Config doc = testing::read_json_fixture("distribute/reduce.json");
  ASSERT_EQ(doc.at("replicas").as_int(), 2);
  const distribute::MirroredStrategy strategy({"cpu:0", "cpu:1"});
  Model model = make_model(strategy, false);
  for (const Config& c : doc.at("cases").as_list()) {
    const std::string name = c.at("name").as_string();
    const Tensor x = testing::fixture_tensor(c.at("x"));
    auto it = distribute::distribute_dataset(strategy, data::Dataset::from_tensor_slices({x}).batch(x.dim(0)))
                  .make_iterator();
    const auto per_replica = distribute::run(strategy, model, *it.next(), [](distribute::ReplicaStep& step) {
      const Tensor rows = step.batch()[0];
      std::vector<float> sums(static_cast<std::size_t>(rows.dim(1)), 0.f);
      const std::vector<float> values = rows.to_vector();
      for (std::size_t k = 0; k < values.size(); ++k) sums[k % sums.size()] += values[k];
      return Tensor::from_vector(sums, {rows.dim(1)});
    });
    const Config::List& want = c.at("values").as_list();
    ASSERT_EQ(per_replica.values.size(), want.size()) << name;
    for (std::size_t r = 0; r < want.size(); ++r)
      EXPECT_EQ(per_replica.values[r].to_vector(), testing::fixture_tensor(want[r]).to_vector()) << name << " " << r;
    EXPECT_EQ(distribute::reduce(strategy, distribute::ReduceOp::MEAN, per_replica).to_vector(),
              testing::fixture_tensor(c.at("mean")).to_vector())
        << name;
    EXPECT_EQ(distribute::reduce(strategy, distribute::ReduceOp::SUM, per_replica).to_vector(),
              testing::fixture_tensor(c.at("sum")).to_vector())
        << name;
    distribute::PerReplica<std::vector<Tensor>> lists;
    for (const Tensor& v : per_replica.values) lists.values.push_back({v});
    EXPECT_EQ(distribute::reduce(strategy, distribute::ReduceOp::MEAN, lists)[0].to_vector(),
              testing::fixture_tensor(c.at("mean")).to_vector())
        << name << ", lists";
  }
  // More values than replicas in sync are not one value per replica.
  distribute::PerReplica<Tensor> three{{Tensor::full({1}, 1.f), Tensor::full({1}, 1.f), Tensor::full({1}, 1.f)}};
  EXPECT_THROW(distribute::reduce(strategy, distribute::ReduceOp::MEAN, three), std::invalid_argument);
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

// ---- apply_gradients inside run (TensorFlow's apply_gradients in replica context) ------------------------------
// Each replica calls the one optimizer's apply_gradients with its own gradients of its loss share; the optimizer
// sums them over the replicas and applies the sum once per copy of the variables, so the loop ends where fit ends.

std::vector<Tensor> values_of(const std::vector<VariablePtr>& variables) {
  std::vector<Tensor> out;
  for (const VariablePtr& v : variables) out.push_back(v->value.clone());
  return out;
}

struct InsideResult {
  std::vector<Tensor> weights;
  int steps = 0;
  // Per replica of the last step: its copies of the trainable weights right after its apply_gradients.
  std::vector<std::vector<Tensor>> last_copies;
};

// Per replica and step: the replica's trainable weights before its update, its own gradients, and after.
struct Observed {
  std::vector<Tensor> before, gradients, after;
};

InsideResult apply_inside_run(const distribute::Strategy& strategy, const std::vector<Tensor>& initial,
                              const optimizers::OptimizerPtr& optimizer, optimizers::ApplyOptions options = {},
                              std::vector<std::vector<Observed>>* observed = nullptr) {
  Model model = make_model(strategy, false);
  model.set_weights(initial);
  losses::LossPtr loss_fn = losses::SparseCategoricalCrossentropy();
  InsideResult result;
  auto it = distribute::distribute_dataset(strategy, dataset()).make_iterator();
  while (auto batch = it.next()) {
    const auto per_replica = distribute::run(strategy, model, *batch, [&](distribute::ReplicaStep& step) {
      GradientTape tape;
      Tensor probs = step.call(tape, step.batch()[0]);
      Tensor loss = tape.loss(loss_fn, step.batch()[1], probs, {.global_batch_size = step.global_batch_size()});
      const std::vector<VariablePtr>& vars = step.trainable_weights();
      Observed o;
      o.before = values_of(vars);
      const std::vector<Tensor> grads = tape.gradient(loss, vars);
      for (const Tensor& g : grads) o.gradients.push_back(g.clone());
      optimizer->apply_gradients(optimizers::zip(grads, vars), options);
      o.after = values_of(vars);
      return o;
    });
    result.last_copies.clear();
    for (const Observed& o : per_replica.values) result.last_copies.push_back(o.after);
    if (observed) observed->push_back(per_replica.values);
    ++result.steps;
  }
  result.weights = model.get_weights();
  return result;
}

// The loop above, fit without a strategy, fit under the strategy and the reduce-outside loop end at the same
// weights; the optimizer stepped once per global batch.
void expect_inside_run_equals_fit(const distribute::Strategy& strategy, std::uint64_t seed, const std::string& what,
                                  bool replicas_read_copies = false) {
  set_random_seed(seed);
  const std::vector<Tensor> initial = make_model(std::nullopt, false).get_weights();
  optimizers::OptimizerPtr optimizer = optimizers::SGD(0.1);
  const InsideResult inside = apply_inside_run(strategy, initial, optimizer);
  EXPECT_EQ(inside.steps, kSteps);
  EXPECT_EQ(optimizer->iterations(), kSteps) << what << ": one step per global batch, not one per replica";
  EXPECT_GT(relative_difference(inside.weights[0], initial[0]), 1e-3);
  expect_same_weights(inside.weights, fit_weights(std::nullopt, false, initial), what + " against fit");
  expect_same_weights(inside.weights, fit_weights(strategy, false, initial), what + " against fit on the strategy");
  expect_same_weights(inside.weights, custom_loop(strategy, false, initial).weights,
                      what + " against reduce(SUM) outside run");
  // Every replica's copy (the shared one, or its own) holds the final weights; copies read from central storage
  // are read again at the next step.
  ASSERT_EQ(inside.last_copies.size(), static_cast<std::size_t>(strategy.num_replicas_in_sync()));
  if (!replicas_read_copies)
    for (std::size_t r = 0; r < inside.last_copies.size(); ++r)
    expect_same_weights(inside.last_copies[r], inside.weights, what + ", replica " + std::to_string(r) + "'s copy");
}

TEST(CustomLoop, ApplyGradientsInsideRunOnTwoCpuReplicasEqualsFit) {
  expect_inside_run_equals_fit(distribute::MirroredStrategy({"cpu:0", "cpu:1"}), 51, "2 replicas sharing the variables");
}

TEST(CustomLoop, ApplyGradientsInsideRunOnThreeCpuReplicasEqualsFit) {
  expect_inside_run_equals_fit(distribute::MirroredStrategy({"cpu:0", "cpu:1", "cpu:2"}), 52,
                               "3 replicas sharing the variables");
}

TEST(CustomLoop, ApplyGradientsInsideRunWithMirroredVariablesEqualsFit) {
  expect_inside_run_equals_fit(distribute::MirroredStrategy({"cpu:0", "cpu:1"}, nullptr, {.mirror_variables = true}),
                               53, "2 replicas with mirrored variables");
  expect_inside_run_equals_fit(
      distribute::MirroredStrategy({"cpu:0", "cpu:1", "cpu:2"}, nullptr, {.mirror_variables = true}), 54,
      "3 replicas with mirrored variables");
}

TEST(CustomLoop, ApplyGradientsInsideRunUnderCentralStorageEqualsFit) {
  expect_inside_run_equals_fit(distribute::CentralStorageStrategy({"cpu:0", "cpu:1"}), 55,
                               "central storage, replicas computing with the variables in place");
  // Replicas computing with copies read from the central variables: the update reaches the central ones once.
  expect_inside_run_equals_fit(distribute::CentralStorageStrategy({"cpu:0", "cpu:1", "cpu:2"}, std::nullopt,
                                                                  {.read_copies = true}),
                               56, "central storage, replicas reading copies", true);
}

// Adam's slots: each replica's copy of the optimizer keeps its own slots, which take the same steps as the
// model's optimizer's, so the mirrored copies stay equal and end where fit ends.
TEST(CustomLoop, ApplyGradientsInsideRunWithMirroredVariablesKeepsAdamsSlotsInStep) {
  set_random_seed(57);
  const distribute::MirroredStrategy strategy({"cpu:0", "cpu:1", "cpu:2"}, nullptr, {.mirror_variables = true});
  const std::vector<Tensor> initial = make_model(std::nullopt, false).get_weights();
  optimizers::OptimizerPtr adam = optimizers::Adam(1e-2);
  const InsideResult inside = apply_inside_run(strategy, initial, adam);
  EXPECT_EQ(adam->iterations(), kSteps);
  expect_same_weights(inside.weights, fit_weights(strategy, false, initial, optimizers::Adam(1e-2)), "Adam");
  for (std::size_t r = 0; r < inside.last_copies.size(); ++r)
    expect_same_weights(inside.last_copies[r], inside.weights, "Adam, replica " + std::to_string(r) + "'s copy");
}

// skip_gradients_aggregation with mirrored variables: each copy takes its own replica's gradient (plain SGD:
// after = before - 0.1 * own gradient), keeps its values from one step to the next, and the copies drift apart;
// the model's weights are the first replica's copy. The optimizer still counts one step per global batch.
TEST(CustomLoop, SkipGradientsAggregationLetsEachCopyFollowItsOwnGradients) {
  set_random_seed(58);
  const distribute::MirroredStrategy strategy({"cpu:0", "cpu:1"}, nullptr, {.mirror_variables = true});
  const std::vector<Tensor> initial = make_model(std::nullopt, false).get_weights();
  optimizers::OptimizerPtr optimizer = optimizers::SGD(0.1);
  std::vector<std::vector<Observed>> observed;
  const InsideResult inside =
      apply_inside_run(strategy, initial, optimizer, {.skip_gradients_aggregation = true}, &observed);
  EXPECT_EQ(optimizer->iterations(), kSteps);
  ASSERT_EQ(observed.size(), static_cast<std::size_t>(kSteps));
  for (std::size_t t = 0; t < observed.size(); ++t)
    for (std::size_t r = 0; r < observed[t].size(); ++r) {
      const Observed& o = observed[t][r];
      for (std::size_t k = 0; k < o.before.size(); ++k) {
        const std::vector<float> before = o.before[k].to_vector(), grad = o.gradients[k].to_vector(),
                                 after = o.after[k].to_vector();
        for (std::size_t i = 0; i < before.size(); ++i)
          ASSERT_NEAR(after[i], before[i] - 0.1f * grad[i], 1e-6) << "step " << t << ", replica " << r << ", weight " << k;
      }
      // Each copy starts a step where its own last step left it (not at the model's values).
      if (t > 0 && r < observed[t - 1].size())
        for (std::size_t k = 0; k < o.before.size(); ++k)
          EXPECT_EQ(relative_difference(o.before[k], observed[t - 1][r].after[k]), 0.0) << "step " << t << ", replica " << r;
    }
  EXPECT_GT(relative_difference(inside.last_copies[1][0], inside.last_copies[0][0]), 1e-4) << "the copies drifted apart";
  expect_same_weights(inside.weights, inside.last_copies[0], "the model's weights are the first replica's copy");
}

// Replicas sharing one copy of the variables cannot each apply their own gradients to it: every replica throws.
TEST(CustomLoop, SkipGradientsAggregationOnSharedVariablesThrows) {
  const distribute::MirroredStrategy strategy({"cpu:0", "cpu:1"});
  const std::vector<Tensor> initial = make_model(std::nullopt, false).get_weights();
  optimizers::OptimizerPtr optimizer = optimizers::SGD(0.1);
  try {
    apply_inside_run(strategy, initial, optimizer, {.skip_gradients_aggregation = true});
    ADD_FAILURE() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("share one copy"), std::string::npos) << e.what();
  }
  EXPECT_EQ(optimizer->iterations(), 0);
}

// What one step of `fn` on each replica ends with: the exception's message, or "" when run returned.
template <class Fn>
std::string run_step_error(const distribute::Strategy& strategy, Model& model, Fn fn) {
  auto it = distribute::distribute_dataset(strategy, dataset()).make_iterator();
  try {
    distribute::run(strategy, model, *it.next(), fn);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

// A replica that throws, or calls differently from the others, ends the step with an error naming the problem on
// every replica, never a hang; the next step runs normally.
TEST(CustomLoop, ApplyGradientsInsideRunReportsFailuresAndMismatches) {
  set_random_seed(59);
  for (const bool mirrored : {false, true}) {
    SCOPED_TRACE(mirrored ? "mirrored variables" : "shared variables");
    const distribute::MirroredStrategy strategy({"cpu:0", "cpu:1", "cpu:2"}, nullptr, {.mirror_variables = mirrored});
    Model model = make_model(strategy, false);
    optimizers::OptimizerPtr optimizer = optimizers::SGD(0.1);
    losses::LossPtr loss_fn = losses::SparseCategoricalCrossentropy();
    // The replica's gradients, or only the first `count` of them.
    auto apply = [&](distribute::ReplicaStep& step, std::size_t count, optimizers::ApplyOptions options = {}) {
      GradientTape tape;
      Tensor probs = step.call(tape, step.batch()[0]);
      Tensor loss = tape.loss(loss_fn, step.batch()[1], probs, {.global_batch_size = step.global_batch_size()});
      std::vector<VariablePtr> vars = step.trainable_weights();
      vars.resize(std::min(count, vars.size()));
      optimizer->apply_gradients(optimizers::zip(tape.gradient(loss, vars), vars), options);
    };
    const std::size_t all = model.trainable_weights().size();

    // Replica 1 fails before its apply_gradients while the others wait in theirs.
    EXPECT_EQ(run_step_error(strategy, model, [&](distribute::ReplicaStep& step) {
                if (step.local_index() == 1) throw std::runtime_error("replica 1 failed");
                apply(step, all);
              }),
              "replica 1 failed");
    // Replica 2 returns without calling apply_gradients.
    std::string error = run_step_error(strategy, model, [&](distribute::ReplicaStep& step) {
      if (step.local_index() != 2) apply(step, all);
    });
    EXPECT_NE(error.find("replica 2 finished its step"), std::string::npos) << error;
    // Replica 1 applies gradients to fewer variables.
    error = run_step_error(strategy, model,
                           [&](distribute::ReplicaStep& step) { apply(step, step.local_index() == 1 ? 2 : all); });
    EXPECT_NE(error.find("replica 1 applies gradients to 2 variables and replica 0 to " + std::to_string(all)),
              std::string::npos)
        << error;
    // Replica 2 skips the aggregation, the others do not.
    error = run_step_error(strategy, model, [&](distribute::ReplicaStep& step) {
      apply(step, all, {.skip_gradients_aggregation = step.local_index() == 2});
    });
    EXPECT_NE(error.find("replica 2 skips summing"), std::string::npos) << error;
    EXPECT_EQ(optimizer->iterations(), 0) << "no failed step updated the variables";
    // And a step in which every replica makes the same call runs.
    EXPECT_EQ(run_step_error(strategy, model, [&](distribute::ReplicaStep& step) { apply(step, all); }), "");
    EXPECT_EQ(optimizer->iterations(), 1);
  }
}

// Outside run, and on a model without replicas, apply_gradients is the plain update.
TEST(CustomLoop, ApplyGradientsOutsideRunIsUnchanged) {
  EXPECT_EQ(current_replica_context(), nullptr);
  auto v = std::make_shared<Variable>();
  v->name = v->path = "v";
  v->value = Tensor::full({2}, 1.f);
  optimizers::OptimizerPtr sgd = optimizers::SGD(0.5);
  sgd->apply_gradients({v}, {Tensor::full({2}, 1.f)}, {.skip_gradients_aggregation = true});
  EXPECT_EQ(v->value.to_vector(), (std::vector<float>{0.5f, 0.5f}));
  EXPECT_EQ(sgd->iterations(), 1);
}

}  // namespace
}  // namespace tower
