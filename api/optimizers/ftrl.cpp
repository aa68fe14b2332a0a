#include "api/optimizers/ftrl.h"

namespace tower::optimizers {

FtrlImpl::FtrlImpl(Options options)
    : Optimizer("Ftrl", options.learning_rate, base_options_of(options)), options_(std::move(options)) {
  check_argument(options_.learning_rate_power <= 0.0, "learning_rate_power", options_.learning_rate_power, "<= 0");
  check_argument(options_.initial_accumulator_value >= 0.0, "initial_accumulator_value",
                 options_.initial_accumulator_value, ">= 0");
  check_argument(options_.l1_regularization_strength >= 0.0, "l1_regularization_strength",
                 options_.l1_regularization_strength, ">= 0");
  check_argument(options_.l2_regularization_strength >= 0.0, "l2_regularization_strength",
                 options_.l2_regularization_strength, ">= 0");
  check_argument(options_.l2_shrinkage_regularization_strength >= 0.0, "l2_shrinkage_regularization_strength",
                 options_.l2_shrinkage_regularization_strength, ">= 0");
}

void FtrlImpl::build_slots(const Variable& variable) {
  add_slot(variable, "accumulator", static_cast<float>(options_.initial_accumulator_value));
  add_slot(variable, "linear");
}

backend::OptimizerStep FtrlImpl::update_for(double lr) const {
  // Keras adds beta / (2 lr) to l2 in float32, with lr a float32 tensor.
  const float lr_f = static_cast<float>(lr);
  const float l2 = static_cast<float>(options_.l2_regularization_strength) +
                   static_cast<float>(options_.beta) / (2.f * lr_f);
  return backend::FtrlStep{lr_f, static_cast<float>(-options_.learning_rate_power),
                           static_cast<float>(options_.l1_regularization_strength), 2.f * l2,
                           static_cast<float>(2.0 * options_.l2_shrinkage_regularization_strength)};
}

}  // namespace tower::optimizers
