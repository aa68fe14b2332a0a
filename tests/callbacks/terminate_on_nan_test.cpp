#include "api/callbacks/terminate_on_nan.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <sstream>

#include "api/callbacks/lambda_callback.h"
#include "api/losses/mean_squared_error.h"
#include "api/models/model.h"
#include "api/optimizers/sgd.h"
#include "layers/dense.h"

namespace tower::callbacks {
namespace {

Logs loss_logs(double loss) {
  Logs logs;
  logs.set("loss", loss);
  logs.set("size", 4);
  return logs;
}

TEST(TerminateOnNaN, StopsOnNaNOrInfiniteLoss) {
  Sequential m({InputLayer({.shape = {3}}), layers::Dense({.units = 2})});
  for (double bad : {std::nan(""), std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity()}) {
    std::ostringstream out;
    TerminateOnNaN cb(&out);
    cb.set_model(&m.impl());
    m->stop_training = false;
    cb.on_train_batch_end(0, loss_logs(0.5));
    cb.on_train_batch_end(1, Logs());
    EXPECT_FALSE(m->stop_training);
    EXPECT_EQ(out.str(), "");
    cb.on_train_batch_end(7, loss_logs(bad));
    EXPECT_TRUE(m->stop_training);
    EXPECT_EQ(out.str(), "Batch 7: Invalid loss, terminating training\n");
  }
}

TEST(TerminateOnNaN, EndsFitAfterTheBadBatch) {
  Sequential m({InputLayer({.shape = {3}}), layers::Dense({.units = 2})});
  m.compile(optimizers::SGD(1e30), losses::MeanSquaredError());  // diverges to inf, then NaN
  const Tensor x = Tensor::full({64, 3}, 10.f), y = Tensor::full({64, 2}, 1.f);
  std::ostringstream out;
  auto cb = std::make_shared<TerminateOnNaN>(&out);
  History h = m.fit(x, y, {.epochs = 5, .batch_size = 4, .verbose = 0, .callbacks = {cb}});
  EXPECT_EQ(h.epoch().size(), 1u);
  EXPECT_NE(out.str().find("Invalid loss, terminating training"), std::string::npos);
  EXPECT_FALSE(std::isfinite(h["loss"].back()));
}

// Training stops at the very batch whose (running) loss first is NaN or infinite: no batch after it runs.
TEST(TerminateOnNaN, StopsAtTheFirstBatchWithAnInvalidLoss) {
  Sequential m({InputLayer({.shape = {3}}), layers::Dense({.units = 2})});
  m.compile(optimizers::SGD(1e30), losses::MeanSquaredError());
  const Tensor x = Tensor::full({64, 3}, 10.f), y = Tensor::full({64, 2}, 1.f);
  std::vector<double> losses;
  auto record = std::make_shared<LambdaCallback>(LambdaCallbackOptions{
      .on_train_batch_end = [&](std::int64_t, const Logs& logs) { losses.push_back(*logs.get("loss")); }});
  std::ostringstream out;
  m.fit(x, y, {.epochs = 5, .batch_size = 4, .verbose = 0, .callbacks = {record, std::make_shared<TerminateOnNaN>(&out)}});
  ASSERT_GT(losses.size(), 1u);
  for (std::size_t i = 0; i + 1 < losses.size(); ++i) EXPECT_TRUE(std::isfinite(losses[i])) << "batch " << i;
  EXPECT_FALSE(std::isfinite(losses.back()));
  EXPECT_EQ(m.optimizer()->iterations(), static_cast<std::int64_t>(losses.size()));
  EXPECT_EQ(out.str(), "Batch " + std::to_string(losses.size() - 1) + ": Invalid loss, terminating training\n");
}

}  // namespace
}  // namespace tower::callbacks
