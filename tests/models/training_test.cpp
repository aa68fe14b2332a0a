#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "testing/fixtures.h"
#include "testing/layer_test.h"

namespace tower {
namespace {

using testing::random_tensor;

// Two Gaussian blobs per class in 2-d, labels 0..2: separable by a small MLP.
std::pair<Tensor, Tensor> blobs(Index n, std::uint64_t seed) {
  Generator g(seed);
  std::vector<float> x(static_cast<std::size_t>(n * 2));
  std::vector<std::int32_t> y(static_cast<std::size_t>(n));
  const float centers[3][2] = {{-2, -2}, {2, -2}, {0, 2}};
  for (Index i = 0; i < n; ++i) {
    const int c = static_cast<int>(i % 3);
    y[static_cast<std::size_t>(i)] = c;
    x[static_cast<std::size_t>(2 * i)] = centers[c][0] + g.normal(0.f, 0.6f);
    x[static_cast<std::size_t>(2 * i + 1)] = centers[c][1] + g.normal(0.f, 0.6f);
  }
  return {Tensor::from_vector(x, {n, 2}), Tensor::from_vector(y, {n})};
}

Sequential mlp() {
  return Sequential({InputLayer({.shape = {2}}), layers::Dense({.units = 16, .activation = "relu"}),
                     layers::Dense({.units = 3, .activation = "softmax"})});
}

TEST(Training, FitLearnsASeparableProblem) {
  set_random_seed(1);
  auto [x, y] = blobs(600, 2);
  Sequential model = mlp();
  model.compile(optimizers::Adam(0.01), losses::SparseCategoricalCrossentropy(),
                {metrics::SparseCategoricalAccuracy()});
  callbacks::History h = model.fit(x, y, {.epochs = 8, .batch_size = 32, .verbose = 0, .validation_split = 0.2});
  ASSERT_EQ(h.epoch().size(), 8u);
  EXPECT_LT(h["loss"].back(), h["loss"].front());
  EXPECT_GT(h["val_sparse_categorical_accuracy"].back(), 0.95);
  const callbacks::Logs logs = model.evaluate(x, y, {.verbose = 0});
  EXPECT_GT(*logs.get("sparse_categorical_accuracy"), 0.95);
  const Tensor p = model.predict(x);
  EXPECT_EQ(p.shape(), (Shape{600, 3}));
}

TEST(Training, SameSeedSameWeights) {
  auto run = [] {
    set_random_seed(7);
    auto [x, y] = blobs(200, 3);
    Sequential model({InputLayer({.shape = {2}}), layers::Dense({.units = 8, .activation = "relu"}),
                      layers::Dropout({.rate = 0.2}), layers::Dense({.units = 3, .activation = "softmax"})});
    model.compile(optimizers::Adam(0.01), losses::SparseCategoricalCrossentropy());
    model.fit(x, y, {.epochs = 2, .batch_size = 16, .verbose = 0});
    return model.get_weights();
  };
  const auto a = run(), b = run();
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].to_vector(), b[i].to_vector()) << "weight " << i;
}

TEST(Training, OneSgdStepOfALinearModelMatchesHandComputation) {
  // y = x w + b, MSE, SGD lr 0.1: w' = w - 0.1 * 2/N * sum x (xw + b - t)
  Sequential model({InputLayer({.shape = {1}}), layers::Dense({.units = 1, .kernel_initializer = "ones"})});
  model.compile(optimizers::SGD(0.1), losses::MeanSquaredError());
  Tensor x = Tensor::from_vector(std::vector<float>{1, 2}, {2, 1});
  Tensor t = Tensor::from_vector(std::vector<float>{0, 0}, {2, 1});
  const callbacks::Logs logs = model.train_on_batch(x, t);
  EXPECT_NEAR(*logs.get("loss"), (1.0 + 4.0) / 2, 1e-6);  // loss before the step
  // dL/dw = (2/2) * (1*1 + 2*2) = 5; dL/db = (2/2) * (1 + 2) = 3
  const auto w = model.get_weights();
  EXPECT_NEAR(w[0].item(), 1 - 0.5, 1e-6);
  EXPECT_NEAR(w[1].item(), 0 - 0.3, 1e-6);
}

TEST(Training, SampleAndClassWeightsScaleTheLoss) {
  Sequential model({InputLayer({.shape = {1}}), layers::Dense({.units = 1, .kernel_initializer = "ones"})});
  model.compile(optimizers::SGD(0.0), losses::MeanSquaredError());
  Tensor x = Tensor::from_vector(std::vector<float>{1, 2}, {2, 1});
  Tensor t = Tensor::from_vector(std::vector<float>{0, 0}, {2, 1});
  Tensor w = Tensor::from_vector(std::vector<float>{1, 0}, {2});
  // sum_over_batch_size divides by the batch, not by the sum of weights: (1*1 + 0*4) / 2.
  EXPECT_NEAR(*model.test_on_batch(x, t, w).get("loss"), 0.5, 1e-6);
}

