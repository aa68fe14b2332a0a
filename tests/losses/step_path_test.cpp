// The losses, metrics and regularizers on a training step's path run as backend ops on buffers the training loop
// keeps: once a step has run, further steps (loss, class and sample weights, metrics, penalties, logs) allocate no
// tensor memory, so nothing is staged, copied or converted on the way.
#include <gtest/gtest.h>

#include <map>
#include <utility>
#include <vector>

#include "api/core/allocator.h"
#include "testing/layer_test.h"

namespace tower {
namespace {

Tensor inputs(Index n) {
  std::vector<float> v(static_cast<std::size_t>(n * 5));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i % 11) * 0.2f - 1.f;
  return Tensor::from_vector(v, {n, 5});
}

TEST(LossStepPath, SteadyStateStepsAllocateNothing) {
  Sequential model({InputLayer({.shape = {5}}), layers::Dense({.units = 3,
                                                               .activation = "softmax",
                                                               .kernel_regularizer = regularizers::L1L2(1e-3, 1e-2)})});
  model.compile(optimizers::SGD(0.1), losses::SparseCategoricalCrossentropy(),
                {metrics::SparseCategoricalAccuracy(), metrics::SparseTopKCategoricalAccuracy({.k = 2})});
  const Tensor x = inputs(7);
  const Tensor y = Tensor::from_vector(std::vector<std::int32_t>{0, 1, 2, 2, 1, 0, 1}, {7});
  const Tensor w = Tensor::from_vector(std::vector<float>{1, 0.5f, 2, 1, 1, 0.25f, 1}, {7});
  model.train_on_batch(x, y, w);
  model.test_on_batch(x, y, w);
  const AllocatorStats before = allocator_for(Device::cpu()).stats();
  for (int i = 0; i < 3; ++i) {
    const callbacks::Logs train = model.train_on_batch(x, y, w);
    const callbacks::Logs test = model.test_on_batch(x, y, w);
    EXPECT_GT(*train.get("loss"), 0.0);
    EXPECT_GT(*test.get("sparse_categorical_accuracy"), 0.0);
  }
  const AllocatorStats after = allocator_for(Device::cpu()).stats();
  EXPECT_EQ(after.allocations, before.allocations);
  EXPECT_EQ(after.bytes_in_use, before.bytes_in_use);
}

// Issue 40's metrics keep their state on the device too: their steady-state steps allocate nothing either.
TEST(LossStepPath, ConfusionFScoreIoUAndR2MetricsAllocateNothing) {
  Sequential model({InputLayer({.shape = {5}}), layers::Dense({.units = 3, .activation = "sigmoid"})});
  using namespace metrics;
  model.compile(optimizers::SGD(0.1), losses::BinaryCrossentropy(),
                {TruePositives(), SensitivityAtSpecificity({.specificity = 0.5}),
                 AUC({.multi_label = true, .label_weights = std::vector<double>{1, 2, 1}}),
                 F1Score({.average = "weighted"}), R2Score(), RootMeanSquaredError(), BinaryIoU(),
                 OneHotMeanIoU({.num_classes = 3})});
  const Tensor x = inputs(7);
  std::vector<float> labels(21);
  for (std::size_t i = 0; i < labels.size(); ++i) labels[i] = (i / 3 + i % 3) % 2 == 0 ? 1.f : 0.f;
  const Tensor y = Tensor::from_vector(labels, {7, 3});
  model.train_on_batch(x, y);
  model.test_on_batch(x, y);
  const AllocatorStats before = allocator_for(Device::cpu()).stats();
  for (int i = 0; i < 3; ++i) {
    model.train_on_batch(x, y);
    const callbacks::Logs test = model.test_on_batch(x, y);
    EXPECT_TRUE(test.get("one_hot_mean_io_u"));
  }
  const AllocatorStats after = allocator_for(Device::cpu()).stats();
  EXPECT_EQ(after.allocations, before.allocations);
  EXPECT_EQ(after.bytes_in_use, before.bytes_in_use);
}

// fit's class weights reach the loss as device-side example weights: a class weight acts as the same sample weight
// on each example of its class, step for step and bit for bit.
TEST(LossStepPath, ClassWeightsWeighLikeSampleWeights) {
  const Tensor x = inputs(12);
  const std::vector<std::int32_t> labels = {0, 1, 2, 2, 1, 0, 1, 0, 2, 2, 0, 1};
  const Tensor y = Tensor::from_vector(labels, {12});
  const std::map<int, double> class_weight = {{0, 2.0}, {2, 0.5}};
  std::vector<float> w;
  for (std::int32_t c : labels) w.push_back(c == 0 ? 2.f : c == 2 ? 0.5f : 1.f);
  const auto run = [&](const std::vector<Tensor>& components, const std::map<int, double>& cw) {
    set_random_seed(3);
    Sequential model({InputLayer({.shape = {5}}), layers::Dense({.units = 3, .activation = "softmax"})});
    model.compile(optimizers::SGD(0.1), losses::SparseCategoricalCrossentropy());
    const callbacks::History h = model.fit(data::Dataset::from_tensor_slices(components).batch(5),
                                           {.epochs = 2, .verbose = 0, .class_weight = cw});
    return std::make_pair(h["loss"], model.get_weights());
  };
  const auto by_class = run({x, y}, class_weight);
  const auto by_sample = run({x, y, Tensor::from_vector(w, {12})}, {});
  const auto plain = run({x, y}, {});
  EXPECT_EQ(by_class.first, by_sample.first);
  ASSERT_EQ(by_class.second.size(), by_sample.second.size());
  for (std::size_t i = 0; i < by_class.second.size(); ++i)
    EXPECT_EQ(by_class.second[i].to_vector(), by_sample.second[i].to_vector()) << "weight " << i;
  EXPECT_NE(by_class.first, plain.first) << "the class weights change the loss";
}

}  // namespace
}  // namespace tower
