#include "api/callbacks/early_stopping.h"

#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "api/callbacks/callbacks.h"
#include "api/losses/mean_squared_error.h"
#include "api/metrics/metrics.h"
#include "api/models/model.h"
#include "api/optimizers/sgd.h"
#include "layers/dense.h"

namespace tower::callbacks {
namespace {

Sequential small_model(double lr = 0.1) {
  Sequential m({InputLayer({.shape = {3}}), layers::Dense({.units = 2})});
  m.compile(optimizers::SGD(lr), losses::MeanSquaredError(), {metrics::Accuracy()});
  return m;
}

Logs logs_of(std::vector<std::pair<std::string, double>> values) {
  Logs logs;
  for (const auto& [k, v] : values) logs.set(k, v);
  return logs;
}

// Runs `values` of `key` through the callback's epoch ends; returns the epochs run (stopping as fit does).
int run(EarlyStopping& es, ModelImpl& model, const std::string& key, const std::vector<double>& values) {
  es.set_model(&model);
  model.stop_training = false;
  es.on_train_begin(Logs());
  int epochs = 0;
  for (std::size_t e = 0; e < values.size() && !model.stop_training; ++e, ++epochs)
    es.on_epoch_end(static_cast<int>(e), logs_of({{key, values[e]}}));
  es.on_train_end(Logs());
  return epochs;
}

TEST(EarlyStopping, StopsAfterPatienceEpochsWithoutImprovement) {
  Sequential m = small_model();
  EarlyStopping es({.monitor = "loss", .patience = 2});
  EXPECT_EQ(run(es, m.impl(), "loss", {1.0, 0.9, 0.95, 0.96, 0.5}), 4);
  EXPECT_EQ(es.stopped_epoch(), 3);
  EXPECT_EQ(es.best_epoch(), 1);
  EXPECT_DOUBLE_EQ(*es.best(), 0.9);
}

TEST(EarlyStopping, PatienceZeroStopsAtTheFirstEpochWithoutImprovement) {
  Sequential m = small_model();
  EarlyStopping es({.monitor = "loss"});
  EXPECT_EQ(run(es, m.impl(), "loss", {1.0, 0.9, 0.9, 0.1}), 3);
  EXPECT_EQ(es.stopped_epoch(), 2);
}

TEST(EarlyStopping, MinDeltaIsTheSmallestChangeThatCounts) {
  Sequential m = small_model();
  EarlyStopping small({.monitor = "loss", .min_delta = 0.1});
  EXPECT_EQ(run(small, m.impl(), "loss", {1.0, 0.95, 0.5}), 2);  // 0.05 is not an improvement
  EarlyStopping negative({.monitor = "loss", .min_delta = -0.1});  // taken as its absolute value, as Keras
  EXPECT_EQ(run(negative, m.impl(), "loss", {1.0, 0.95, 0.5}), 2);
  EarlyStopping enough({.monitor = "loss", .min_delta = 0.1});
  EXPECT_EQ(run(enough, m.impl(), "loss", {1.0, 0.85, 0.7, 0.55}), 4);
}

TEST(EarlyStopping, BaselineMustBeBeatenToResetTheWait) {
  Sequential m = small_model();
  EarlyStopping plain({.monitor = "val_loss", .patience = 2});
  EXPECT_EQ(run(plain, m.impl(), "val_loss", {1.0, 0.9, 0.95, 0.97}), 4);
  EarlyStopping with_baseline({.monitor = "val_loss", .patience = 2, .baseline = 0.5});
  // Improvements above the baseline keep counting: the first epoch without one stops training.
  EXPECT_EQ(run(with_baseline, m.impl(), "val_loss", {1.0, 0.9, 0.95, 0.97}), 3);
  EarlyStopping beaten({.monitor = "val_loss", .patience = 2, .baseline = 0.5});
  EXPECT_EQ(run(beaten, m.impl(), "val_loss", {0.4, 0.45, 0.46, 0.47}), 3);
}

TEST(EarlyStopping, ModeAutoMaximizesAccuracy) {
  Sequential m = small_model();
  EarlyStopping es({.monitor = "val_accuracy", .patience = 1});
  EXPECT_EQ(run(es, m.impl(), "val_accuracy", {0.5, 0.6, 0.7, 0.65, 0.9}), 4);
  EXPECT_DOUBLE_EQ(*es.best(), 0.7);
  EarlyStopping forced_min({.monitor = "val_accuracy", .mode = "min"});
  EXPECT_EQ(run(forced_min, m.impl(), "val_accuracy", {0.5, 0.6}), 2);
  EXPECT_THROW(EarlyStopping({.mode = "sideways"}), std::invalid_argument);
}

// Mode "auto" takes the direction from the compiled metric (Keras 3's Metric._direction), not from its name:
// precision and recall improve as they rise, errors as they fall.
TEST(EarlyStopping, ModeAutoFollowsTheMonitoredMetricsDirection) {
  Sequential m({InputLayer({.shape = {3}}), layers::Dense({.units = 2})});
  m.compile(optimizers::SGD(0.1), losses::MeanSquaredError(),
            {metrics::Precision(), metrics::Recall(), metrics::MeanAbsoluteError()});
  EarlyStopping precision({.monitor = "val_precision", .patience = 1});
  EXPECT_EQ(run(precision, m.impl(), "val_precision", {0.5, 0.6, 0.7}), 3);
  EXPECT_DOUBLE_EQ(*precision.best(), 0.7);
  EarlyStopping recall({.monitor = "recall", .patience = 1});
  EXPECT_EQ(run(recall, m.impl(), "recall", {0.5, 0.6, 0.55, 0.9}), 3);
  EarlyStopping error({.monitor = "val_mean_absolute_error", .patience = 1});
  EXPECT_EQ(run(error, m.impl(), "val_mean_absolute_error", {0.5, 0.4, 0.45, 0.3}), 3);
  EarlyStopping loss({.monitor = "val_loss", .patience = 1});
  EXPECT_EQ(run(loss, m.impl(), "val_loss", {0.5, 0.4, 0.45, 0.3}), 3);
}

// As Keras raises: a monitor that is neither a loss nor a compiled metric with a direction needs mode "min" or
// "max" (the name alone decides nothing).
TEST(EarlyStopping, ModeAutoRefusesAMonitorOfUnknownDirection) {
  Sequential m({InputLayer({.shape = {3}}), layers::Dense({.units = 2})});
  m.compile(optimizers::SGD(0.1), losses::MeanSquaredError(), {metrics::Mean({.name = "score"})});
  for (const std::string monitor : {"val_accuracy", "val_score"}) {
    EarlyStopping es({.monitor = monitor});
    try {
      run(es, m.impl(), monitor, {0.5});
      ADD_FAILURE() << monitor << ": no exception";
    } catch (const std::invalid_argument& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("EarlyStopping callback received monitor=" + monitor), std::string::npos) << what;
      EXPECT_NE(what.find("mode \"max\""), std::string::npos) << what;
    }
    EarlyStopping given({.monitor = monitor, .patience = 1, .mode = "max"});
    EXPECT_EQ(run(given, m.impl(), monitor, {0.5, 0.6, 0.7}), 3);
  }
}

TEST(EarlyStopping, StartFromEpochIgnoresTheWarmUp) {
  Sequential m = small_model();
  EarlyStopping es({.monitor = "loss", .start_from_epoch = 3});
  EXPECT_EQ(run(es, m.impl(), "loss", {1.0, 2.0, 3.0, 4.0, 3.5, 5.0}), 6);
  EXPECT_EQ(es.best_epoch(), 4);
}

TEST(EarlyStopping, AMissingMonitorWarnsAndSkips) {
  Sequential m = small_model();
  EarlyStopping es({.monitor = "val_loss"});
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(run(es, m.impl(), "loss", {1.0, 2.0, 3.0}), 3);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("val_loss"), std::string::npos) << err;
  EXPECT_NE(err.find("Available metrics are: loss"), std::string::npos) << err;
}