TEST(Training, RegularizationIsAddedToTheLoss) {
  Sequential model({InputLayer({.shape = {1}}),
                    layers::Dense({.units = 1, .use_bias = false, .kernel_initializer = initializers::Constant(2.0),
                                   .kernel_regularizer = regularizers::L2(0.5)})});
  model.compile(optimizers::SGD(0.0), losses::MeanSquaredError());
  Tensor x = Tensor::from_vector(std::vector<float>{0}, {1, 1});
  Tensor t = Tensor::from_vector(std::vector<float>{0}, {1, 1});
  EXPECT_NEAR(*model.test_on_batch(x, t).get("loss"), 0.5 * 4.0, 1e-6);
}

TEST(Training, FitBeforeCompileIsAClearError) {
  Sequential model = mlp();
  auto [x, y] = blobs(30, 1);
  try {
    model.fit(x, y);
    FAIL();
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("compile"), std::string::npos) << e.what();
  }
}

TEST(Training, MismatchedXAndYLengthsAreAClearError) {
  Sequential model = mlp();
  model.compile(optimizers::Adam(), losses::SparseCategoricalCrossentropy());
  auto [x, y] = blobs(30, 1);
  EXPECT_THROW(model.fit(x, y.slice(0, 20)), std::invalid_argument);
}

TEST(Training, MultiOutputLossesAreWeightedAndLogged) {
  auto in = Input({2});
  auto h = layers::Dense({.units = 4, .activation = "tanh"})(in);
  auto a = layers::Dense({.units = 3, .activation = "softmax", .name = "cls"})(h);
  auto b = layers::Dense({.units = 1, .name = "reg"})(h);
  Model model({in}, {a, b});
  model.compile(optimizers::SGD(0.0), {losses::SparseCategoricalCrossentropy(), losses::MeanSquaredError()}, {},
                {1.0, 0.5});
  auto [x, y] = blobs(8, 4);
  Tensor t = random_tensor({8, 1}, 5);
  const callbacks::Logs logs = model->training_loop().test_on_batch({x, y, t});
  EXPECT_NEAR(*logs.get("loss"), *logs.get("cls_loss") + 0.5 * *logs.get("reg_loss"), 1e-5);
}

// Counts the training and validation batches of a fit, and whether training began.
class BatchCounter : public callbacks::Callback {
 public:
  int train = 0, test = 0;
  bool began = false;
  void on_train_begin(const callbacks::Logs&) override { began = true; }
  void on_train_batch_end(std::int64_t, const callbacks::Logs&) override { ++train; }
  void on_test_batch_end(std::int64_t, const callbacks::Logs&) override { ++test; }
};

// Keras splits at int(n * (1 - validation_split)) (tests/reference/training/loop.json, case validation_split),
// refuses before training a split that leaves no training or validation example, and refuses validation_split
// on a Dataset; validation_data, when given, wins over validation_split.
TEST(Training, ValidationSplitFollowsKeras) {
  const Config doc = testing::read_json_fixture("training/loop.json");
  const Config& c = testing::fixture_case(doc, "validation_split");
  const Index n = c.at("examples").as_int();
  Sequential model({InputLayer({.shape = {1}}), layers::Dense({.units = 1})});
  model.compile(optimizers::SGD(0.0), losses::MeanSquaredError());
  const Tensor x = random_tensor({n, 1}, 3), y = random_tensor({n, 1}, 4);
  auto counter = std::make_shared<BatchCounter>();
  model.fit(x, y, {.epochs = 1, .batch_size = 1, .verbose = 0, .callbacks = {counter},
                   .validation_split = c.at("validation_split").as_double()});
  EXPECT_EQ(counter->train, c.at("train_batches").as_int());
  EXPECT_EQ(counter->test, c.at("validation_batches").as_int());

  for (const auto& [examples, split] : {std::pair<Index, double>{1, 0.5}, {10, 1e-17}}) {
    counter = std::make_shared<BatchCounter>();
    try {
      model.fit(x.slice(0, examples), y.slice(0, examples),
                {.epochs = 1, .verbose = 0, .callbacks = {counter}, .validation_split = split});
      FAIL() << examples << " examples, validation_split " << split;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("not sufficient to split"), std::string::npos) << e.what();
    }
    EXPECT_FALSE(counter->began);
  }

  try {
    model.fit(data::Dataset::from_tensor_slices({x, y}).batch(2), {.epochs = 1, .verbose = 0, .validation_split = 0.2});
    FAIL() << "validation_split on a Dataset";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("validation_split is only supported for tensors"), std::string::npos)
        << e.what();
  }

  counter = std::make_shared<BatchCounter>();
  model.fit(x, y, {.epochs = 1, .batch_size = 1, .verbose = 0, .callbacks = {counter}, .validation_split = 0.5,
                   .validation_data = data::Dataset::from_tensor_slices({x, y}).batch(5)});
  EXPECT_EQ(counter->train, n);
  EXPECT_EQ(counter->test, 2);
}

}  // namespace
}  // namespace tower
