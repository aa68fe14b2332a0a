#pragma once
// LogCosh (keras.losses.LogCosh): per_example = mean(log(cosh(y_pred - y_true))) over the last axis, computed as
// Keras does, x + softplus(-2x) - log(2), so large errors do not overflow. The derivative is tanh(y_pred - y_true).
// y_true: y_pred's shape (up to a trailing axis of 1), float32 or int32.
#include "api/losses/loss.h"

namespace tower::losses {

struct LogCoshOptions {
  std::string name = "log_cosh";
  template <class V> void visit(V&& v) { v("name", name); }
};

class LogCoshImpl final : public detail::BackendLoss {
 public:
  using Options = LogCoshOptions;
  explicit LogCoshImpl(Options options = {});
  const Options& options() const { return options_; }
  // From the "config" map of a serialized loss (Keras' keys).
  static LossPtr from_config(const Config& arguments);
  Config get_config() const override;

 protected:
  backend::LossParams params() const override { return {.kind = backend::LossKind::log_cosh}; }

 private:
  Options options_;
};

class LogCosh : public LossHolder<LogCoshImpl> {
 public:
  using LossHolder::LossHolder;
};

}  // namespace tower::losses
