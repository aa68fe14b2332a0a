#include "api/optimizers/adagrad.h"

#include <cmath>

#include "api/backend/cpu/loops.h"

namespace tower::optimizers {

namespace {

void adagrad_update(float lr, float epsilon, float* var, const float* g, float* accumulator, Index n) {
  backend::cpu::elementwise(n, [=](Index i) {
    const float gi = g[i];
    accumulator[i] += gi * gi;
    var[i] -= (lr * gi) / std::sqrt(accumulator[i] + epsilon);
  });
}

}  // namespace

AdagradImpl::AdagradImpl(Options options)
    : Optimizer("Adagrad", options.learning_rate, base_options_of(options)), options_(std::move(options)) {
  check_argument(options_.initial_accumulator_value >= 0.0, "initial_accumulator_value",
                 options_.initial_accumulator_value, ">= 0");
  check_argument(options_.epsilon >= 0.0, "epsilon", options_.epsilon, ">= 0");
}

void AdagradImpl::build_slots(const Variable& variable) {
  require_cpu(variable);
  add_slot(variable, "accumulator", static_cast<float>(options_.initial_accumulator_value));
}

void AdagradImpl::update_step(std::size_t index, Tensor& variable, const Tensor& gradient, double lr) {
  adagrad_update(static_cast<float>(lr), static_cast<float>(options_.epsilon), variable.data<float>(),
                 gradient.data<float>(), slot(index, "accumulator").data<float>(), variable.numel());
}

}  // namespace tower::optimizers
