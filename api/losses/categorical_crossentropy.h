#pragma once
// CategoricalCrossentropy (keras.losses.CategoricalCrossentropy): y_true and y_pred [N, ..., C], y_true one-hot
// (or any distribution), smoothed to t = y_true (1 - label_smoothing) + label_smoothing / C. per_example [N, ...]:
//   from_logits = true:   -sum_j t_j log softmax(y_pred)_j
//   from_logits = false:  -sum_j t_j log c_j,  c = clip(q, 1e-7, 1 - 1e-7),  q = y_pred / sum_j y_pred_j
// (Keras renormalises the probabilities by their sum, then clips). The gradient with respect to y_pred follows
// both steps: no gradient flows through a clipped q_j, and the renormalisation spreads the rest over the row. For
// logits it is softmax(y_pred) sum_j t_j - t, the exact derivative (TensorFlow's kernel returns softmax - t, the
// same for targets that sum to 1).
//
// Fused softmax (from_logits = false): when y_pred is a softmax of logits, backward_through_softmax gives
// d/d logits = scale (probs sum_j t_j - t), i.e. scale (probs - t) for targets that sum to 1. Like every fused
// softmax-crossentropy kernel it skips the 1e-7 clipping, so it differs from backward followed by the softmax's
// backward only where a probability is clipped (there the unfused gradient is 0 through that probability).
#include "api/losses/loss.h"

namespace tower::losses {

struct CategoricalCrossentropyOptions {
  bool from_logits = false;
  double label_smoothing = 0.0;
  std::string name = "categorical_crossentropy";
  template <class V> void visit(V&& v) {
    v("from_logits", from_logits);
    v("label_smoothing", label_smoothing);
    v("name", name);
  }
};

class CategoricalCrossentropyImpl final : public detail::BackendLoss {
 public:
  using Options = CategoricalCrossentropyOptions;
  // Throws std::invalid_argument unless 0 <= label_smoothing <= 1.
  explicit CategoricalCrossentropyImpl(Options options = {});
  const Options& options() const { return options_; }
  // From the "config" map of a serialized loss (Keras' keys; "axis" must be -1).
  static LossPtr from_config(const Config& arguments);

  // Requires y_pred of rank >= 2 and y_true of y_pred's shape.
  Shape per_example_shape(const Shape& y_pred) const override;
  void check_shapes(const Shape& y_true, const Shape& y_pred) const override;
  // backward_through_softmax requires can_fuse_softmax(); throws std::logic_error otherwise.
  bool can_fuse_softmax() const override { return !options_.from_logits; }
  Config get_config() const override;

 protected:
  backend::LossParams params() const override;

 private:
  Options options_;
};

class CategoricalCrossentropy : public LossHolder<CategoricalCrossentropyImpl> {
 public:
  using LossHolder::LossHolder;
};

}  // namespace tower::losses
