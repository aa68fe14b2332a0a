#include "api/callbacks/reduce_lr_on_plateau.h"

#include <gtest/gtest.h>

#include <vector>

#include "api/callbacks/learning_rate_scheduler.h"
#include "api/losses/mean_squared_error.h"
#include "api/metrics/metrics.h"
#include "api/models/model.h"
#include "api/optimizers/sgd.h"
#include "layers/dense.h"

namespace tower::callbacks {
namespace {

Sequential small_model(double lr) {
  Sequential m({InputLayer({.shape = {3}}), layers::Dense({.units = 2})});
  m.compile(optimizers::SGD(lr), losses::MeanSquaredError(),
            {metrics::Accuracy(), metrics::AUC(), metrics::Precision()});
  return m;
}

Logs loss_logs(double value) {
  Logs logs;
  logs.set("val_loss", value);
  return logs;
}

// The learning rate after each epoch of `values`.
std::vector<double> rates(ReduceLROnPlateau& cb, Sequential& m, const std::vector<double>& values) {
  cb.set_model(&m.impl());
  cb.on_train_begin(Logs());
  std::vector<double> out;
  for (std::size_t e = 0; e < values.size(); ++e) {
    cb.on_epoch_end(static_cast<int>(e), loss_logs(values[e]));
    out.push_back(m.optimizer()->learning_rate());
  }
  return out;
}

TEST(ReduceLROnPlateau, ReducesAfterPatienceThenCoolsDownAndStopsAtMinLr) {
  Sequential m = small_model(1.0);
  ReduceLROnPlateau cb({.factor = 0.5, .patience = 2, .cooldown = 1, .min_lr = 0.2});
  const std::vector<double> got = rates(cb, m, std::vector<double>(10, 1.0));
  // Reductions at epochs 2, 4 and 6 (each followed by one cooldown epoch); 0.25 * 0.5 is clipped to min_lr,
  // and at min_lr nothing changes any more.
  const std::vector<double> expected = {1.0, 1.0, 0.5, 0.5, 0.25, 0.25, 0.2, 0.2, 0.2, 0.2};
  ASSERT_EQ(got.size(), expected.size());
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_DOUBLE_EQ(got[i], expected[i]) << "epoch " << i;
}

TEST(ReduceLROnPlateau, ImprovementsResetTheWait) {
  Sequential m = small_model(1.0);
  ReduceLROnPlateau cb({.factor = 0.1, .patience = 2});
  const std::vector<double> got = rates(cb, m, {1.0, 1.0, 0.9, 0.9, 0.8, 0.8, 0.8});
  EXPECT_DOUBLE_EQ(got[5], 1.0);
  EXPECT_NEAR(got[6], 0.1, 1e-12);
}

TEST(ReduceLROnPlateau, MinDeltaDecidesWhatIsAnImprovement) {
  Sequential m = small_model(1.0);
  ReduceLROnPlateau cb({.factor = 0.5, .patience = 1, .min_delta = 0.1});
  const std::vector<double> got = rates(cb, m, {1.0, 0.95});
  EXPECT_DOUBLE_EQ(got[1], 0.5);
}

TEST(ReduceLROnPlateau, ModeMaxForAccuracy) {
  Sequential m = small_model(1.0);
  ReduceLROnPlateau cb({.monitor = "val_accuracy", .factor = 0.5, .patience = 1});
  cb.set_model(&m.impl());
  cb.on_train_begin(Logs());
  for (double v : {0.5, 0.6, 0.7}) {
    Logs logs;
    logs.set("val_accuracy", v);
    cb.on_epoch_end(0, logs);
  }
  EXPECT_DOUBLE_EQ(m.optimizer()->learning_rate(), 1.0);
  Logs worse;
  worse.set("val_accuracy", 0.65);
  cb.on_epoch_end(3, worse);
  EXPECT_DOUBLE_EQ(m.optimizer()->learning_rate(), 0.5);
}

// Mode "auto" follows the compiled metric's direction: a rising precision is improving (it was minimized by name).
TEST(ReduceLROnPlateau, ModeAutoMaximizesPrecision) {
  Sequential m = small_model(1.0);
  ReduceLROnPlateau cb({.monitor = "val_precision", .factor = 0.5, .patience = 1});
  cb.set_model(&m.impl());
  cb.on_train_begin(Logs());
  for (double v : {0.5, 0.6, 0.7}) {
    Logs logs;
    logs.set("val_precision", v);
    cb.on_epoch_end(0, logs);
  }
  EXPECT_DOUBLE_EQ(m.optimizer()->learning_rate(), 1.0);
  EXPECT_DOUBLE_EQ(*cb.best(), 0.7);
}

TEST(ReduceLROnPlateau, AMissingMonitorWarnsOnceAndChangesNothing) {
  Sequential m = small_model(1.0);
  ReduceLROnPlateau cb({.monitor = "val_auc", .patience = 0});
  cb.set_model(&m.impl());
  cb.on_train_begin(Logs());
  ::testing::internal::CaptureStderr();
  for (int e = 0; e < 3; ++e) cb.on_epoch_end(e, loss_logs(1.0));
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("`val_auc` which is not available. Available metrics are: val_loss"), std::string::npos) << err;
  EXPECT_EQ(err.find("Warning", 1), std::string::npos) << "warned more than once: " << err;
  EXPECT_DOUBLE_EQ(m.optimizer()->learning_rate(), 1.0);
}

TEST(ReduceLROnPlateau, RejectsAFactorOfOneOrMoreAndUnknownModes) {
  EXPECT_THROW(ReduceLROnPlateau({.factor = 1.0}), std::invalid_argument);
  EXPECT_THROW(ReduceLROnPlateau({.mode = "up"}), std::invalid_argument);
}

// As in Keras, fit's History has the rate of every epoch under "learning_rate" (the optimizer's float32 value,
// before the epoch's reduction), with ReduceLROnPlateau as with LearningRateScheduler.
TEST(ReduceLROnPlateau, HistoryHasTheLearningRate) {
  const Tensor x = Tensor::full({8, 3}, 1.f), y = Tensor::full({8, 2}, 0.5f);
  Sequential m = small_model(0.1);
  auto plateau = std::make_shared<ReduceLROnPlateau>(ReduceLROnPlateauOptions{.monitor = "loss", .factor = 0.5,
                                                                              .patience = 1, .min_delta = 10.0});
  History h = m.fit(x, y, {.epochs = 3, .batch_size = 4, .verbose = 0, .callbacks = {plateau}});
  ASSERT_TRUE(h.contains("learning_rate"));
  EXPECT_EQ(h["learning_rate"], (std::vector<double>{0.1f, 0.1f, 0.05f}));

  Sequential scheduled = small_model(0.1);
  auto schedule = std::make_shared<LearningRateScheduler>([](int epoch, double) { return 0.01 * (epoch + 1); });
  h = scheduled.fit(x, y, {.epochs = 3, .batch_size = 4, .verbose = 0, .callbacks = {schedule}});
  ASSERT_TRUE(h.contains("learning_rate"));
  EXPECT_EQ(h["learning_rate"], (std::vector<double>{0.01f, 0.02f, 0.03f}));
}

}  // namespace
}  // namespace tower::callbacks
