#include "api/optimizers/nadam.h"

#include <cmath>

#include "api/backend/cpu/loops.h"

namespace tower::optimizers {

namespace {

struct NadamStep {
  float lr, one_minus_beta_1, one_minus_beta_2, epsilon;
  float momentum_coefficient;  // u_{t+1} / (1 - u_product_t * u_{t+1})
  float gradient_coefficient;  // (1 - u_t) / (1 - u_product_t)
  float velocity_correction;   // 1 / (1 - beta_2^t)
};

void nadam_update(const NadamStep& s, float* var, const float* g, float* m, float* v, Index n) {
  backend::cpu::elementwise(n, [=](Index i) {
    const float gi = g[i];
    m[i] += (gi - m[i]) * s.one_minus_beta_1;
    v[i] += (gi * gi - v[i]) * s.one_minus_beta_2;
    const float m_hat = s.momentum_coefficient * m[i] + s.gradient_coefficient * gi;
    const float v_hat = v[i] * s.velocity_correction;
    var[i] -= (m_hat * s.lr) / (std::sqrt(v_hat) + s.epsilon);
  });
}

}  // namespace

NadamImpl::NadamImpl(Options options)
    : Optimizer("Nadam", options.learning_rate, base_options_of(options)), options_(std::move(options)) {
  check_argument(options_.beta_1 >= 0.0 && options_.beta_1 < 1.0, "beta_1", options_.beta_1, "in [0, 1)");
  check_argument(options_.beta_2 >= 0.0 && options_.beta_2 < 1.0, "beta_2", options_.beta_2, "in [0, 1)");
  check_argument(options_.epsilon >= 0.0, "epsilon", options_.epsilon, ">= 0");
}

namespace {

// Keras' momentum schedule u_t = beta_1 * (1 - 0.5 * 0.96^t), with its constants rounded to float32 as Keras
// casts them.
double momentum_at(double beta_1, std::int64_t t) {
  return detail::as_float32(beta_1) * (1.0 - 0.5 * std::pow(detail::as_float32(0.96), static_cast<double>(t)));
}

}  // namespace

double NadamImpl::u_product(std::int64_t t) const {
  const auto u = [this](std::int64_t k) { return momentum_at(options_.beta_1, k); };
  if (t < cached_t_) {
    cached_t_ = 0;
    cached_u_product_ = 1.0;
  }
  for (; cached_t_ < t; ++cached_t_) cached_u_product_ *= u(cached_t_ + 1);
  return cached_u_product_;
}

void NadamImpl::build_slots(const Variable& variable) {
  require_cpu(variable);
  add_slot(variable, "momentum");
  add_slot(variable, "velocity");
}

void NadamImpl::update_step(std::size_t index, Tensor& variable, const Tensor& gradient, double lr) {
  const std::int64_t t = iterations() + 1;
  const double u_t = momentum_at(options_.beta_1, t);
  const double u_next = momentum_at(options_.beta_1, t + 1);
  const double product = u_product(t);
  const double beta_2_power = std::pow(detail::as_float32(options_.beta_2), static_cast<double>(t));
  const NadamStep s{static_cast<float>(lr),
                    static_cast<float>(1.0 - options_.beta_1),
                    static_cast<float>(1.0 - options_.beta_2),
                    static_cast<float>(options_.epsilon),
                    static_cast<float>(u_next / (1.0 - product * u_next)),
                    static_cast<float>((1.0 - u_t) / (1.0 - product)),
                    static_cast<float>(1.0 / (1.0 - beta_2_power))};
  nadam_update(s, variable.data<float>(), gradient.data<float>(), slot(index, "momentum").data<float>(),
               slot(index, "velocity").data<float>(), variable.numel());
}

}  // namespace tower::optimizers
