// Overridden train_step / test_step inside fit and evaluate: a custom step written with a GradientTape, the
// compiled optimizer and losses and the loop's trackers trains exactly as fit's own step does (the same weights
// after two epochs, the same History), and fit keeps its callbacks, History and metrics around it.
#include <gtest/gtest.h>

#include "distribute/replica_testing.h"
#include "tower/tower.h"

namespace tower {
namespace {

class TapeStepModel : public ModelImpl {
 public:
  using ModelImpl::ModelImpl;
  int train_steps = 0, test_steps = 0;

  void train_step(const data::Element& batch) override {
    ++train_steps;
    GradientTape tape;
    Tensor probs = tape.call(*this, batch[0]);
    Tensor loss = tape.loss(training_loop().losses()[0], batch[1], probs);
    const std::vector<VariablePtr> vars = trainable_weights();
    optimizer()->apply_gradients(optimizers::zip(tape.gradient(loss, vars), vars));
    training_loop().track_loss(loss, batch[0].dim(0));
    training_loop().update_metrics({batch[1]}, {probs});
  }
  void test_step(const data::Element& batch) override {
    ++test_steps;
    ModelImpl::test_step(batch);
  }
};

struct CountingCallback : callbacks::Callback {
  int batches = 0, epochs = 0;
  void on_train_batch_end(std::int64_t, const callbacks::Logs&) override { ++batches; }
  void on_epoch_end(int, const callbacks::Logs&) override { ++epochs; }
};

Model tape_model(std::shared_ptr<TapeStepModel>& impl) {
  Model base = testing::small_convnet(false, false);
  impl = std::make_shared<TapeStepModel>(base.inputs(), base.outputs(), "tape_step_model");
  return Model(impl);
}

TEST(CustomTrainStep, FitRunsItWithCallbacksHistoryAndMetrics) {
  set_random_seed(21);
  const testing::Examples ex = testing::seeded_examples(40, 3);
  const auto data = data::Dataset::from_tensor_slices({ex.x, ex.y}).batch(8);
  std::shared_ptr<TapeStepModel> impl;
  Model custom = tape_model(impl);
  Model reference = testing::small_convnet(false, false);
  reference.set_weights(custom.get_weights());
  for (Model* m : {&custom, &reference})
    m->compile(optimizers::Adam(1e-2), losses::SparseCategoricalCrossentropy(), {metrics::SparseCategoricalAccuracy()});

  auto counter = std::make_shared<CountingCallback>();
  FitOptions options;
  options.epochs = 2;
  options.verbose = 0;
  options.validation_data = data;
  options.callbacks = {counter};
  const callbacks::History got = custom.fit(data, options);
  options.callbacks = {};
  const callbacks::History want = reference.fit(data, options);

  EXPECT_EQ(impl->train_steps, 10);
  EXPECT_EQ(impl->test_steps, 10);  // validation: 5 batches per epoch
  EXPECT_EQ(counter->batches, 10);
  EXPECT_EQ(counter->epochs, 2);
  ASSERT_EQ(got.keys(), want.keys());
  for (const std::string& key : want.keys()) {
    ASSERT_EQ(got[key].size(), 2u) << key;
    for (std::size_t e = 0; e < 2; ++e) EXPECT_NEAR(got[key][e], want[key][e], 1e-5) << key << " epoch " << e;
  }
  const std::vector<Tensor> a = custom.get_weights(), b = reference.get_weights();
  for (std::size_t k = 0; k < a.size(); ++k) EXPECT_LT(testing::relative_difference(a[k], b[k]), 1e-5) << k;

  // train_on_batch and evaluate go through the overrides too.
  custom.train_on_batch(ex.x.slice(0, 8), ex.y.slice(0, 8));
  EXPECT_EQ(impl->train_steps, 11);
  custom.evaluate(data, {.verbose = 0});
  EXPECT_EQ(impl->test_steps, 15);
}

TEST(CustomTrainStep, TrackLossRejectsATensor) {
  std::shared_ptr<TapeStepModel> impl;
  Model m = tape_model(impl);
  m.compile(optimizers::SGD(0.1), losses::SparseCategoricalCrossentropy());
  try {
    m->training_loop().track_loss(Tensor::full({3}, 1.f), 3);
    ADD_FAILURE() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("one float32 value"), std::string::npos) << e.what();
  }
}

// A model of models (Keras' GAN pattern): no graph of its own, two inner models trained in its train_step with
// two optimizers, and values of its own in the logs (track_metric) instead of "loss".
class TwoModels final : public ModelImpl {
 public:
  TwoModels(Model first, Model second)
      : ModelImpl("TwoModels", "two_models"), first_(std::move(first)), second_(std::move(second)) {}
  void compile(optimizers::OptimizerPtr a, optimizers::OptimizerPtr b) {
    second_optimizer_ = std::move(b);
    ModelImpl::compile(std::move(a), {}, {}, {});
  }
  void train_step(const data::Element& batch) override {
    for (Model* m : {&first_, &second_}) {
      GradientTape tape;
      const Tensor error = ops::mean(ops::square(tape.call(*m, batch[0]) - batch[1]));
      const std::vector<VariablePtr> vars = m->trainable_weights();
      (m == &first_ ? optimizer() : second_optimizer_)->apply_gradients(optimizers::zip(tape.gradient(error, vars), vars));
      training_loop().track_metric(m == &first_ ? "first_mse" : "second_mse", error);
    }
  }

 private:
  Model first_, second_;
  optimizers::OptimizerPtr second_optimizer_;
};

Model linear() {
  SymbolicTensor in = Input({2});
  return Model(in, layers::Dense({.units = 1})(in));
}

TEST(CustomTrainStep, AModelOfModelsLogsTheValuesItTracks) {
  set_random_seed(22);
  std::vector<float> x, y;
  for (int i = 0; i < 32; ++i) {
    const float a = static_cast<float>(i % 7) / 7.f, b = static_cast<float>(i % 5) / 5.f;
    x.insert(x.end(), {a, b});
    y.push_back(2.f * a - b + 0.5f);
  }
  const auto data = data::Dataset::from_tensor_slices({Tensor::from_vector(x, {32, 2}), Tensor::from_vector(y, {32, 1})})
                        .batch(8);
  auto impl = std::make_shared<TwoModels>(linear(), linear());
  impl->compile(optimizers::SGD(0.2), optimizers::SGD(0.05));
  Model model(impl);
  const callbacks::History h = model.fit(data, {.epochs = 6, .verbose = 0});
  EXPECT_EQ(h.keys(), (std::vector<std::string>{"first_mse", "second_mse"}));
  // Each is the mean of its epoch's four steps, and the faster learner is ahead.
  for (const char* key : {"first_mse", "second_mse"}) EXPECT_LT(h[key].back(), 0.5 * h[key].front()) << key;
  EXPECT_LT(h["first_mse"].back(), h["second_mse"].back());
  const callbacks::Logs logs = model->training_loop().logs();
  EXPECT_DOUBLE_EQ(*logs.get("first_mse"), h["first_mse"].back());

  const auto expect_error = [&](const std::string& name, const Tensor& value, const std::string& needle) {
    try {
      model->training_loop().track_metric(name, value);
      ADD_FAILURE() << "no exception for " << name;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_error("loss", Tensor::full({1}, 1.f), "track_loss()");
  expect_error("", Tensor::full({1}, 1.f), "an empty name");
  expect_error("other", Tensor::full({2}, 1.f), "one float32 value, got float32 (2,)");
}

}  // namespace
}  // namespace tower
