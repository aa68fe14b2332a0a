#include "api/optimizers/lamb.h"

#include <cmath>

namespace tower::optimizers {

LambImpl::LambImpl(Options options)
    : Optimizer("Lamb", options.learning_rate, base_options_of(options)), options_(std::move(options)) {
  check_argument(options_.beta_1 >= 0.0 && options_.beta_1 < 1.0, "beta_1", options_.beta_1, "in [0, 1)");
  check_argument(options_.beta_2 >= 0.0 && options_.beta_2 < 1.0, "beta_2", options_.beta_2, "in [0, 1)");
  check_argument(options_.epsilon >= 0.0, "epsilon", options_.epsilon, ">= 0");
}

void LambImpl::build_slots(const Variable& variable) {
  add_slot(variable, "momentum");
  add_slot(variable, "velocity");
}

backend::OptimizerStep LambImpl::update_for(double lr) const {
  const double t = static_cast<double>(applied_steps() + 1);
  const double beta_1_power = std::pow(detail::as_float32(options_.beta_1), t);
  const double beta_2_power = std::pow(detail::as_float32(options_.beta_2), t);
  return backend::LambStep{static_cast<float>(lr),
                           static_cast<float>(1.0 - options_.beta_1),
                           static_cast<float>(1.0 - options_.beta_2),
                           static_cast<float>(1.0 - beta_1_power),
                           static_cast<float>(1.0 - beta_2_power),
                           static_cast<float>(options_.epsilon)};
}

}  // namespace tower::optimizers
