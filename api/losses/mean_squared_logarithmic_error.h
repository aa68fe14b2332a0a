#pragma once
// MeanSquaredLogarithmicError (keras.losses.MeanSquaredLogarithmicError): per_example = mean((log(max(y_pred, eps)
// + 1) - log(max(y_true, eps) + 1))^2) over the last axis, eps = 1e-7. The derivative is 2 d / (y_pred + 1) where
// y_pred >= eps and 0 below (the maximum passes no gradient there). y_true: y_pred's shape (up to a trailing axis of
// 1), float32 or int32.
#include "api/losses/loss.h"

namespace tower::losses {

struct MeanSquaredLogarithmicErrorOptions {
  std::string name = "mean_squared_logarithmic_error";
  template <class V> void visit(V&& v) { v("name", name); }
};

class MeanSquaredLogarithmicErrorImpl final : public detail::BackendLoss {
 public:
  using Options = MeanSquaredLogarithmicErrorOptions;
  explicit MeanSquaredLogarithmicErrorImpl(Options options = {});
  const Options& options() const { return options_; }
  // From the "config" map of a serialized loss (Keras' keys).
  static LossPtr from_config(const Config& arguments);
  Config get_config() const override;

 protected:
  backend::LossParams params() const override { return {.kind = backend::LossKind::mean_squared_logarithmic_error}; }

 private:
  Options options_;
};

class MeanSquaredLogarithmicError : public LossHolder<MeanSquaredLogarithmicErrorImpl> {
 public:
  using LossHolder::LossHolder;
};

}  // namespace tower::losses
