#pragma once
// Adamax (keras.optimizers.Adamax), Adam with the infinity norm. With t = iterations + 1 (slots "momentum" and
// "norm"):
//   m = m + (g - m) * (1 - beta_1)
//   u = max(beta_2 * u, |g|)
//   var -= lr * m / ((1 - beta_1^t) * (u + epsilon))
#include "api/optimizers/optimizer.h"

namespace tower::optimizers {

struct AdamaxOptions {
  schedules::LearningRate learning_rate = 0.001;
  double beta_1 = 0.9;    // in [0, 1)
  double beta_2 = 0.999;  // in [0, 1)
  double epsilon = 1e-7;  // >= 0
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
    v("beta_1", beta_1);
    v("beta_2", beta_2);
    v("epsilon", epsilon);
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

class AdamaxImpl : public Optimizer {
 public:
  using Options = AdamaxOptions;
  // Throws std::invalid_argument for beta_1 or beta_2 outside [0, 1) or a negative epsilon (and the base checks).
  explicit AdamaxImpl(Options options);
  const Options& options() const { return options_; }

 protected:
  void build_slots(const Variable& variable) override;
  backend::OptimizerStep update_for(double lr) const override;
  Config own_config() const override { return options_to_config(options_); }

 private:
  Options options_;
};

class Adamax : public OptimizerHolder<AdamaxImpl> {
 public:
  using OptimizerHolder::OptimizerHolder;
};

}  // namespace tower::optimizers
