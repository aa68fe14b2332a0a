#pragma once
// AdamW (keras.optimizers.AdamW): Adam with decoupled weight decay, v -= v * weight_decay * lr before each
// update (the base optimizer's weight decay, which AdamW requires). Same slots and formulas as Adam.
#include "api/optimizers/adam.h"

namespace tower::optimizers {

struct AdamWOptions {
  schedules::LearningRate learning_rate = 0.001;
  double weight_decay = 0.004;  // >= 0
  double beta_1 = 0.9;          // in [0, 1)
  double beta_2 = 0.999;        // in [0, 1)
  double epsilon = 1e-7;        // >= 0
  bool amsgrad = false;
  std::optional<double> clipnorm;
  std::optional<double> clipvalue;
  std::optional<double> global_clipnorm;
  bool use_ema = false;
  double ema_momentum = 0.99;
  std::optional<std::int64_t> ema_overwrite_frequency;
  std::optional<std::int64_t> gradient_accumulation_steps;
  template <class V> void visit(V&& v) {
    v("learning_rate", learning_rate);
    v("weight_decay", weight_decay);
    v("beta_1", beta_1);
    v("beta_2", beta_2);
    v("epsilon", epsilon);
    v("amsgrad", amsgrad);
    v("clipnorm", clipnorm);
    v("clipvalue", clipvalue);
    v("global_clipnorm", global_clipnorm);
    v("use_ema", use_ema);
    v("ema_momentum", ema_momentum);
    v("ema_overwrite_frequency", ema_overwrite_frequency);
    v("gradient_accumulation_steps", gradient_accumulation_steps);
  }
};

class AdamWImpl : public AdamImpl {
 public:
  using Options = AdamWOptions;
  // The checks of Adam.
  explicit AdamWImpl(Options options);
  const Options& options() const { return options_; }

 protected:
  Config own_config() const override { return options_to_config(options_); }

 private:
  Options options_;
};

class AdamW : public OptimizerHolder<AdamWImpl> {
 public:
  using OptimizerHolder::OptimizerHolder;
};

}  // namespace tower::optimizers
