#pragma once
// SGD (keras.optimizers.SGD): gradient descent with optional momentum and Nesterov momentum.
//   momentum == 0:  v -= lr * g
//   momentum > 0:   m = momentum * m - lr * g;  v += m                     (slot "momentum")
//   nesterov:       m = momentum * m - lr * g;  v += momentum * m - lr * g
#include "api/optimizers/optimizer.h"

namespace tower::optimizers {

struct SGDOptions {
  schedules::LearningRate learning_rate = 0.01;
  double momentum = 0.0;  // in [0, 1]
  bool nesterov = false;
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
    v("momentum", momentum);
    v("nesterov", nesterov);
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

class SGDImpl : public Optimizer {
 public:
  using Options = SGDOptions;
  // Throws std::invalid_argument for a momentum outside [0, 1] (and the base checks).
  explicit SGDImpl(Options options);
  const Options& options() const { return options_; }

 protected:
  void build_slots(const Variable& variable) override;
  backend::OptimizerStep update_for(double lr) const override;
  Config own_config() const override { return options_to_config(options_); }

 private:
  Options options_;
};

class SGD : public OptimizerHolder<SGDImpl> {
 public:
  using OptimizerHolder::OptimizerHolder;
};

}  // namespace tower::optimizers
