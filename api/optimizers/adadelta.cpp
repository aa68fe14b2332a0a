#include "api/optimizers/adadelta.h"

#include <cmath>

#include "api/backend/cpu/loops.h"

namespace tower::optimizers {

namespace {

struct AdadeltaStep {
  float lr, rho, one_minus_rho, epsilon;
};

void adadelta_update(const AdadeltaStep& s, float* var, const float* g, float* accumulated_grad,
                     float* accumulated_delta, Index n) {
  backend::cpu::elementwise(n, [=](Index i) {
    const float gi = g[i];
    accumulated_grad[i] = s.rho * accumulated_grad[i] + s.one_minus_rho * (gi * gi);
    const float delta =
        -((std::sqrt(accumulated_delta[i] + s.epsilon) * gi) / std::sqrt(accumulated_grad[i] + s.epsilon));
    accumulated_delta[i] = s.rho * accumulated_delta[i] + s.one_minus_rho * (delta * delta);
    var[i] += s.lr * delta;
  });
}

}  // namespace

AdadeltaImpl::AdadeltaImpl(Options options)
    : Optimizer("Adadelta", options.learning_rate, base_options_of(options)), options_(std::move(options)) {
  check_argument(options_.rho >= 0.0 && options_.rho <= 1.0, "rho", options_.rho, "in [0, 1]");
  check_argument(options_.epsilon > 0.0, "epsilon", options_.epsilon, "> 0");
}

void AdadeltaImpl::build_slots(const Variable& variable) {
  require_cpu(variable);
  add_slot(variable, "accumulated_grad");
  add_slot(variable, "accumulated_delta_var");
}

void AdadeltaImpl::update_step(std::size_t index, Tensor& variable, const Tensor& gradient, double lr) {
  const AdadeltaStep s{static_cast<float>(lr), static_cast<float>(options_.rho),
                       static_cast<float>(1.0 - options_.rho), static_cast<float>(options_.epsilon)};
  adadelta_update(s, variable.data<float>(), gradient.data<float>(), slot(index, "accumulated_grad").data<float>(),
                  slot(index, "accumulated_delta_var").data<float>(), variable.numel());
}

}  // namespace tower::optimizers
