#pragma once
// MeanSquaredError (keras.losses.MeanSquaredError): per_example = mean((y_pred - y_true)^2) over the last axis.
// y_true: y_pred's shape (up to a trailing axis of 1), float32 or int32.
#include "api/losses/loss.h"

namespace tower::losses {

struct MeanSquaredErrorOptions {
  std::string name = "mean_squared_error";
  template <class V> void visit(V&& v) { v("name", name); }
};

class MeanSquaredErrorImpl final : public detail::BackendLoss {
 public:
  using Options = MeanSquaredErrorOptions;
  explicit MeanSquaredErrorImpl(Options options = {});
  const Options& options() const { return options_; }
  // From the "config" map of a serialized loss (Keras' keys).
  static LossPtr from_config(const Config& arguments);
  Config get_config() const override;

 protected:
  backend::LossParams params() const override { return {.kind = backend::LossKind::mean_squared_error}; }

 private:
  Options options_;
};

class MeanSquaredError : public LossHolder<MeanSquaredErrorImpl> {
 public:
  using LossHolder::LossHolder;
};

}  // namespace tower::losses
