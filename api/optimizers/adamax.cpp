#include "api/optimizers/adamax.h"

#include <algorithm>
#include <cmath>

#include "api/backend/cpu/loops.h"

namespace tower::optimizers {

namespace {

struct AdamaxStep {
  float lr, one_minus_beta_1, beta_2, bias_correction, epsilon;  // bias_correction = 1 - beta_1^t
};

void adamax_update(const AdamaxStep& s, float* var, const float* g, float* m, float* u, Index n) {
  backend::cpu::elementwise(n, [=](Index i) {
    const float gi = g[i];
    m[i] += (gi - m[i]) * s.one_minus_beta_1;
    u[i] = std::max(s.beta_2 * u[i], std::fabs(gi));
    var[i] -= (s.lr * m[i]) / (s.bias_correction * (u[i] + s.epsilon));
  });
}

}  // namespace

AdamaxImpl::AdamaxImpl(Options options)
    : Optimizer("Adamax", options.learning_rate, base_options_of(options)), options_(std::move(options)) {
  check_argument(options_.beta_1 >= 0.0 && options_.beta_1 < 1.0, "beta_1", options_.beta_1, "in [0, 1)");
  check_argument(options_.beta_2 >= 0.0 && options_.beta_2 < 1.0, "beta_2", options_.beta_2, "in [0, 1)");
  check_argument(options_.epsilon >= 0.0, "epsilon", options_.epsilon, ">= 0");
}

void AdamaxImpl::build_slots(const Variable& variable) {
  require_cpu(variable);
  add_slot(variable, "momentum");
  add_slot(variable, "norm");
}

void AdamaxImpl::update_step(std::size_t index, Tensor& variable, const Tensor& gradient, double lr) {
  const double t = static_cast<double>(iterations() + 1);
  const double beta_1_power = std::pow(detail::as_float32(options_.beta_1), t);
  const AdamaxStep s{static_cast<float>(lr), static_cast<float>(1.0 - options_.beta_1),
                     static_cast<float>(options_.beta_2), static_cast<float>(1.0 - beta_1_power),
                     static_cast<float>(options_.epsilon)};
  adamax_update(s, variable.data<float>(), gradient.data<float>(), slot(index, "momentum").data<float>(),
                slot(index, "norm").data<float>(), variable.numel());
}

}  // namespace tower::optimizers
