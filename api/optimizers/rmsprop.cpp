#include "api/optimizers/rmsprop.h"

#include <cmath>

#include "api/backend/cpu/loops.h"

namespace tower::optimizers {

namespace {

struct RMSpropStep {
  float lr, rho, one_minus_rho, momentum, epsilon;
};

// The whole RMSprop update of one variable; `average` is used only when centered, `mom` only with momentum.
// Compiled per combination, so that the loop holds no per-element tests and vectorises.
template <bool centered, bool with_momentum>
void rmsprop_update(const RMSpropStep& s, float* var, const float* g, float* velocity, float* average, float* mom,
                    Index n) {
  backend::cpu::elementwise(n, [=](Index i) {
    const float gi = g[i];
    velocity[i] = s.rho * velocity[i] + s.one_minus_rho * (gi * gi);
    float denominator;
    if constexpr (centered) {
      average[i] = s.rho * average[i] + s.one_minus_rho * gi;
      denominator = velocity[i] - average[i] * average[i] + s.epsilon;
    } else {
      denominator = velocity[i] + s.epsilon;
    }
    const float increment = (s.lr * gi) / std::sqrt(denominator);
    if constexpr (with_momentum) {
      mom[i] = s.momentum * mom[i] + increment;
      var[i] -= mom[i];
    } else {
      var[i] -= increment;
    }
  });
}

}  // namespace

RMSpropImpl::RMSpropImpl(Options options)
    : Optimizer("RMSprop", options.learning_rate, base_options_of(options)), options_(std::move(options)) {
  check_argument(options_.rho >= 0.0 && options_.rho <= 1.0, "rho", options_.rho, "in [0, 1]");
  check_argument(options_.momentum >= 0.0 && options_.momentum <= 1.0, "momentum", options_.momentum, "in [0, 1]");
  check_argument(options_.epsilon >= 0.0, "epsilon", options_.epsilon, ">= 0");
}

void RMSpropImpl::build_slots(const Variable& variable) {
  require_cpu(variable);
  add_slot(variable, "velocity");
  if (options_.momentum > 0.0) add_slot(variable, "momentum");
  if (options_.centered) add_slot(variable, "average_gradient");
}

void RMSpropImpl::update_step(std::size_t index, Tensor& variable, const Tensor& gradient, double lr) {
  const RMSpropStep s{static_cast<float>(lr), static_cast<float>(options_.rho),
                      static_cast<float>(1.0 - options_.rho), static_cast<float>(options_.momentum),
                      static_cast<float>(options_.epsilon)};
  float* average = options_.centered ? slot(index, "average_gradient").data<float>() : nullptr;
  float* mom = options_.momentum > 0.0 ? slot(index, "momentum").data<float>() : nullptr;
  float* var = variable.data<float>();
  const float* g = gradient.data<float>();
  float* velocity = slot(index, "velocity").data<float>();
  const Index n = variable.numel();
  if (average && mom)
    rmsprop_update<true, true>(s, var, g, velocity, average, mom, n);
  else if (average)
    rmsprop_update<true, false>(s, var, g, velocity, average, mom, n);
  else if (mom)
    rmsprop_update<false, true>(s, var, g, velocity, average, mom, n);
  else
    rmsprop_update<false, false>(s, var, g, velocity, average, mom, n);
}

}  // namespace tower::optimizers
