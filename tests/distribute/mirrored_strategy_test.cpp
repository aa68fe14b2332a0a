// MirroredStrategy on CPU replicas against the same training without a strategy. The runs see the same global
// batches: 45 examples batched by 8 for two epochs (the last batch of 5 splits 3 + 2 on two replicas and
// 2 + 2 + 1 + 0 on four), then 41 examples for one epoch (the last batch of 1 leaves every replica but the
// first without rows), then evaluate() and predict(). N replicas divide their loss sums by the global batch
// and sum their gradients, so they must end where one replica ends: every weight, including the moving
// statistics of synchronized BatchNormalization, within a relative difference (max |a - b| / max |b|) of 1e-5,
// the same per-epoch loss and accuracy, evaluation and predictions. A model with per-replica (unsynchronized)
// BatchNormalization cannot match one replica, and is compared with TensorFlow instead
// (tf_mirrored_strategy_test.cpp).
#include <gtest/gtest.h>

#include <cmath>
#include <optional>

#include "api/core/alignment.h"
#include "distribute/detail/device_communicator.h"
#include "distribute/detail/gradient_buckets.h"
#include "distribute/detail/mirrored_replicas.h"
#include "distribute/replica_testing.h"
#include "testing/layer_test.h"
#include "tower/tower.h"

