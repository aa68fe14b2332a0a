#include "api/optimizers/rmsprop.h"

#include <cmath>

namespace tower::optimizers {

RMSpropImpl::RMSpropImpl(Options options)
    : Optimizer("RMSprop", options.learning_rate, base_options_of(options)), options_(std::move(options)) {
  check_argument(options_.rho >= 0.0 && options_.rho <= 1.0, "rho", options_.rho, "in [0, 1]");
  check_argument(options_.momentum >= 0.0 && options_.momentum <= 1.0, "momentum", options_.momentum, "in [0, 1]");
  check_argument(options_.epsilon >= 0.0, "epsilon", options_.epsilon, ">= 0");
}

void RMSpropImpl::build_slots(const Variable& variable) {
  add_slot(variable, "velocity");
  if (options_.momentum > 0.0) add_slot(variable, "momentum");
  if (options_.centered) add_slot(variable, "average_gradient");
}

backend::OptimizerStep RMSpropImpl::update_for(double lr) const {
  return backend::RMSpropStep{static_cast<float>(lr), static_cast<float>(options_.rho),
                              static_cast<float>(1.0 - options_.rho), static_cast<float>(options_.momentum),
                              static_cast<float>(options_.epsilon), options_.centered};
}

}  // namespace tower::optimizers
