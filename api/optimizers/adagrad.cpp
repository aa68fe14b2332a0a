#include "api/optimizers/adagrad.h"

#include <cmath>

namespace tower::optimizers {

AdagradImpl::AdagradImpl(Options options)
    : Optimizer("Adagrad", options.learning_rate, base_options_of(options)), options_(std::move(options)) {
  check_argument(options_.initial_accumulator_value >= 0.0, "initial_accumulator_value",
                 options_.initial_accumulator_value, ">= 0");
  check_argument(options_.epsilon >= 0.0, "epsilon", options_.epsilon, ">= 0");
}

void AdagradImpl::build_slots(const Variable& variable) {
  add_slot(variable, "accumulator", static_cast<float>(options_.initial_accumulator_value));
}

backend::OptimizerStep AdagradImpl::update_for(double lr) const {
  return backend::AdagradStep{static_cast<float>(lr), static_cast<float>(options_.epsilon)};
}

}  // namespace tower::optimizers
