#pragma once
// SquaredHinge (keras.losses.SquaredHinge): per_example = mean(max(1 - t y_pred, 0)^2) over the last axis, with t
// as Hinge takes it (0/1 labels of a batch made -1 / 1). The derivative is -2 t max(1 - t y_pred, 0).
// y_true: y_pred's shape (up to a trailing axis of 1), float32 or int32.
#include "api/losses/loss.h"

namespace tower::losses {

struct SquaredHingeOptions {
  std::string name = "squared_hinge";
  template <class V> void visit(V&& v) { v("name", name); }
};

class SquaredHingeImpl final : public detail::BackendLoss {
 public:
  using Options = SquaredHingeOptions;
  explicit SquaredHingeImpl(Options options = {});
  const Options& options() const { return options_; }
  // From the "config" map of a serialized loss (Keras' keys).
  static LossPtr from_config(const Config& arguments);
  Config get_config() const override;

 protected:
  backend::LossParams params() const override { return {.kind = backend::LossKind::squared_hinge}; }

 private:
  Options options_;
};

class SquaredHinge : public LossHolder<SquaredHingeImpl> {
 public:
  using LossHolder::LossHolder;
};

}  // namespace tower::losses
