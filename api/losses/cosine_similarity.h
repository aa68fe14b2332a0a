#pragma once
// CosineSimilarity (keras.losses.CosineSimilarity): per_example = -sum(normalize(y_true) normalize(y_pred)) over the
// feature axis, normalize(x) = x min(1 / sqrt(sum x^2), 1e7) as Keras' l2 normalisation (a zero vector gives 0).
// Values lie in [-1, 1]; -1 is the best. The gradient follows the same formula (no gradient through the 1e7 cap).
// y_true: y_pred's shape (up to a trailing axis of 1), float32 or int32.
//
// axis: the feature axis; Tower reduces the last, so axis must be -1 or y_pred's last axis (std::invalid_argument
// naming the loss, the axis and the shape otherwise). Keras' get_config leaves axis out; Tower writes it.
#include "api/losses/loss.h"

namespace tower::losses {

struct CosineSimilarityOptions {
  int axis = -1;
  std::string name = "cosine_similarity";
  template <class V> void visit(V&& v) {
    v("axis", axis);
    v("name", name);
  }
};

class CosineSimilarityImpl final : public detail::BackendLoss {
 public:
  using Options = CosineSimilarityOptions;
  explicit CosineSimilarityImpl(Options options = {});
  const Options& options() const { return options_; }
  // From the "config" map of a serialized loss (Keras' keys).
  static LossPtr from_config(const Config& arguments);
  Config get_config() const override;
  // Requires axis to name y_pred's last axis.
  Shape per_example_shape(const Shape& y_pred) const override;

 protected:
  backend::LossParams params() const override { return {.kind = backend::LossKind::cosine_similarity}; }

 private:
  Options options_;
};

class CosineSimilarity : public LossHolder<CosineSimilarityImpl> {
 public:
  using LossHolder::LossHolder;
};

}  // namespace tower::losses
