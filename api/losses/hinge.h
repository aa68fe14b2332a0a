#pragma once
// Hinge (keras.losses.Hinge): per_example = mean(max(1 - t y_pred, 0)) over the last axis, t = y_true, except that
// when every label of the batch is 0 or 1 they are taken as -1 / 1 (t = 2 y_true - 1), as Keras converts binary
// labels (a batch-wide test, so one call's rows decide together). The derivative is -t where 1 - t y_pred >= 0 and 0
// elsewhere (TensorFlow's maximum). y_true: y_pred's shape (up to a trailing axis of 1), float32 or int32.
#include "api/losses/loss.h"

namespace tower::losses {

struct HingeOptions {
  std::string name = "hinge";
  template <class V> void visit(V&& v) { v("name", name); }
};

class HingeImpl final : public detail::BackendLoss {
 public:
  using Options = HingeOptions;
  explicit HingeImpl(Options options = {});
  const Options& options() const { return options_; }
  // From the "config" map of a serialized loss (Keras' keys).
  static LossPtr from_config(const Config& arguments);
  Config get_config() const override;

 protected:
  backend::LossParams params() const override { return {.kind = backend::LossKind::hinge}; }

 private:
  Options options_;
};

class Hinge : public LossHolder<HingeImpl> {
 public:
  using LossHolder::LossHolder;
};

}  // namespace tower::losses
