#pragma once
// BinaryFocalCrossentropy (keras.losses.BinaryFocalCrossentropy): per_example is the mean over the last axis of
//   w (1 - p_t)^gamma bce,   p_t = t p + (1 - t)(1 - p)
// with t = y_true (1 - label_smoothing) + 0.5 label_smoothing, p the probability (y_pred, or sigmoid(y_pred) with
// from_logits), bce BinaryCrossentropy's term (its stable logits form with from_logits, as Keras' sigmoid hands its
// logits on; clipped probabilities otherwise), and w = t alpha + (1 - t)(1 - alpha) with apply_class_balancing (else
// 1). The gradient is the formula's, with bce's as BinaryCrossentropy documents. y_true: y_pred's shape (up to a
// trailing axis of 1), float32 or int32 0/1 labels.
//
// Throws std::invalid_argument naming the loss and the value for gamma < 0, alpha outside [0, 1] or label_smoothing
// outside [0, 1]. "axis" must be -1 (ConfigError otherwise).
#include "api/losses/loss.h"

namespace tower::losses {

struct BinaryFocalCrossentropyOptions {
  bool apply_class_balancing = false;
  double alpha = 0.25;
  double gamma = 2.0;
  bool from_logits = false;
  double label_smoothing = 0.0;
  std::string name = "binary_focal_crossentropy";
  template <class V> void visit(V&& v) {
    v("apply_class_balancing", apply_class_balancing);
    v("alpha", alpha);
    v("gamma", gamma);
    v("from_logits", from_logits);
    v("label_smoothing", label_smoothing);
    v("name", name);
  }
};

class BinaryFocalCrossentropyImpl final : public detail::BackendLoss {
 public:
  using Options = BinaryFocalCrossentropyOptions;
  explicit BinaryFocalCrossentropyImpl(Options options = {});
  const Options& options() const { return options_; }
  // From the "config" map of a serialized loss (Keras' keys).
  static LossPtr from_config(const Config& arguments);
  Config get_config() const override;

 protected:
  backend::LossParams params() const override;

 private:
  Options options_;
};

class BinaryFocalCrossentropy : public LossHolder<BinaryFocalCrossentropyImpl> {
 public:
  using LossHolder::LossHolder;
};

}  // namespace tower::losses
