#pragma once
// Adagrad (keras.optimizers.Adagrad). Slot "accumulator", starting at initial_accumulator_value:
//   accumulator += g^2
//   var -= lr * g / sqrt(accumulator + epsilon)
#include "api/optimizers/optimizer.h"

namespace tower::optimizers {

struct AdagradOptions {
  schedules::LearningRate learning_rate = 0.001;
  double initial_accumulator_value = 0.1;  // >= 0
  double epsilon = 1e-7;                   // >= 0
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
    v("initial_accumulator_value", initial_accumulator_value);
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

class AdagradImpl : public Optimizer {
 public:
  using Options = AdagradOptions;
  // Throws std::invalid_argument for a negative initial_accumulator_value or epsilon (and the base checks).
  explicit AdagradImpl(Options options);
  const Options& options() const { return options_; }

 protected:
  void build_slots(const Variable& variable) override;
  backend::OptimizerStep update_for(double lr) const override;
  Config own_config() const override { return options_to_config(options_); }

 private:
  Options options_;
};

class Adagrad : public OptimizerHolder<AdagradImpl> {
 public:
  using OptimizerHolder::OptimizerHolder;
};

}  // namespace tower::optimizers
