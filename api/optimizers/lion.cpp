#include "api/optimizers/lion.h"

namespace tower::optimizers {

LionImpl::LionImpl(Options options)
    : Optimizer("Lion", options.learning_rate, base_options_of(options)), options_(std::move(options)) {
  check_argument(options_.beta_1 > 0.0 && options_.beta_1 <= 1.0, "beta_1", options_.beta_1, "in (0, 1]");
  check_argument(options_.beta_2 >= 0.0 && options_.beta_2 <= 1.0, "beta_2", options_.beta_2, "in [0, 1]");
}

void LionImpl::build_slots(const Variable& variable) { add_slot(variable, "momentum"); }

backend::OptimizerStep LionImpl::update_for(double lr) const {
  // Keras casts the betas to float32 and takes 1 - beta there.
  const float beta_1 = static_cast<float>(options_.beta_1), beta_2 = static_cast<float>(options_.beta_2);
  return backend::LionStep{static_cast<float>(lr), beta_1, 1.f - beta_1, beta_2, 1.f - beta_2};
}

}  // namespace tower::optimizers
