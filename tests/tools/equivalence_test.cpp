// A YAML experiment and the C++ program that says the same thing, from the same seed, end with identical weights
// (bit for bit): the experiment runner adds nothing to training but files.
#include <gtest/gtest.h>

#include <filesystem>

#include "tests/tools/tools_testing.h"
#include "tools/experiment/runner.h"
#include "tower/tower.h"

namespace tower::experiment {
namespace {

bool have_fashion_mnist() {
  return std::filesystem::exists(std::filesystem::path(data::fashion_mnist::default_directory) /
                                 "train-images-idx3-ubyte.gz");
}

std::vector<Tensor> train_yaml(const std::string& yaml, const std::string& tag) {
  const Experiment e = Experiment::parse(yaml, "equivalence.yaml");
  TrainOptions o;
  o.out = testing::fresh_dir(tag).string();
  o.handle_sigint = false;
  const TrainResult r = train(e, o);
  EXPECT_FALSE(r.interrupted);
  // What the run directory keeps is what training ended with.
  Model reloaded(r.model);
  std::vector<Tensor> weights = reloaded.get_weights();
  std::filesystem::remove_all(o.out);
  return weights;
}

TEST(Equivalence, TheConvnetExperimentEqualsItsCppProgram) {
  if (!have_fashion_mnist()) GTEST_SKIP() << "Fashion-MNIST (dataset-fashion-mnist) is not installed";
  const std::vector<Tensor> from_yaml = train_yaml(R"(seed: 42
data:
  source: fashion_mnist
  train: {split: train, take: 768}
  validation: {split: test, take: 300}
  test: null
  shuffle_buffer: 768
model:
  layers:
    - {type: Input, shape: [28, 28, 1]}
    - {type: Conv2D, filters: 8, kernel_size: 3, activation: relu}
    - {type: MaxPooling2D, pool_size: 2}
    - {type: Conv2D, filters: 16, kernel_size: 3, activation: relu}
    - {type: MaxPooling2D, pool_size: 2}
    - {type: Flatten}
    - {type: Dropout, rate: 0.5}
    - {type: Dense, units: 10, activation: softmax}
compile:
  optimizer: {type: Adam, learning_rate: 0.001}
  loss: sparse_categorical_crossentropy
  metrics: [sparse_categorical_accuracy]
fit: {epochs: 2, batch_size_per_replica: 100, verbose: 0, validation: {batch_size: 150}}
)",
                                                   "yaml");

  set_random_seed(42);
  auto train = data::fashion_mnist::load("train").take(768).shuffle(768).batch(100).prefetch(2);
  auto validation = data::fashion_mnist::load("test").take(300).batch(150);
  Sequential model({
      InputLayer({.shape = {28, 28, 1}}),
      layers::Conv2D({.filters = 8, .kernel_size = 3, .activation = "relu"}),
      layers::MaxPooling2D({.pool_size = 2}),
      layers::Conv2D({.filters = 16, .kernel_size = 3, .activation = "relu"}),
      layers::MaxPooling2D({.pool_size = 2}),
      layers::Flatten(),
      layers::Dropout({.rate = 0.5}),
      layers::Dense({.units = 10, .activation = "softmax"}),
  });
  model.compile(optimizers::Adam(1e-3), losses::SparseCategoricalCrossentropy(), {metrics::SparseCategoricalAccuracy()});
  model.fit(train, {.epochs = 2, .verbose = 0, .validation_data = validation});

  testing::expect_identical(from_yaml, model.get_weights());
  // And training did something: the weights are not the initial ones.
  set_random_seed(42);
  (void)data::fashion_mnist::load("train").take(768).shuffle(768);
  Sequential fresh({InputLayer({.shape = {28, 28, 1}}), layers::Conv2D({.filters = 8, .kernel_size = 3})});
  EXPECT_NE(fresh.get_weights()[0].to_vector(), from_yaml[0].to_vector());
}

TEST(Equivalence, TheMlpExperimentWithPreprocessingAndAScheduleEqualsItsCppProgram) {
  if (!have_fashion_mnist()) GTEST_SKIP() << "Fashion-MNIST (dataset-fashion-mnist) is not installed";
  const std::vector<Tensor> from_yaml = train_yaml(R"(seed: 7
data:
  source: fashion_mnist
  train: {split: train, take: 640}
  test: null
  shuffle_buffer: 200
  prefetch: 0
  preprocessing: [{type: rescale, scale: 2.0, offset: -1.0}]
model:
  layers:
    - {type: Flatten}
    - {type: Dense, units: 32, activation: relu, kernel_initializer: he_normal,
       kernel_regularizer: {type: L2, l2: 0.001}}
    - {type: Dropout, rate: 0.2}
    - {type: Dense, units: 10, activation: softmax}
compile:
  optimizer:
    type: SGD
    momentum: 0.9
    nesterov: true
    learning_rate: {type: ExponentialDecay, initial_learning_rate: 0.05, decay_steps: 5, decay_rate: 0.5}
  loss: sparse_categorical_crossentropy
fit: {epochs: 3, batch_size_per_replica: 64, verbose: 0, class_weight: {0: 2.0, 3: 0.5}}
)",
                                                   "yaml");

  set_random_seed(7);
  const auto rescale = [](const data::Element& e) {
    Tensor x(e[0].shape());
    for (Index i = 0; i < x.numel(); ++i) x.data<float>()[i] = e[0].data<float>()[i] * 2.0f + -1.0f;
    return data::Element{x, e[1]};
  };
  auto train = data::fashion_mnist::load("train").take(640).shuffle(200).map(rescale).batch(64);
  Sequential model({
      InputLayer({.shape = {28, 28, 1}}),
      layers::Flatten(),
      layers::Dense({.units = 32, .activation = "relu", .kernel_initializer = "he_normal",
                     .kernel_regularizer = regularizers::L2(0.001)}),
      layers::Dropout({.rate = 0.2}),
      layers::Dense({.units = 10, .activation = "softmax"}),
  });
  model.compile(optimizers::SGD({.learning_rate = optimizers::schedules::ExponentialDecay(
                                     {.initial_learning_rate = 0.05, .decay_steps = 5, .decay_rate = 0.5}),
                                 .momentum = 0.9,
                                 .nesterov = true}),
                losses::SparseCategoricalCrossentropy());
  model.fit(train, {.epochs = 3, .verbose = 0, .class_weight = {{0, 2.0}, {3, 0.5}}});

  testing::expect_identical(from_yaml, model.get_weights());
}

}  // namespace
}  // namespace tower::experiment
