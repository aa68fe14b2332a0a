#pragma once
// Tversky (keras.losses.Tversky): 1 - I / (I + alpha fp + beta fn + eps), over Keras' axis as Dice (dice.h)
// documents, with its sums and axes. alpha = beta = 0.5 gives Dice's value.
#include "api/losses/dice.h"

namespace tower::losses {

struct TverskyOptions {
  double alpha = 0.5;
  double beta = 0.5;
  std::optional<std::vector<int>> axis;
  std::string name = "tversky";
  template <class V> void visit(V&& v) {
    v("alpha", alpha);
    v("beta", beta);
    v("axis", axis);
    v("name", name);
  }
};

class TverskyImpl final : public detail::OverlapLoss {
 public:
  using Options = TverskyOptions;
  explicit TverskyImpl(Options options = {});
  const Options& options() const { return options_; }
  // From the "config" map of a serialized loss (Keras' keys).
  static LossPtr from_config(const Config& arguments);
  Config get_config() const override;

 protected:
  backend::LossParams params() const override;

 private:
  Options options_;
};

class Tversky : public LossHolder<TverskyImpl> {
 public:
  using LossHolder::LossHolder;
};

}  // namespace tower::losses