// Sets every weight to `value`.
void fill_weights(ModelImpl& m, float value) {
  for (const VariablePtr& v : m.weights()) v->value.fill(value);
}

TEST(EarlyStopping, RestoresTheBestWeightsWhenStopped) {
  Sequential m = small_model();
  EarlyStopping es({.monitor = "loss", .patience = 1, .restore_best_weights = true});
  es.set_model(&m.impl());
  es.on_train_begin(Logs());
  const std::vector<double> losses = {1.0, 0.5, 0.7, 0.8};
  int e = 0;
  for (; e < 4 && !m->stop_training; ++e) {
    fill_weights(m.impl(), static_cast<float>(e));
    es.on_epoch_end(e, logs_of({{"loss", losses[static_cast<std::size_t>(e)]}}));
  }
  EXPECT_EQ(e, 3);
  es.on_train_end(Logs());
  for (const Tensor& w : m.get_weights())
    for (float v : w.to_vector()) EXPECT_EQ(v, 1.f);
}

TEST(EarlyStopping, RestoresTheBestWeightsWhenTrainingRanToTheEnd) {
  Sequential m = small_model();
  EarlyStopping es({.monitor = "loss", .patience = 5, .restore_best_weights = true});
  es.set_model(&m.impl());
  es.on_train_begin(Logs());
  const std::vector<double> losses = {1.0, 0.5, 0.3, 0.7};
  for (int e = 0; e < 4; ++e) {
    fill_weights(m.impl(), static_cast<float>(e));
    es.on_epoch_end(e, logs_of({{"loss", losses[static_cast<std::size_t>(e)]}}));
  }
  EXPECT_FALSE(m->stop_training);
  es.on_train_end(Logs());
  EXPECT_EQ(es.best_epoch(), 2);
  for (const Tensor& w : m.get_weights())
    for (float v : w.to_vector()) EXPECT_EQ(v, 2.f);
}

