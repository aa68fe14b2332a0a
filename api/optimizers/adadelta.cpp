#include "api/optimizers/adadelta.h"

#include <cmath>

namespace tower::optimizers {

AdadeltaImpl::AdadeltaImpl(Options options)
    : Optimizer("Adadelta", options.learning_rate, base_options_of(options)), options_(std::move(options)) {
  check_argument(options_.rho >= 0.0 && options_.rho <= 1.0, "rho", options_.rho, "in [0, 1]");
  check_argument(options_.epsilon > 0.0, "epsilon", options_.epsilon, "> 0");
}

void AdadeltaImpl::build_slots(const Variable& variable) {
  add_slot(variable, "accumulated_grad");
  add_slot(variable, "accumulated_delta_var");
}

backend::OptimizerStep AdadeltaImpl::update_for(double lr) const {
  return backend::AdadeltaStep{static_cast<float>(lr), static_cast<float>(options_.rho),
                               static_cast<float>(1.0 - options_.rho), static_cast<float>(options_.epsilon)};
}

}  // namespace tower::optimizers
