#pragma once
// MeanAbsolutePercentageError (keras.losses.MeanAbsolutePercentageError): per_example = 100 mean(|y_true - y_pred| /
// max(|y_true|, 1e-7)) over the last axis. The derivative is 100 sign(y_pred - y_true) / max(|y_true|, 1e-7), 0 where
// they are equal (TensorFlow's sign(0)). y_true: y_pred's shape (up to a trailing axis of 1), float32 or int32.
#include "api/losses/loss.h"

namespace tower::losses {

struct MeanAbsolutePercentageErrorOptions {
  std::string name = "mean_absolute_percentage_error";
  template <class V> void visit(V&& v) { v("name", name); }
};

class MeanAbsolutePercentageErrorImpl final : public detail::BackendLoss {
 public:
  using Options = MeanAbsolutePercentageErrorOptions;
  explicit MeanAbsolutePercentageErrorImpl(Options options = {});
  const Options& options() const { return options_; }
  // From the "config" map of a serialized loss (Keras' keys).
  static LossPtr from_config(const Config& arguments);
  Config get_config() const override;

 protected:
  backend::LossParams params() const override { return {.kind = backend::LossKind::mean_absolute_percentage_error}; }

 private:
  Options options_;
};

class MeanAbsolutePercentageError : public LossHolder<MeanAbsolutePercentageErrorImpl> {
 public:
  using LossHolder::LossHolder;
};

}  // namespace tower::losses
