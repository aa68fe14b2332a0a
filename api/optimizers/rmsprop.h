#pragma once
// RMSprop (keras.optimizers.RMSprop). Slots "velocity", "momentum" (momentum > 0) and "average_gradient"
// (centered):
//   velocity = rho * velocity + (1 - rho) * g^2
//   centered:  average_gradient = rho * average_gradient + (1 - rho) * g;
//              denominator = velocity - average_gradient^2 + epsilon
//   otherwise: denominator = velocity + epsilon
//   increment = lr * g / sqrt(denominator)
//   momentum > 0: momentum_slot = momentum * momentum_slot + increment; var -= momentum_slot
//   otherwise:    var -= increment
#include "api/optimizers/optimizer.h"

namespace tower::optimizers {

struct RMSpropOptions {
  schedules::LearningRate learning_rate = 0.001;
  double rho = 0.9;        // in [0, 1]
  double momentum = 0.0;   // in [0, 1]
  double epsilon = 1e-7;   // >= 0
  bool centered = false;
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
    v("rho", rho);
    v("momentum", momentum);
    v("epsilon", epsilon);
    v("centered", centered);
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

class RMSpropImpl : public Optimizer {
 public:
  using Options = RMSpropOptions;
  // Throws std::invalid_argument for rho or momentum outside [0, 1] or a negative epsilon (and the base checks).
  explicit RMSpropImpl(Options options);
  const Options& options() const { return options_; }

 protected:
  void build_slots(const Variable& variable) override;
  backend::OptimizerStep update_for(double lr) const override;
  Config own_config() const override { return options_to_config(options_); }

 private:
  Options options_;
};

class RMSprop : public OptimizerHolder<RMSpropImpl> {
 public:
  using OptimizerHolder::OptimizerHolder;
};

}  // namespace tower::optimizers
