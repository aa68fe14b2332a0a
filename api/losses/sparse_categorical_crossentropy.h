#pragma once
// SparseCategoricalCrossentropy (keras.losses.SparseCategoricalCrossentropy): y_pred [N, ..., C], y_true class
// indices [N, ...] or [N, ..., 1] (int32, int64, or float32 holding whole numbers). per_example [N, ...]:
//   from_logits = true:   -log softmax(y_pred)_y
//   from_logits = false:  -log(c_y / sum_j c_j),  c = clip(y_pred, 1e-7, 1 - 1e-7)
// (Keras takes log(c) as logits, which renormalises the clipped probabilities). The gradient with respect to
// y_pred is softmax(y_pred) - onehot(y) for logits, and 1 / sum_j c_j - onehot(y) / c for probabilities, 0 where
// y_pred lies outside [1e-7, 1 - 1e-7] (the clip passes no gradient there).
//
// Fused softmax (from_logits = false): when y_pred is a softmax of logits, backward_through_softmax gives
// d/d logits = scale (probs - onehot(y)). Like every fused softmax-crossentropy kernel it skips the 1e-7 clipping,
// so it differs from backward followed by the softmax's backward only where a probability is clipped.
//
// A negative, out-of-range or non-integer label on the CPU throws std::invalid_argument naming the label, its flat
// index and the class count (on a GPU its example's loss is NaN: loss.h).
//
// ignore_class (Keras' "void" class, e.g. -1 or 255): a value labelled with it has per_example 0 and no gradient, and
// Keras leaves it out of the mean (its mask weighs the kept values total / kept). Since the training loop divides by
// every value, the kept ones carry that weight here: per_example = (values / kept values of the call) * loss, so the
// loop's sum_over_batch_size is Keras' mean over the kept values (weighted as Keras weighs them; under a strategy,
// each replica's kept values, as each replica's call is in Keras). A label equal to ignore_class is valid whatever
// its range; other labels must be class indices. With an output mask too, the two weightings multiply, where Keras
// combines the masks first.
#include <cstdint>
#include <optional>

#include "api/losses/loss.h"

namespace tower::losses {

struct SparseCategoricalCrossentropyOptions {
  bool from_logits = false;
  std::optional<std::int64_t> ignore_class;
  std::string name = "sparse_categorical_crossentropy";
  template <class V> void visit(V&& v) {
    v("from_logits", from_logits);
    v("ignore_class", ignore_class);
    v("name", name);
  }
};

class SparseCategoricalCrossentropyImpl final : public detail::BackendLoss {
 public:
  using Options = SparseCategoricalCrossentropyOptions;
  explicit SparseCategoricalCrossentropyImpl(Options options = {});
  const Options& options() const { return options_; }
  // From the "config" map of a serialized loss (Keras' keys).
  static LossPtr from_config(const Config& arguments);

  // Requires y_pred of rank >= 2 and y_true of y_pred's shape without its last axis (or with it as 1).
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

class SparseCategoricalCrossentropy : public LossHolder<SparseCategoricalCrossentropyImpl> {
 public:
  using LossHolder::LossHolder;
};

}  // namespace tower::losses
