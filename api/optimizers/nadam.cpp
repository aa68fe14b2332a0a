#include "api/optimizers/nadam.h"

#include <cmath>

namespace tower::optimizers {

NadamImpl::NadamImpl(Options options)
    : Optimizer("Nadam", options.learning_rate, base_options_of(options)), options_(std::move(options)) {
  check_argument(options_.beta_1 >= 0.0 && options_.beta_1 < 1.0, "beta_1", options_.beta_1, "in [0, 1)");
  check_argument(options_.beta_2 >= 0.0 && options_.beta_2 < 1.0, "beta_2", options_.beta_2, "in [0, 1)");
  check_argument(options_.epsilon >= 0.0, "epsilon", options_.epsilon, ">= 0");
}

namespace {

// Keras' momentum schedule u_t = beta_1 * (1 - 0.5 * 0.96^t), with its constants rounded to float32 as Keras
// casts them.
double momentum_at(double beta_1, std::int64_t t) {
  return detail::as_float32(beta_1) * (1.0 - 0.5 * std::pow(detail::as_float32(0.96), static_cast<double>(t)));
}

}  // namespace

double NadamImpl::u_product(std::int64_t t) const {
  const auto u = [this](std::int64_t k) { return momentum_at(options_.beta_1, k); };
  if (t < cached_t_) {
    cached_t_ = 0;
    cached_u_product_ = 1.0;
  }
  for (; cached_t_ < t; ++cached_t_) cached_u_product_ *= u(cached_t_ + 1);
  return cached_u_product_;
}

void NadamImpl::build_slots(const Variable& variable) {
  add_slot(variable, "momentum");
  add_slot(variable, "velocity");
}

backend::OptimizerStep NadamImpl::update_for(double lr) const {
  const std::int64_t t = applied_steps() + 1;
  const double u_t = momentum_at(options_.beta_1, t);
  const double u_next = momentum_at(options_.beta_1, t + 1);
  const double product = u_product(t);
  const double beta_2_power = std::pow(detail::as_float32(options_.beta_2), static_cast<double>(t));
  return backend::NadamStep{static_cast<float>(lr),
                            static_cast<float>(1.0 - options_.beta_1),
                            static_cast<float>(1.0 - options_.beta_2),
                            static_cast<float>(options_.epsilon),
                            static_cast<float>(u_next / (1.0 - product * u_next)),
                            static_cast<float>((1.0 - u_t) / (1.0 - product)),
                            static_cast<float>(1.0 / (1.0 - beta_2_power))};
}

}  // namespace tower::optimizers