namespace tower {
namespace {

using testing::relative_difference;

constexpr double kBound = 1e-5;

struct TrainingRun {
  std::vector<VariablePtr> variables;
  std::vector<Tensor> weights;
  callbacks::History first, second;
  callbacks::Logs evaluation;
  Tensor predictions;
};

const testing::Examples& examples_a() {
  static const testing::Examples e = testing::seeded_examples(45, 11);
  return e;
}
const testing::Examples& examples_b() {
  static const testing::Examples e = testing::seeded_examples(41, 12);
  return e;
}

// Trains a fresh model from `initial` (or records its initial weights there) under `strategy` (none: no
// strategy).
TrainingRun train(const std::optional<distribute::Strategy>& strategy, bool batch_norm, std::vector<Tensor>& initial) {
  TrainingRun run;
  std::optional<Model> model;
  {
    std::optional<distribute::StrategyScope> scope;
    if (strategy) scope.emplace(strategy->scope());
    model.emplace(testing::small_convnet(batch_norm, true));
    (*model).compile(optimizers::Adam(1e-3), losses::SparseCategoricalCrossentropy(),
                     {metrics::SparseCategoricalAccuracy()});
  }
  if (initial.empty())
    initial = model->get_weights();
  else
    model->set_weights(initial);
  // Outside the scope: the model keeps the strategy it was made with.
  const auto a = data::Dataset::from_tensor_slices({examples_a().x, examples_a().y}).batch(8);
  const auto b = data::Dataset::from_tensor_slices({examples_b().x, examples_b().y}).batch(8);
  FitOptions options;
  options.epochs = 2;
  options.verbose = 0;
  run.first = model->fit(a, options);
  options.epochs = 1;
  run.second = model->fit(b, options);
  EvaluateOptions eval;
  eval.verbose = 0;
  run.evaluation = model->evaluate(a, eval);
  run.predictions = model->predict(examples_a().x);
  run.variables = model->weights();
  run.weights = model->get_weights();
  return run;
}

void expect_same_history(const callbacks::History& got, const callbacks::History& want, const std::string& what) {
  ASSERT_EQ(got.keys(), want.keys()) << what;
  for (const std::string& key : want.keys())
    for (std::size_t e = 0; e < want[key].size(); ++e) {
      const double g = got[key][e], w = want[key][e];
      EXPECT_LE(std::fabs(g - w), kBound * std::fabs(w)) << what << " " << key << " epoch " << e;
    }
}

void expect_same_run(const TrainingRun& got, const TrainingRun& want, const std::string& what) {
  ASSERT_EQ(got.weights.size(), want.weights.size());
  double worst = 0;
  for (std::size_t i = 0; i < want.weights.size(); ++i) {
    const double d = relative_difference(got.weights[i], want.weights[i]);
    worst = std::max(worst, d);
    EXPECT_LE(d, kBound) << what << ": weight " << want.variables[i]->path;
  }
  std::cout << "[ distribute ] " << what << ": largest relative weight difference " << worst << "\n";
  expect_same_history(got.first, want.first, what + " (first fit)");
  expect_same_history(got.second, want.second, what + " (second fit)");
  for (const auto& [key, value] : want.evaluation.entries()) {
    ASSERT_TRUE(got.evaluation.get(key)) << what << ": evaluate() has no " << key;
    EXPECT_LE(std::fabs(*got.evaluation.get(key) - value), kBound * std::fabs(value)) << what << " evaluate " << key;
  }
  EXPECT_LE(relative_difference(got.predictions, want.predictions), kBound) << what << ": predict()";
}

class MirroredEquivalence : public ::testing::TestWithParam<std::tuple<bool, int>> {};

TEST_P(MirroredEquivalence, MatchesOneReplica) {
  const auto [batch_norm, replicas] = GetParam();
  std::vector<Tensor> initial;
  const TrainingRun single = train(std::nullopt, batch_norm, initial);
  std::vector<std::string> devices;
  for (int r = 0; r < replicas; ++r) devices.push_back("cpu:" + std::to_string(r));
  distribute::MirroredStrategy strategy(devices);
  ASSERT_EQ(strategy.num_replicas_in_sync(), replicas);
  const TrainingRun mirrored = train(strategy, batch_norm, initial);
  expect_same_run(mirrored, single,
                  std::to_string(replicas) + " replicas, " + (batch_norm ? "synchronized BN" : "no BN"));
  // Training did something: the weights moved and the loss fell.
  EXPECT_GT(relative_difference(mirrored.weights[0], initial[0]), 1e-3);
  EXPECT_LT(mirrored.second["loss"][0], mirrored.first["loss"][0]);
}

INSTANTIATE_TEST_SUITE_P(, MirroredEquivalence,
                         ::testing::Combine(::testing::Bool(), ::testing::Values(1, 2, 4)),
                         [](const ::testing::TestParamInfo<std::tuple<bool, int>>& info) {
                           return std::string(std::get<0>(info.param) ? "SyncBN" : "NoBN") + "_" +
                                  std::to_string(std::get<1>(info.param)) + "Replicas";
                         });

// The other cross-device ops sum the same gradients in other orders.
TEST(MirroredStrategy, CrossDeviceOpsGiveTheSameTraining) {
  std::vector<Tensor> initial;
  const TrainingRun single = train(std::nullopt, true, initial);
  const std::vector<std::string> devices{"cpu:0", "cpu:1", "cpu:2"};
  const std::vector<std::pair<std::string, distribute::CrossDeviceOpsPtr>> ops{
      {"ReductionToOneDevice", distribute::ReductionToOneDevice({.reduce_to_device = "cpu:2"})},
      {"HierarchicalCopyAllReduce", distribute::HierarchicalCopyAllReduce()},
      {"InProcessAllReduce", distribute::InProcessAllReduce()}};
  for (const auto& [name, op] : ops) {
    distribute::MirroredStrategy strategy(devices, op);
    EXPECT_EQ(strategy.cross_device_ops()->name(), name);
    expect_same_run(train(strategy, true, initial), single, "3 replicas with " + name);
  }
}

// Gradients summed in buckets of 256 bytes as backward produces them train as one replica does, whichever ops sum
// them. Over the injected communicator (NcclAllReduce's logic on CPU replicas), every replica makes the same
// sequence of all-reduces: the buckets of assign_buckets, last layers first, one round per step.
TEST(MirroredStrategy, SmallBucketsGiveTheSameTraining) {
  std::vector<Tensor> initial;
  const TrainingRun single = train(std::nullopt, true, initial);
  std::shared_ptr<distribute::detail::InProcessCommunicator> comm;
  const distribute::CrossDeviceOpsPtr injected =
      distribute::NcclAllReduce({.communicator = [&](const std::vector<distribute::LogicalDevice>& devices) {
        comm = std::make_shared<distribute::detail::InProcessCommunicator>(static_cast<int>(devices.size()));
        return comm;
      }});
  const std::vector<std::pair<std::string, distribute::CrossDeviceOpsPtr>> ops{
      {"InProcessAllReduce", distribute::InProcessAllReduce()},
      {"HierarchicalCopyAllReduce", distribute::HierarchicalCopyAllReduce()},
      {"NcclAllReduce over an in-process communicator", injected}};
  for (const auto& [name, op] : ops) {
    distribute::MirroredStrategy strategy({"cpu:0", "cpu:1", "cpu:2"}, op, {.bucket_cap_bytes = 256});
    expect_same_run(train(strategy, true, initial), single, "3 replicas, 256-byte buckets, " + name);
  }
  // The buckets over the gradients' rooms in the flat buffer, each gradient on 256 bytes (api/core/alignment.h).
  std::vector<Shape> shapes;
  for (const VariablePtr& v : testing::small_convnet(true, true).trainable_weights()) shapes.push_back(v->value.shape());
  const std::vector<Index> sizes = pack_buffers(shapes, Device::cpu(), false).rooms;
  const std::vector<distribute::detail::GradientBucket> buckets = distribute::detail::assign_buckets(sizes, 256);
  ASSERT_GT(buckets.size(), 2u);
  ASSERT_TRUE(comm);
  std::vector<std::vector<std::size_t>> counts(3);
  for (const auto& call : comm->calls()) counts[static_cast<std::size_t>(call.rank)].push_back(call.count);
  EXPECT_EQ(counts[1], counts[0]);
  EXPECT_EQ(counts[2], counts[0]);
  // Steps with three replicas in sync: 45 examples by 8 make 6 batches (the last of 5 splits 2 + 2 + 1) per epoch,
  // two epochs; 41 by 8 make 5 more (the last of 1 leaves one replica).
  const std::size_t steps = 2 * 6 + 5;
  ASSERT_EQ(counts[0].size(), steps * buckets.size());
  for (std::size_t c = 0; c < counts[0].size(); ++c) {
    const distribute::detail::GradientBucket& b = buckets[c % buckets.size()];
    EXPECT_EQ(counts[0][c], static_cast<std::size_t>(b.end - b.begin)) << "call " << c;
  }
  EXPECT_EQ(buckets[0].gradients[0], static_cast<int>(sizes.size()) - 1);
}

// Keras' confusion-matrix, F-score, IoU and regression metrics, named in compile() as Keras' names and configs,
// aggregated over two CPU replicas (batches of 5 and validation batches of 1 leave a replica with fewer or no rows):
// every training and validation value of every epoch equals one replica's.
callbacks::History fit_with_named_metrics(const std::optional<distribute::Strategy>& strategy) {
  const Index n = 45, validation = 17;
  const Tensor x = testing::random_tensor({n + validation, 5}, 21);
  std::vector<float> y(static_cast<std::size_t>((n + validation) * 3));
  for (std::size_t i = 0; i < y.size(); ++i) y[i] = (i * 7 + i / 3) % 5 < 2 ? 1.f : 0.f;
  const Tensor labels = Tensor::from_vector(y, {n + validation, 3});
  std::optional<Model> model;
  {
    std::optional<distribute::StrategyScope> scope;
    if (strategy) scope.emplace(strategy->scope());
    model.emplace(Sequential({InputLayer({.shape = {5}}), layers::Dense({.units = 3, .activation = "sigmoid"})}));
    std::vector<metrics::MetricPtr> named;
    for (const char* name : {"true_positives", "false_negatives", "binary_io_u", "root_mean_squared_error",
                             "r2_score", "auc"})
      named.push_back(metrics::metric_from_config(Config(name)));
    for (const char* json :
         {R"({"class_name": "F1Score", "config": {"average": "micro", "threshold": 0.5}})",
          R"({"class_name": "SensitivityAtSpecificity", "config": {"specificity": 0.5, "num_thresholds": 50}})",
          R"({"class_name": "AUC", "config": {"multi_label": true, "curve": "PR", "name": "pr_auc"}})",
          R"({"class_name": "MeanIoU", "config": {"num_classes": 2, "sparse_y_true": false, "sparse_y_pred": false}})"})
      named.push_back(metrics::metric_from_config(Config::parse_json(json)));
    model->compile(optimizers::Adam(0.05), losses::BinaryCrossentropy(), named);
  }
  model->set_weights({testing::random_tensor({5, 3}, 22), Tensor::zeros({3})});
  const auto slice = [](const Tensor& t, Index begin, Index end) { return t.slice(begin, end); };
  FitOptions options{.epochs = 3, .verbose = 0};
  options.validation_data =
      data::Dataset::from_tensor_slices({slice(x, n, n + validation), slice(labels, n, n + validation)}).batch(8);
  return model->fit(data::Dataset::from_tensor_slices({slice(x, 0, n), slice(labels, 0, n)}).batch(8), options);
}

TEST(MirroredStrategy, NamedKerasMetricsOfTwoReplicasMatchOneReplica) {
  const callbacks::History single = fit_with_named_metrics(std::nullopt);
  const callbacks::History mirrored = fit_with_named_metrics(distribute::MirroredStrategy({"cpu:0", "cpu:1"}));
  for (const char* key : {"true_positives", "val_false_negatives", "val_binary_io_u", "r2_score",
                          "val_root_mean_squared_error", "val_f1_score", "sensitivity_at_specificity", "val_pr_auc",
                          "val_mean_io_u", "val_auc"})
    EXPECT_TRUE(single.contains(key)) << key;
  expect_same_history(mirrored, single, "2 replicas, named metrics");
  EXPECT_GT(single["val_true_positives"].back(), 0.0);
}

TEST(MirroredStrategy, OneDeviceStrategyMatchesNoStrategy) {
  std::vector<Tensor> initial;
  const TrainingRun single = train(std::nullopt, true, initial);
  distribute::OneDeviceStrategy strategy("/device:CPU:0");
  EXPECT_EQ(strategy.num_replicas_in_sync(), 1);
  EXPECT_EQ(strategy.devices(), std::vector<std::string>{"cpu:0"});
  expect_same_run(train(strategy, true, initial), single, "OneDeviceStrategy");
}

// The default strategy's replicas are the model itself: bitwise what no strategy gives.
TEST(MirroredStrategy, DefaultStrategyIsNoStrategy) {
  EXPECT_EQ(distribute::get_strategy().type(), "DefaultStrategy");
  EXPECT_EQ(distribute::get_strategy().num_replicas_in_sync(), 1);
  std::vector<Tensor> initial;
  const TrainingRun single = train(std::nullopt, true, initial);
  const TrainingRun scoped = train(distribute::get_strategy(), true, initial);
  for (std::size_t i = 0; i < single.weights.size(); ++i)
    EXPECT_EQ(single.weights[i].to_vector(), scoped.weights[i].to_vector()) << single.variables[i]->path;
}

TEST(MirroredStrategy, ScopeSetsTheCurrentStrategy) {
  distribute::MirroredStrategy strategy({"cpu:0", "cpu:1"});
  EXPECT_EQ(strategy.type(), "MirroredStrategy");
  EXPECT_EQ(strategy.devices(), (std::vector<std::string>{"cpu:0", "cpu:1"}));
  {
    auto scope = strategy.scope();
    EXPECT_EQ(distribute::get_strategy().impl(), strategy.impl());
    EXPECT_EQ(distribute::get_strategy().num_replicas_in_sync(), 2);
    {
      auto again = strategy.scope();  // the same strategy nests
      EXPECT_EQ(distribute::get_strategy().impl(), strategy.impl());
    }
    distribute::MirroredStrategy other({"cpu:0"});
    EXPECT_THROW({ auto s = other.scope(); }, std::logic_error);
    Model m = testing::small_convnet(false, false);
    EXPECT_EQ(m->distribution(), strategy.impl());
  }
  EXPECT_EQ(distribute::get_strategy().type(), "DefaultStrategy");
  // A model made outside a scope and compiled inside one belongs to that strategy, as in Keras.
  Model m = testing::small_convnet(false, false);
  EXPECT_EQ(m->distribution(), nullptr);
  {
    auto scope = strategy.scope();
    m.compile(optimizers::SGD(0.1), losses::SparseCategoricalCrossentropy());
  }
  EXPECT_EQ(m->distribution(), strategy.impl());
}

// tf.distribute's split of a global batch: consecutive chunks of ceil(n / replicas).
TEST(MirroredStrategy, SplitsBatchesAsTensorFlow) {
  distribute::MirroredStrategy strategy({"cpu:0", "cpu:1", "cpu:2", "cpu:3"});
  Model m = [&] {
    auto scope = strategy.scope();
    return testing::small_convnet(false, false);
  }();
  detail::Replicas* replicas = m->replicas();
  ASSERT_NE(replicas, nullptr);
  ASSERT_EQ(replicas->num_local(), 4);
  const auto sizes = [&](Index n) {
    std::vector<Index> out;
    Index next = 0;
    for (int r = 0; r < 4; ++r) {
      const auto [b, e] = replicas->slice(n, r);
      EXPECT_EQ(b, e > b ? next : std::min(b, n)) << "n " << n << " replica " << r;
      next = e;
      out.push_back(e - b);
    }
    EXPECT_EQ(next, n);
    return out;
  };
  // The sizes TensorFlow 2.21 gives (experimental_distribute_dataset on four virtual CPUs).
  EXPECT_EQ(sizes(8), (std::vector<Index>{2, 2, 2, 2}));
  EXPECT_EQ(sizes(5), (std::vector<Index>{2, 2, 1, 0}));
  EXPECT_EQ(sizes(10), (std::vector<Index>{3, 3, 3, 1}));
  EXPECT_EQ(sizes(6), (std::vector<Index>{2, 2, 2, 0}));
  EXPECT_EQ(sizes(7), (std::vector<Index>{2, 2, 2, 1}));
  EXPECT_EQ(sizes(1), (std::vector<Index>{1, 0, 0, 0}));
}

// After the first steps (plans, buffers, optimizer slots), a training step allocates no tensor memory.
TEST(MirroredStrategy, StepsAllocateNothing) {
  distribute::MirroredStrategy strategy({"cpu:0", "cpu:1", "cpu:2"});
  Model m = [&] {
    auto scope = strategy.scope();
    Model model = testing::small_convnet(true, true);
    model.compile(optimizers::Adam(1e-3), losses::SparseCategoricalCrossentropy(),
                  {metrics::SparseCategoricalAccuracy()});
    return model;
  }();
  const Tensor x = examples_a().x.slice(0, 7), y = examples_a().y.slice(0, 7);
  for (int s = 0; s < 3; ++s) m.train_on_batch(x, y);
  const AllocatorStats before = allocator_for(Device::cpu()).stats();
  for (int s = 0; s < 5; ++s) m.train_on_batch(x, y);
  const AllocatorStats after = allocator_for(Device::cpu()).stats();
  EXPECT_EQ(after.allocations, before.allocations);
}

// A replica that throws ends the step with its exception; the others, waiting in a collective, do not hang.
TEST(MirroredStrategy, AReplicaErrorEndsTheStep) {
  distribute::MirroredStrategy strategy({"cpu:0", "cpu:1"});
  Model m = [&] {
    auto scope = strategy.scope();
    Model model = testing::small_convnet(true, true);
    model.compile(optimizers::SGD(0.1), losses::SparseCategoricalCrossentropy());
    return model;
  }();
  // Labels out of range on the second replica's rows only.
  const Tensor x = examples_a().x.slice(0, 8);
  const Tensor y = Tensor::from_vector(std::vector<std::int32_t>{0, 1, 2, 3, 0, 1, 9, 3}, Shape{8});
  EXPECT_THROW(m.train_on_batch(x, y), std::invalid_argument);
  // The strategy still works afterwards.
  const callbacks::Logs logs = m.train_on_batch(x, examples_a().y.slice(0, 8));
  EXPECT_TRUE(std::isfinite(*logs.get("loss")));
}

TEST(MirroredStrategy, BadDevicesThrowClearErrors) {
  const auto message = [](auto make) {
    try {
      make();
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no exception");
  };
  std::string m = message([] { distribute::MirroredStrategy s({"cpu:0", "tpu:0"}); });
  EXPECT_NE(m.find("MirroredStrategy: unknown device 'tpu:0'"), std::string::npos) << m;
  EXPECT_NE(m.find("Available devices: cpu:0, cpu:1, ..."), std::string::npos) << m;
  if (cuda_device_count() == 0) {
    m = message([] { distribute::MirroredStrategy s({"gpu:0"}); });
    EXPECT_NE(m.find("unknown device 'gpu:0' (no such GPU)"), std::string::npos) << m;
    EXPECT_NE(m.find("no GPU visible"), std::string::npos) << m;
  }
  m = message([] { distribute::MirroredStrategy s(std::vector<std::string>{}); });
  EXPECT_NE(m.find("MirroredStrategy: the device list is empty"), std::string::npos) << m;
  m = message([] { distribute::MirroredStrategy s({"cpu:0", "/CPU:0"}); });
  EXPECT_NE(m.find("device '/CPU:0' is listed twice"), std::string::npos) << m;
  m = message([] { distribute::MirroredStrategy s({"cpu:0", "cpu:1"}, distribute::NcclAllReduce()); });
  EXPECT_NE(m.find("NcclAllReduce reduces between GPUs; device cpu:0 is a CPU device"), std::string::npos) << m;
  m = message([] {
    distribute::MirroredStrategy s({"cpu:0", "cpu:1"}, distribute::ReductionToOneDevice({.reduce_to_device = "cpu:5"}));
  });
  EXPECT_NE(m.find("reduce_to_device 'cpu:5' is not one of the strategy's devices (cpu:0, cpu:1)"), std::string::npos)
      << m;
  m = message([] { distribute::OneDeviceStrategy s("cpu:x"); });
  EXPECT_NE(m.find("OneDeviceStrategy: unknown device 'cpu:x'"), std::string::npos) << m;
}

// Replicas on logical GPUs of one GPU share the model's weights; replicas on two physical GPUs each hold their own
// copies (checked without a GPU: the devices are given, not parsed, and the copies stay on the host until a plan
// runs).
TEST(MirroredStrategy, ReplicasOnSeveralGpusHoldCopies) {
  Model m = testing::small_convnet(false, false);
  const distribute::CrossDeviceOpsPtr ops = distribute::ReductionToOneDevice();
  distribute::detail::MirroredReplicas shared(m.impl(), distribute::logical_gpus(1, 2), ops, nullptr,
                                              "MirroredStrategy");
  EXPECT_FALSE(shared.mirrored());
  EXPECT_EQ(shared.replica_weights(1)[0].get(), m.weights()[0].get());
  distribute::detail::MirroredReplicas copies(m.impl(), distribute::logical_gpus(2, 1), ops, nullptr,
                                              "MirroredStrategy");
  EXPECT_TRUE(copies.mirrored());
  const std::vector<VariablePtr> theirs = copies.replica_weights(1), mine = m.weights();
  ASSERT_EQ(theirs.size(), mine.size());
  for (std::size_t i = 0; i < mine.size(); ++i) {
    EXPECT_NE(theirs[i].get(), mine[i].get());
    EXPECT_EQ(testing::relative_difference(theirs[i]->value, mine[i]->value), 0.0) << mine[i]->path;
  }
  EXPECT_THROW(distribute::detail::MirroredReplicas(m.impl(), {{"cpu:0", Device::cpu()}}, ops, nullptr, "", 0),
               std::invalid_argument);
  EXPECT_THROW(distribute::MirroredStrategy({"cpu:0"}, nullptr, {.bucket_cap_bytes = 0}), std::invalid_argument);
}

TEST(MirroredStrategy, DefaultDevicesAreTheGpusElseTheCpu) {
  distribute::MirroredStrategy strategy;
  if (cuda_device_count() == 0) {
    EXPECT_EQ(strategy.devices(), std::vector<std::string>{"cpu:0"});
    EXPECT_EQ(strategy.cross_device_ops()->name(), "InProcessAllReduce");
  } else {
    EXPECT_EQ(strategy.num_replicas_in_sync(), cuda_device_count());
    EXPECT_EQ(strategy.cross_device_ops()->name(), "NcclAllReduce");
  }
}

}  // namespace
}  // namespace tower
