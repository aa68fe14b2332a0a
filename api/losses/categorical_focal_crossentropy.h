#pragma once
// CategoricalFocalCrossentropy (keras.losses.CategoricalFocalCrossentropy): y_pred [N, ..., C], y_true of its shape
// (one-hot or a distribution). per_example [N, ...] = sum_j alpha (1 - c_j)^gamma (-t_j log c_j) with
// t = y_true (1 - label_smoothing) + label_smoothing / C, p the probabilities (y_pred, or softmax(y_pred) with
// from_logits), c = clip(p / sum(p), 1e-7, 1 - 1e-7). The gradient is the formula's, 0 through a clipped c_j.
//
// alpha is one float (Keras also takes a list per class; Tower does not: ConfigError). Throws std::invalid_argument
// naming the loss and the value for gamma < 0, alpha outside [0, 1] or label_smoothing outside [0, 1]. "axis" must
// be -1 (ConfigError otherwise).
#include "api/losses/loss.h"

namespace tower::losses {

struct CategoricalFocalCrossentropyOptions {
  double alpha = 0.25;
  double gamma = 2.0;
  bool from_logits = false;
  double label_smoothing = 0.0;
  std::string name = "categorical_focal_crossentropy";
  template <class V> void visit(V&& v) {
    v("alpha", alpha);
    v("gamma", gamma);
    v("from_logits", from_logits);
    v("label_smoothing", label_smoothing);
    v("name", name);
  }
};

class CategoricalFocalCrossentropyImpl final : public detail::BackendLoss {
 public:
  using Options = CategoricalFocalCrossentropyOptions;
  explicit CategoricalFocalCrossentropyImpl(Options options = {});
  const Options& options() const { return options_; }
  // From the "config" map of a serialized loss (Keras' keys).
  static LossPtr from_config(const Config& arguments);
  Config get_config() const override;
  // Requires y_pred of rank >= 2 and y_true of its shape.
  Shape per_example_shape(const Shape& y_pred) const override;
  void check_shapes(const Shape& y_true, const Shape& y_pred) const override;

 protected:
  backend::LossParams params() const override;

 private:
  Options options_;
};

class CategoricalFocalCrossentropy : public LossHolder<CategoricalFocalCrossentropyImpl> {
 public:
  using LossHolder::LossHolder;
};

}  // namespace tower::losses
