#include "api/callbacks/lambda_callback.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "api/losses/mean_squared_error.h"
#include "api/models/model.h"
#include "api/optimizers/sgd.h"
#include "layers/dense.h"

namespace tower::callbacks {
namespace {

TEST(LambdaCallback, CallsTheGivenFunctionsAndIgnoresTheOthers) {
  std::vector<std::string> calls;
  LambdaCallback cb({.on_epoch_begin = [&](int e, const Logs&) { calls.push_back("epoch_begin " + std::to_string(e)); },
                     .on_train_batch_end = [&](std::int64_t b, const Logs& l) {
                       calls.push_back("batch_end " + std::to_string(b) + " " + std::to_string(*l.get("loss")));
                     },
                     .on_train_end = [&](const Logs&) { calls.push_back("train_end"); }});
  Logs logs;
  logs.set("loss", 0.5);
  cb.on_train_begin(Logs());
  cb.on_epoch_begin(2, Logs());
  cb.on_train_batch_begin(0, Logs());
  cb.on_train_batch_end(0, logs);
  cb.on_epoch_end(2, logs);
  cb.on_test_begin(Logs());
  cb.on_train_end(Logs());
  EXPECT_EQ(calls, (std::vector<std::string>{"epoch_begin 2", "batch_end 0 0.500000", "train_end"}));
}

TEST(LambdaCallback, SeesEveryHookOfFitInOrder) {
  Sequential m({InputLayer({.shape = {3}}), layers::Dense({.units = 2})});
  m.compile(optimizers::SGD(0.1), losses::MeanSquaredError());
  std::vector<std::string> calls;
  auto cb = std::make_shared<LambdaCallback>(LambdaCallbackOptions{
      .on_epoch_begin = [&](int e, const Logs&) { calls.push_back("eb" + std::to_string(e)); },
      .on_epoch_end = [&](int e, const Logs& l) {
        calls.push_back("ee" + std::to_string(e) + (l.contains("val_loss") ? "v" : ""));
      },
      .on_train_batch_begin = [&](std::int64_t b, const Logs&) { calls.push_back("bb" + std::to_string(b)); },
      .on_train_batch_end = [&](std::int64_t b, const Logs& l) {
        calls.push_back("be" + std::to_string(b) + "/" + std::to_string(static_cast<int>(*l.get("size"))));
      },
      .on_train_begin = [&](const Logs&) { calls.push_back("tb"); },
      .on_train_end = [&](const Logs&) { calls.push_back("te"); },
      .on_test_begin = [&](const Logs&) { calls.push_back("vb"); },
      .on_test_end = [&](const Logs&) { calls.push_back("ve"); }});
  const Tensor x = Tensor::full({10, 3}, 1.f), y = Tensor::full({10, 2}, 0.f);
  m.fit(x, y, {.epochs = 2, .batch_size = 3, .verbose = 0, .callbacks = {cb}, .validation_split = 0.2});
  // 8 training examples in batches of 3, 3 and 2; validation on the last 2.
  EXPECT_EQ(calls, (std::vector<std::string>{"tb", "eb0", "bb0", "be0/3", "bb1", "be1/3", "bb2", "be2/2", "vb", "ve",
                                             "ee0v", "eb1", "bb0", "be0/3", "bb1", "be1/3", "bb2", "be2/2", "vb", "ve",
                                             "ee1v", "te"}));
}

}  // namespace
}  // namespace tower::callbacks
