#pragma once
// KLDivergence (keras.losses.KLDivergence): per_example = sum(t * log(t / p)) over the last axis, with
// t = clip(y_true, 1e-7, 1) and p = clip(y_pred, 1e-7, 1) as Keras clips both. The derivative with respect to
// y_pred is -t / p, and 0 where y_pred lies outside [1e-7, 1] (the clip passes no gradient there).
// y_true: y_pred's shape (up to a trailing axis of 1).
#include "api/losses/loss.h"

namespace tower::losses {

struct KLDivergenceOptions {
  std::string name = "kl_divergence";
  template <class V> void visit(V&& v) { v("name", name); }
};

class KLDivergenceImpl final : public detail::BackendLoss {
 public:
  using Options = KLDivergenceOptions;
  explicit KLDivergenceImpl(Options options = {});
  const Options& options() const { return options_; }
  // From the "config" map of a serialized loss (Keras' keys).
  static LossPtr from_config(const Config& arguments);
  Config get_config() const override;

 protected:
  backend::LossParams params() const override { return {.kind = backend::LossKind::kl_divergence}; }

 private:
  Options options_;
};

class KLDivergence : public LossHolder<KLDivergenceImpl> {
 public:
  using LossHolder::LossHolder;
};

}  // namespace tower::losses
