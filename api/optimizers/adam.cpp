#include "api/optimizers/adam.h"

#include <algorithm>
#include <cmath>

#include "api/backend/cpu/loops.h"

namespace tower::optimizers {

namespace {

struct AdamStep {
  float alpha;             // lr * sqrt(1 - beta_2^t) / (1 - beta_1^t)
  float one_minus_beta_1;
  float one_minus_beta_2;
  float epsilon;
};

}  // namespace

AdamImpl::AdamImpl(Options options) : AdamImpl("Adam", std::move(options)) {}

AdamImpl::AdamImpl(std::string type, Options options)
    : Optimizer(std::move(type), options.learning_rate, base_options_of(options)), options_(std::move(options)) {
  check_argument(options_.beta_1 >= 0.0 && options_.beta_1 < 1.0, "beta_1", options_.beta_1, "in [0, 1)");
  check_argument(options_.beta_2 >= 0.0 && options_.beta_2 < 1.0, "beta_2", options_.beta_2, "in [0, 1)");
  check_argument(options_.epsilon >= 0.0, "epsilon", options_.epsilon, ">= 0");
}

void AdamImpl::build_slots(const Variable& variable) {
  require_cpu(variable);
  add_slot(variable, "momentum");
  add_slot(variable, "velocity");
  if (options_.amsgrad) add_slot(variable, "velocity_hat");
}

void AdamImpl::update_step(std::size_t index, Tensor& variable, const Tensor& gradient, double lr) {
  const double t = static_cast<double>(iterations() + 1);
  const double beta_1_power = std::pow(detail::as_float32(options_.beta_1), t);
  const double beta_2_power = std::pow(detail::as_float32(options_.beta_2), t);
  const AdamStep s{static_cast<float>(lr * std::sqrt(1.0 - beta_2_power) / (1.0 - beta_1_power)),
                   static_cast<float>(1.0 - options_.beta_1), static_cast<float>(1.0 - options_.beta_2),
                   static_cast<float>(options_.epsilon)};
  float* var = variable.data<float>();
  const float* g = gradient.data<float>();
  float* m = slot(index, "momentum").data<float>();
  float* v = slot(index, "velocity").data<float>();
  // Two loops rather than a per-element test, so that both vectorise.
  const auto moments = [=](Index i) {
    m[i] += (g[i] - m[i]) * s.one_minus_beta_1;
    v[i] += (g[i] * g[i] - v[i]) * s.one_minus_beta_2;
  };
  const auto step = [=](Index i, float second) { var[i] -= (m[i] * s.alpha) / (std::sqrt(second) + s.epsilon); };
  if (options_.amsgrad) {
    float* v_hat = slot(index, "velocity_hat").data<float>();
    backend::cpu::elementwise(variable.numel(), [=](Index i) {
      moments(i);
      v_hat[i] = std::max(v_hat[i], v[i]);
      step(i, v_hat[i]);
    });
  } else {
    backend::cpu::elementwise(variable.numel(), [=](Index i) {
      moments(i);
      step(i, v[i]);
    });
  }
}

}  // namespace tower::optimizers
