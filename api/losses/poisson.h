#pragma once
// Poisson (keras.losses.Poisson): per_example = mean(y_pred - y_true log(y_pred + 1e-7)) over the last axis; the
// derivative is 1 - y_true / (y_pred + 1e-7). y_true: y_pred's shape (up to a trailing axis of 1), float32 or
// int32 counts.
#include "api/losses/loss.h"

namespace tower::losses {

struct PoissonOptions {
  std::string name = "poisson";
  template <class V> void visit(V&& v) { v("name", name); }
};

class PoissonImpl final : public detail::BackendLoss {
 public:
  using Options = PoissonOptions;
  explicit PoissonImpl(Options options = {});
  const Options& options() const { return options_; }
  // From the "config" map of a serialized loss (Keras' keys).
  static LossPtr from_config(const Config& arguments);
  Config get_config() const override;

 protected:
  backend::LossParams params() const override { return {.kind = backend::LossKind::poisson}; }

 private:
  Options options_;
};

class Poisson : public LossHolder<PoissonImpl> {
 public:
  using LossHolder::LossHolder;
};

}  // namespace tower::losses
