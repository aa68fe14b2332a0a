#include "api/callbacks/lambda_callback.h"

namespace tower::callbacks {

void LambdaCallback::on_epoch_begin(int epoch, const Logs& logs) {
  if (f_.on_epoch_begin) f_.on_epoch_begin(epoch, logs);
}

void LambdaCallback::on_epoch_end(int epoch, const Logs& logs) {
  if (f_.on_epoch_end) f_.on_epoch_end(epoch, logs);
}

void LambdaCallback::on_train_batch_begin(std::int64_t batch, const Logs& logs) {
  if (f_.on_train_batch_begin) f_.on_train_batch_begin(batch, logs);
}

void LambdaCallback::on_train_batch_end(std::int64_t batch, const Logs& logs) {
  if (f_.on_train_batch_end) f_.on_train_batch_end(batch, logs);
}

void LambdaCallback::on_train_begin(const Logs& logs) {
  if (f_.on_train_begin) f_.on_train_begin(logs);
}

void LambdaCallback::on_train_end(const Logs& logs) {
  if (f_.on_train_end) f_.on_train_end(logs);
}

void LambdaCallback::on_test_batch_begin(std::int64_t batch, const Logs& logs) {
  if (f_.on_test_batch_begin) f_.on_test_batch_begin(batch, logs);
}

void LambdaCallback::on_test_batch_end(std::int64_t batch, const Logs& logs) {
  if (f_.on_test_batch_end) f_.on_test_batch_end(batch, logs);
}

void LambdaCallback::on_test_begin(const Logs& logs) {
  if (f_.on_test_begin) f_.on_test_begin(logs);
}

void LambdaCallback::on_test_end(const Logs& logs) {
  if (f_.on_test_end) f_.on_test_end(logs);
}

void LambdaCallback::on_predict_batch_begin(std::int64_t batch, const Logs& logs) {
  if (f_.on_predict_batch_begin) f_.on_predict_batch_begin(batch, logs);
}

void LambdaCallback::on_predict_batch_end(std::int64_t batch, const Logs& logs) {
  if (f_.on_predict_batch_end) f_.on_predict_batch_end(batch, logs);
}

void LambdaCallback::on_predict_begin(const Logs& logs) {
  if (f_.on_predict_begin) f_.on_predict_begin(logs);
}

void LambdaCallback::on_predict_end(const Logs& logs) {
  if (f_.on_predict_end) f_.on_predict_end(logs);
}

}  // namespace tower::callbacks
