#pragma once
// BinaryCrossentropy (keras.losses.BinaryCrossentropy): per_example is the mean over the last axis of
//   from_logits = false:  -(t log(c) + (1 - t) log(1 - c)),  c = clip(y_pred, 1e-7, 1 - 1e-7)
//   from_logits = true:   max(x, 0) - x t + log(1 + exp(-|x|)),  x = y_pred (TensorFlow's stable form)
// with t = y_true (1 - label_smoothing) + 0.5 label_smoothing. The derivative with respect to y_pred is
// (c - t) / (c (1 - c)) for probabilities, 0 where y_pred lies outside [1e-7, 1 - 1e-7] (the clip passes no
// gradient there), and sigmoid(x) - t for logits. y_true: y_pred's shape (up to a trailing axis of 1), float32 or
// int32 0/1 labels (or probabilities).
#include "api/losses/loss.h"

namespace tower::losses {

struct BinaryCrossentropyOptions {
  bool from_logits = false;
  double label_smoothing = 0.0;
  std::string name = "binary_crossentropy";
  template <class V> void visit(V&& v) {
    v("from_logits", from_logits);
    v("label_smoothing", label_smoothing);
    v("name", name);
  }
};

class BinaryCrossentropyImpl final : public detail::BackendLoss {
 public:
  using Options = BinaryCrossentropyOptions;
  // Throws std::invalid_argument unless 0 <= label_smoothing <= 1.
  explicit BinaryCrossentropyImpl(Options options = {});
  const Options& options() const { return options_; }
  // From the "config" map of a serialized loss (Keras' keys; "axis" must be -1).
  static LossPtr from_config(const Config& arguments);
  Config get_config() const override;

 protected:
  backend::LossParams params() const override;

 private:
  Options options_;
};

class BinaryCrossentropy : public LossHolder<BinaryCrossentropyImpl> {
 public:
  using LossHolder::LossHolder;
};

}  // namespace tower::losses
