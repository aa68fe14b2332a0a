#pragma once
// LambdaCallback (Keras 3): a callback made of functions, for quick ad-hoc hooks:
//   LambdaCallback({.on_epoch_end = [](int epoch, const Logs& logs) { ... }})
// Each member left empty does nothing. Exceptions thrown by a function propagate out of fit().
#include <cstdint>
#include <functional>

#include "api/training/callback.h"

namespace tower::callbacks {

struct LambdaCallbackOptions {
  std::function<void(int epoch, const Logs&)> on_epoch_begin;
  std::function<void(int epoch, const Logs&)> on_epoch_end;
  std::function<void(std::int64_t batch, const Logs&)> on_train_batch_begin;
  std::function<void(std::int64_t batch, const Logs&)> on_train_batch_end;
  std::function<void(const Logs&)> on_train_begin;
  std::function<void(const Logs&)> on_train_end;
  std::function<void(std::int64_t batch, const Logs&)> on_test_batch_begin;
  std::function<void(std::int64_t batch, const Logs&)> on_test_batch_end;
  std::function<void(const Logs&)> on_test_begin;
  std::function<void(const Logs&)> on_test_end;
  std::function<void(std::int64_t batch, const Logs&)> on_predict_batch_begin;
  std::function<void(std::int64_t batch, const Logs&)> on_predict_batch_end;
  std::function<void(const Logs&)> on_predict_begin;
  std::function<void(const Logs&)> on_predict_end;
};

class LambdaCallback : public Callback {
 public:
  explicit LambdaCallback(LambdaCallbackOptions options) : f_(std::move(options)) {}

  void on_epoch_begin(int epoch, const Logs& logs) override;
  void on_epoch_end(int epoch, const Logs& logs) override;
  void on_train_batch_begin(std::int64_t batch, const Logs& logs) override;
  void on_train_batch_end(std::int64_t batch, const Logs& logs) override;
  void on_train_begin(const Logs& logs) override;
  void on_train_end(const Logs& logs) override;
  void on_test_batch_begin(std::int64_t batch, const Logs& logs) override;
  void on_test_batch_end(std::int64_t batch, const Logs& logs) override;
  void on_test_begin(const Logs& logs) override;
  void on_test_end(const Logs& logs) override;
  void on_predict_batch_begin(std::int64_t batch, const Logs& logs) override;
  void on_predict_batch_end(std::int64_t batch, const Logs& logs) override;
  void on_predict_begin(const Logs& logs) override;
  void on_predict_end(const Logs& logs) override;

 private:
  LambdaCallbackOptions f_;
};

}  // namespace tower::callbacks
