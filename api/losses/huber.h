#pragma once
// Huber (keras.losses.Huber): with e = y_pred - y_true, each element contributes 0.5 e^2 where |e| <= delta and
// delta |e| - 0.5 delta^2 elsewhere; per_example is their mean over the last axis. The derivative is e inside
// the band and delta * sign(e) outside it. y_true: y_pred's shape (up to a trailing axis of 1).
#include "api/losses/loss.h"

namespace tower::losses {

struct HuberOptions {
  double delta = 1.0;
  std::string name = "huber_loss";
  template <class V> void visit(V&& v) {
    v("delta", delta);
    v("name", name);
  }
};

class HuberImpl final : public detail::BackendLoss {
 public:
  using Options = HuberOptions;
  // Throws std::invalid_argument if delta < 0.
  explicit HuberImpl(Options options = {});
  const Options& options() const { return options_; }
  // From the "config" map of a serialized loss (Keras' keys).
  static LossPtr from_config(const Config& arguments);
  // Keras' own Huber.get_config leaves delta out; Tower writes it (Keras' Huber(**config) reads it).
  Config get_config() const override;

 protected:
  backend::LossParams params() const override;

 private:
  Options options_;
};

class Huber : public LossHolder<HuberImpl> {
 public:
  using LossHolder::LossHolder;
};

}  // namespace tower::losses
