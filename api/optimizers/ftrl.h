#pragma once
// Ftrl (keras.optimizers.Ftrl), slots "accumulator" (starting at initial_accumulator_value) and "linear". With
// p = -learning_rate_power, l2 = l2_regularization_strength + beta / (2 lr):
//   linear += g + 2 * l2_shrinkage_regularization_strength * var - ((acc + g^2)^p - acc^p) / lr * var
//   acc += g^2
//   var = (clamp(linear, -l1, l1) - linear) / (acc^p / lr + 2 * l2)      (l1 = l1_regularization_strength)
#include "api/optimizers/optimizer.h"

namespace tower::optimizers {

struct FtrlOptions {
  schedules::LearningRate learning_rate = 0.001;
  double learning_rate_power = -0.5;  // <= 0
  double initial_accumulator_value = 0.1;  // >= 0
  double l1_regularization_strength = 0.0;  // >= 0
  double l2_regularization_strength = 0.0;  // >= 0
  double l2_shrinkage_regularization_strength = 0.0;  // >= 0
  double beta = 0.0;
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
    v("learning_rate_power", learning_rate_power);
    v("initial_accumulator_value", initial_accumulator_value);
    v("l1_regularization_strength", l1_regularization_strength);
    v("l2_regularization_strength", l2_regularization_strength);
    v("l2_shrinkage_regularization_strength", l2_shrinkage_regularization_strength);
    v("beta", beta);
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

class FtrlImpl : public Optimizer {
 public:
  using Options = FtrlOptions;
  // Throws std::invalid_argument for a learning_rate_power above 0 or a negative initial_accumulator_value or regularization strength (and the base checks).
  explicit FtrlImpl(Options options);
  const Options& options() const { return options_; }

 protected:
  void build_slots(const Variable& variable) override;
  backend::OptimizerStep update_for(double lr) const override;
  Config own_config() const override { return options_to_config(options_); }

 private:
  Options options_;
};

class Ftrl : public OptimizerHolder<FtrlImpl> {
 public:
  using OptimizerHolder::OptimizerHolder;
};

}  // namespace tower::optimizers
