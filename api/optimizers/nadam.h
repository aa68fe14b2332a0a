#pragma once
// Nadam (keras.optimizers.Nadam), Adam with Nesterov momentum and Keras' momentum schedule. With
// t = iterations + 1, u_t = beta_1 * (1 - 0.5 * 0.96^t) and u_product_t = u_1 * ... * u_t (slots "momentum" and
// "velocity"):
//   m = m + (g - m) * (1 - beta_1)
//   v = v + (g^2 - v) * (1 - beta_2)
//   m_hat = u_{t+1} * m / (1 - u_product_t * u_{t+1}) + (1 - u_t) * g / (1 - u_product_t)
//   v_hat = v / (1 - beta_2^t)
//   var -= m_hat * lr / (sqrt(v_hat) + epsilon)
// Keras keeps u_product as a variable; here it is a function of iterations(), so it needs no checkpoint slot
// and follows set_iterations().
#include "api/optimizers/optimizer.h"

namespace tower::optimizers {

struct NadamOptions {
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

class NadamImpl : public Optimizer {
 public:
  using Options = NadamOptions;
  // Throws std::invalid_argument for beta_1 or beta_2 outside [0, 1) or a negative epsilon (and the base checks).
  explicit NadamImpl(Options options);
  const Options& options() const { return options_; }
  // u_1 * ... * u_t for t steps (1 for t = 0): Keras' u_product after step t.
  double u_product(std::int64_t t) const;

 protected:
  void build_slots(const Variable& variable) override;
  backend::OptimizerStep update_for(double lr) const override;
  Config own_config() const override { return options_to_config(options_); }

 private:
  Options options_;
  // u_product(cached_t_), kept so a step costs one multiplication rather than t.
  mutable std::int64_t cached_t_ = 0;
  mutable double cached_u_product_ = 1.0;
};

class Nadam : public OptimizerHolder<NadamImpl> {
 public:
  using OptimizerHolder::OptimizerHolder;
};

}  // namespace tower::optimizers
