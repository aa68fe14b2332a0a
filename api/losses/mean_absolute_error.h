#pragma once
// MeanAbsoluteError (keras.losses.MeanAbsoluteError): per_example = mean(|y_pred - y_true|) over the last axis.
// The derivative at y_pred == y_true is 0 (TensorFlow's sign(0)).
// y_true: y_pred's shape (up to a trailing axis of 1), float32 or int32.
#include "api/losses/loss.h"

namespace tower::losses {

struct MeanAbsoluteErrorOptions {
  std::string name = "mean_absolute_error";
  template <class V> void visit(V&& v) { v("name", name); }
};

class MeanAbsoluteErrorImpl final : public detail::BackendLoss {
 public:
  using Options = MeanAbsoluteErrorOptions;
  explicit MeanAbsoluteErrorImpl(Options options = {});
  const Options& options() const { return options_; }
  // From the "config" map of a serialized loss (Keras' keys).
  static LossPtr from_config(const Config& arguments);
  Config get_config() const override;

 protected:
  backend::LossParams params() const override { return {.kind = backend::LossKind::mean_absolute_error}; }

 private:
  Options options_;
};

class MeanAbsoluteError : public LossHolder<MeanAbsoluteErrorImpl> {
 public:
  using LossHolder::LossHolder;
};

}  // namespace tower::losses