TEST(EarlyStopping, WithoutRestoreTheLastWeightsStay) {
  Sequential m = small_model();
  EarlyStopping es({.monitor = "loss", .patience = 1});
  es.set_model(&m.impl());
  es.on_train_begin(Logs());
  for (int e = 0; e < 3; ++e) {
    fill_weights(m.impl(), static_cast<float>(e));
    es.on_epoch_end(e, logs_of({{"loss", 1.0 + e}}));
  }
  es.on_train_end(Logs());
  for (const Tensor& w : m.get_weights())
    for (float v : w.to_vector()) EXPECT_EQ(v, 2.f);
}

TEST(EarlyStopping, ReusedAcrossFitsStartsAfresh) {
  Sequential m = small_model();
  EarlyStopping es({.monitor = "loss", .patience = 1});
  EXPECT_EQ(run(es, m.impl(), "loss", {0.1, 0.2, 0.3}), 2);
  EXPECT_EQ(run(es, m.impl(), "loss", {5.0, 4.0, 3.0}), 3);
  EXPECT_EQ(es.stopped_epoch(), 0);
}

TEST(EarlyStopping, StopsFitAndHistoryIsShorter) {
  set_random_seed(3);
  Sequential m = small_model(0.0);  // a learning rate of 0 keeps the loss constant: no improvement after epoch 0
  const Tensor x = Tensor::full({8, 3}, 0.5f);
  const Tensor y = Tensor::full({8, 2}, 1.f);
  auto es = std::make_shared<EarlyStopping>(EarlyStoppingOptions{.monitor = "loss", .patience = 1});
  History h = m.fit(x, y, {.epochs = 10, .batch_size = 4, .verbose = 0, .callbacks = {es}});
  EXPECT_EQ(h.epoch(), (std::vector<int>{0, 1}));
  EXPECT_EQ(es->stopped_epoch(), 1);
}

}  // namespace
}  // namespace tower::callbacks
