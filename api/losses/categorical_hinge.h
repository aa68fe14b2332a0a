#pragma once
// CategoricalHinge (keras.losses.CategoricalHinge): per_example = max(neg - pos + 1, 0) over the last axis, with
// pos = sum(y_true y_pred) and neg = max((1 - y_true) y_pred). The gradient flows where neg - pos + 1 >= 0
// (TensorFlow's maximum), neg's shared among equal largest values (TensorFlow's reduce_max). y_true: y_pred's shape
// (up to a trailing axis of 1), one-hot 0/1 or -1/1, float32 or int32.
#include "api/losses/loss.h"

namespace tower::losses {

struct CategoricalHingeOptions {
  std::string name = "categorical_hinge";
  template <class V> void visit(V&& v) { v("name", name); }
};

class CategoricalHingeImpl final : public detail::BackendLoss {
 public:
  using Options = CategoricalHingeOptions;
  explicit CategoricalHingeImpl(Options options = {});
  const Options& options() const { return options_; }
  // From the "config" map of a serialized loss (Keras' keys).
  static LossPtr from_config(const Config& arguments);
  Config get_config() const override;

 protected:
  backend::LossParams params() const override { return {.kind = backend::LossKind::categorical_hinge}; }

 private:
  Options options_;
};

class CategoricalHinge : public LossHolder<CategoricalHingeImpl> {
 public:
  using LossHolder::LossHolder;
};

}  // namespace tower::losses
