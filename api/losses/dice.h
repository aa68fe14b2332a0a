#pragma once
// Dice (keras.losses.Dice), and the overlap losses' common part (Tversky: tversky.h), for segmentation. Over a set of
// elements, with I = sum(y_true y_pred), fp = sum(y_true (1 - y_pred)), fn = sum(y_pred (1 - y_true)) and
// eps = 1e-7:
//   Dice     1 - 2 I / (sum(y_true) + sum(y_pred) + eps)
//   Tversky  1 - I / (I + alpha fp + beta fn + eps)       (alpha = beta = 0.5: Dice)
// (Keras' names: Tversky's alpha weighs its "fp", sum((1 - y_pred) y_true)). The set is Keras' axis:
//   axis = null (Keras' default)  the whole batch: one value, given to every example of per_example [N], so the
//                                 reduction's mean is that value (scaled by the mean sample weight, as Keras'
//                                 scalar is); a call's rows decide together, so under a strategy each replica's part
//                                 is one set, as each replica's call is in Keras;
//   axis = every non-batch axis   each example alone: per_example [N] ([1, 2, 3] for y_pred [N, H, W, C]).
// Other axes throw std::invalid_argument naming the loss, the axes and y_pred's shape. y_true: y_pred's shape (up to a
// trailing axis of 1), float32 or int32.
#include <optional>
#include <vector>

#include "api/losses/loss.h"

namespace tower::losses {

struct DiceOptions {
  std::optional<std::vector<int>> axis;
  std::string name = "dice";
  template <class V> void visit(V&& v) {
    v("axis", axis);
    v("name", name);
  }
};

namespace detail {

// Dice and Tversky: one value per example ([N]), each over the axes `axis` names (see above).
class OverlapLoss : public BackendLoss {
 public:
  OverlapLoss(std::string type, std::string name, std::optional<std::vector<int>> axis);
  // [N] for y_pred [N, ...]; throws std::invalid_argument for axes other than null or every non-batch axis.
  Shape per_example_shape(const Shape& y_pred) const override;

 protected:
  bool over_batch() const { return !axis_; }

 private:
  std::optional<std::vector<int>> axis_;
};

}  // namespace detail

class DiceImpl final : public detail::OverlapLoss {
 public:
  using Options = DiceOptions;
  explicit DiceImpl(Options options = {});
  const Options& options() const { return options_; }
  // From the "config" map of a serialized loss (Keras' keys).
  static LossPtr from_config(const Config& arguments);
  Config get_config() const override;

 protected:
  backend::LossParams params() const override;

 private:
  Options options_;
};

class Dice : public LossHolder<DiceImpl> {
 public:
  using LossHolder::LossHolder;
};

}  // namespace tower::losses
