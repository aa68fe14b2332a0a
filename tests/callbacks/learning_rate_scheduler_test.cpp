#include "api/callbacks/learning_rate_scheduler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "api/callbacks/lambda_callback.h"
#include "api/losses/mean_squared_error.h"
#include "api/models/model.h"
#include "api/optimizers/sgd.h"
#include "layers/dense.h"

namespace tower::callbacks {
namespace {

TEST(LearningRateScheduler, SetsTheRateAtEachEpochBegin) {
  Sequential m({InputLayer({.shape = {3}}), layers::Dense({.units = 2})});
  m.compile(optimizers::SGD(0.1), losses::MeanSquaredError());
  std::vector<std::pair<int, double>> seen;
  LearningRateScheduler cb([&](int epoch, double lr) {
    seen.emplace_back(epoch, lr);
    return epoch < 2 ? lr : lr * 0.5;
  });
  cb.set_model(&m.impl());
  for (int e = 0; e < 4; ++e) cb.on_epoch_begin(e, Logs());
  ASSERT_EQ(seen.size(), 4u);
  EXPECT_EQ(seen[0].first, 0);
  EXPECT_DOUBLE_EQ(seen[0].second, 0.1);
  EXPECT_DOUBLE_EQ(seen[2].second, 0.1);
  EXPECT_DOUBLE_EQ(seen[3].second, 0.05);
  EXPECT_DOUBLE_EQ(m.optimizer()->learning_rate(), 0.025);
}

TEST(LearningRateScheduler, DrivesTheRateDuringFit) {
  Sequential m({InputLayer({.shape = {3}}), layers::Dense({.units = 2})});
  m.compile(optimizers::SGD(0.1), losses::MeanSquaredError());
  std::vector<double> at_epoch_end;
  auto schedule = std::make_shared<LearningRateScheduler>([](int epoch, double) { return 0.01 * (epoch + 1); });
  auto probe = std::make_shared<LambdaCallback>(LambdaCallbackOptions{
      .on_epoch_end = [&](int, const Logs&) { at_epoch_end.push_back(m.optimizer()->learning_rate()); }});
  const Tensor x = Tensor::full({4, 3}, 1.f), y = Tensor::full({4, 2}, 0.f);
  m.fit(x, y, {.epochs = 3, .verbose = 0, .callbacks = {schedule, probe}});
  ASSERT_EQ(at_epoch_end.size(), 3u);
  EXPECT_DOUBLE_EQ(at_epoch_end[0], 0.01);
  EXPECT_DOUBLE_EQ(at_epoch_end[2], 0.03);
}

TEST(LearningRateScheduler, RejectsAnEmptyScheduleAndNonFiniteRates) {
  EXPECT_THROW(LearningRateScheduler(nullptr), std::invalid_argument);
  Sequential m({InputLayer({.shape = {3}}), layers::Dense({.units = 2})});
  m.compile(optimizers::SGD(0.1), losses::MeanSquaredError());
  LearningRateScheduler cb([](int, double) { return std::nan(""); });
  cb.set_model(&m.impl());
  EXPECT_THROW(cb.on_epoch_begin(0, Logs()), std::runtime_error);
  EXPECT_DOUBLE_EQ(m.optimizer()->learning_rate(), 0.1);
}

}  // namespace
}  // namespace tower::callbacks
