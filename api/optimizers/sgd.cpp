#include "api/optimizers/sgd.h"

namespace tower::optimizers {

SGDImpl::SGDImpl(Options options)
    : Optimizer("SGD", options.learning_rate, base_options_of(options)), options_(std::move(options)) {
  check_argument(options_.momentum >= 0.0 && options_.momentum <= 1.0, "momentum", options_.momentum,
                 "in [0, 1]");
}

void SGDImpl::build_slots(const Variable& variable) {
  if (options_.momentum != 0.0) add_slot(variable, "momentum");
}

backend::OptimizerStep SGDImpl::update_for(double lr) const {
  return backend::SGDStep{static_cast<float>(lr), static_cast<float>(options_.momentum), options_.nesterov};
}

}  // namespace tower::optimizers
