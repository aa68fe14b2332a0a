#pragma once
// Adadelta (keras.optimizers.Adadelta). Slots "accumulated_grad" and "accumulated_delta_var":
//   accumulated_grad = rho * accumulated_grad + (1 - rho) * g^2
//   delta = -sqrt(accumulated_delta_var + epsilon) * g / sqrt(accumulated_grad + epsilon)
//   accumulated_delta_var = rho * accumulated_delta_var + (1 - rho) * delta^2
//   var += lr * delta
#include "api/optimizers/optimizer.h"

namespace tower::optimizers {

struct AdadeltaOptions {
  schedules::LearningRate learning_rate = 0.001;
  double rho = 0.95;      // in [0, 1]
  double epsilon = 1e-7;  // > 0
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

class AdadeltaImpl : public Optimizer {
 public:
  using Options = AdadeltaOptions;
  // Throws std::invalid_argument for rho outside [0, 1] or epsilon <= 0 (which would make every step 0 / 0 or
  // 0), and the base checks.
  explicit AdadeltaImpl(Options options);
  const Options& options() const { return options_; }

 protected:
  void build_slots(const Variable& variable) override;
  backend::OptimizerStep update_for(double lr) const override;
  Config own_config() const override { return options_to_config(options_); }

 private:
  Options options_;
};

class Adadelta : public OptimizerHolder<AdadeltaImpl> {
 public:
  using OptimizerHolder::OptimizerHolder;
};

}  // namespace tower::optimizers
