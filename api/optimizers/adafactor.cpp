#include "api/optimizers/adafactor.h"

#include <algorithm>
#include <cmath>

namespace tower::optimizers {

AdafactorImpl::AdafactorImpl(Options options)
    : Optimizer("Adafactor", options.learning_rate, base_options_of(options)), options_(std::move(options)) {
  check_argument(options_.beta_2_decay <= 0.0, "beta_2_decay", options_.beta_2_decay, "<= 0");
  check_argument(options_.epsilon_1 >= 0.0, "epsilon_1", options_.epsilon_1, ">= 0");
  check_argument(options_.epsilon_2 >= 0.0, "epsilon_2", options_.epsilon_2, ">= 0");
  check_argument(options_.clip_threshold > 0.0, "clip_threshold", options_.clip_threshold, "> 0");
}

void AdafactorImpl::build_slots(const Variable& variable) {
  const Shape& shape = variable.value.shape();
  const auto rank = shape.rank();
  if (rank < 2) {
    add_slot(variable, "r", 0.f, Shape{});
    add_slot(variable, "c", 0.f, Shape{});
  } else {
    std::vector<Index> r(shape.dims().begin(), shape.dims().end() - 1);
    std::vector<Index> c(shape.dims().begin(), shape.dims().end() - 2);
    c.push_back(shape.dims().back());
    add_slot(variable, "r", 0.f, Shape(r));
    add_slot(variable, "c", 0.f, Shape(c));
  }
  add_slot(variable, "velocity");
}

backend::OptimizerStep AdafactorImpl::update_for(double lr) const {
  // Keras computes these in float32 from the float32 step count.
  const float t = static_cast<float>(applied_steps() + 1);
  const float one_minus_beta_2 = std::pow(t, static_cast<float>(options_.beta_2_decay));
  const float beta_2 = 1.f - one_minus_beta_2;
  const float step_size = std::min(static_cast<float>(lr), 1.f / std::sqrt(t));
  return backend::AdafactorStep{beta_2,
                                1.f - beta_2,
                                static_cast<float>(options_.epsilon_1),
                                static_cast<float>(options_.epsilon_2),
                                step_size,
                                static_cast<float>(options_.clip_threshold)};
}

}  // namespace tower::optimizers
