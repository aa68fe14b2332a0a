#pragma once
// Adafactor (keras.optimizers.Adafactor), slots "r", "c" and "velocity". A variable of rank >= 2 keeps factored
// second moments over its last two dimensions [.., rows, cols]: r of shape [.., rows] and c of shape [.., cols]
// (scalars for a variable of lower rank, which Keras keeps unused). With t = the step (Keras' iterations + 1),
// b = 1 - t^beta_2_decay and q = g^2 + epsilon_1:
//   rank >= 2: r = b * r + (1 - b) * mean(q, last axis),  c = b * c + (1 - b) * mean(q, second last axis),
//              velocity = r / mean(r, last axis) (outer) c
//   otherwise: velocity = b * velocity + (1 - b) * q
//   u = g / sqrt(velocity);  var -= max(epsilon_2, rms(var)) * min(lr, 1 / sqrt(t)) * u / max(1, rms(u) / clip_threshold)
// relative_step is kept for the config; as in Keras it changes nothing (the step size is min(lr, 1 / sqrt(t))
// either way).
#include "api/optimizers/optimizer.h"

namespace tower::optimizers {

struct AdafactorOptions {
  schedules::LearningRate learning_rate = 0.001;
  double beta_2_decay = -0.8;  // <= 0
  double epsilon_1 = 1e-30;  // >= 0
  double epsilon_2 = 1e-3;  // >= 0
  double clip_threshold = 1.0;  // > 0
  bool relative_step = true;
  std::optional<double> weight_decay;
  std::optional<double> clipnorm;
  std::optional<double> clipvalue;
  std::optional<double> global_clipnorm;
  bool use_ema = false;
  double ema_momentum = 0.99;
  std::optional<std::int64_t> ema_overwrite_frequency;
  std::optional<std::int64_t> gradient_accumulation_steps;
  template <class V> void visit(V&& v) {
    v("learning_rate", learning_rate);
    v("beta_2_decay", beta_2_decay);
    v("epsilon_1", epsilon_1);
    v("epsilon_2", epsilon_2);
    v("clip_threshold", clip_threshold);
    v("relative_step", relative_step);
    v("weight_decay", weight_decay);
    v("clipnorm", clipnorm);
    v("clipvalue", clipvalue);
    v("global_clipnorm", global_clipnorm);
    v("use_ema", use_ema);
    v("ema_momentum", ema_momentum);
    v("ema_overwrite_frequency", ema_overwrite_frequency);
    v("gradient_accumulation_steps", gradient_accumulation_steps);
  }
};

class AdafactorImpl : public Optimizer {
 public:
  using Options = AdafactorOptions;
  // Throws std::invalid_argument for a beta_2_decay above 0, a negative epsilon_1 or epsilon_2 or a clip_threshold <= 0 (and the base checks).
  explicit AdafactorImpl(Options options);
  const Options& options() const { return options_; }

 protected:
  void build_slots(const Variable& variable) override;
  backend::OptimizerStep update_for(double lr) const override;
  Config own_config() const override { return options_to_config(options_); }

 private:
  Options options_;
};

class Adafactor : public OptimizerHolder<AdafactorImpl> {
 public:
  using OptimizerHolder::OptimizerHolder;
};

}  // namespace tower::optimizers
