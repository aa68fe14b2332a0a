#pragma once
// Naive scalar references of the fused optimizer ops (Backend::apply_update, Backend::clip_gradients), written
// from the rules documented in backend.h in float32, one element at a time. Shared by
// optimizer_updates_test.cpp and the op table.
#include <algorithm>
#include <array>
#include <cmath>
#include <variant>

#include "api/backend/backend.h"

namespace tower::testing::optimizer_reference {

// One element of one step; s are the element's slots in the rule's order.
inline void update(const backend::SGDStep& r, float& var, float g, const std::array<float*, 3>& s) {
  if (r.momentum == 0.f) {
    var = var - r.learning_rate * g;
    return;
  }
  float& m = *s[0];
  m = r.momentum * m - r.learning_rate * g;
  if (r.nesterov) {
    var = var + r.momentum * m;
    var = var - r.learning_rate * g;
  } else {
    var = var + m;
  }
}

inline void update(const backend::AdamStep& r, float& var, float g, const std::array<float*, 3>& s) {
  float &m = *s[0], &v = *s[1];
  m = m + (g - m) * r.one_minus_beta_1;
  v = v + (g * g - v) * r.one_minus_beta_2;
  float second = v;
  if (r.amsgrad) {
    *s[2] = std::max(*s[2], v);
    second = *s[2];
  }
  var = var - (m * r.alpha) / (std::sqrt(second) + r.epsilon);
}

inline void update(const backend::AdamaxStep& r, float& var, float g, const std::array<float*, 3>& s) {
  float &m = *s[0], &u = *s[1];
  m = m + (g - m) * r.one_minus_beta_1;
  u = std::max(r.beta_2 * u, std::fabs(g));
  var = var - (r.learning_rate * m) / (r.bias_correction * (u + r.epsilon));
}

inline void update(const backend::NadamStep& r, float& var, float g, const std::array<float*, 3>& s) {
  float &m = *s[0], &v = *s[1];
  m = m + (g - m) * r.one_minus_beta_1;
  v = v + (g * g - v) * r.one_minus_beta_2;
  const float m_hat = r.momentum_coefficient * m + r.gradient_coefficient * g;
  var = var - (m_hat * r.learning_rate) / (std::sqrt(v * r.velocity_correction) + r.epsilon);
}

inline void update(const backend::RMSpropStep& r, float& var, float g, const std::array<float*, 3>& s) {
  float& velocity = *s[0];
  const bool momentum = r.momentum > 0.f;
  velocity = r.rho * velocity + r.one_minus_rho * (g * g);
  float denominator = velocity + r.epsilon;
  if (r.centered) {
    float& average = *s[momentum ? 2 : 1];
    average = r.rho * average + r.one_minus_rho * g;
    denominator = velocity - average * average + r.epsilon;
  }
  const float increment = (r.learning_rate * g) / std::sqrt(denominator);
  if (momentum) {
    *s[1] = r.momentum * *s[1] + increment;
    var = var - *s[1];
  } else {
    var = var - increment;
  }
}

inline void update(const backend::AdagradStep& r, float& var, float g, const std::array<float*, 3>& s) {
  float& accumulator = *s[0];
  accumulator = accumulator + g * g;
  var = var - (r.learning_rate * g) / std::sqrt(accumulator + r.epsilon);
}

inline void update(const backend::AdadeltaStep& r, float& var, float g, const std::array<float*, 3>& s) {
  float &grad = *s[0], &delta_var = *s[1];
  grad = r.rho * grad + r.one_minus_rho * (g * g);
  const float delta = -(std::sqrt(delta_var + r.epsilon) * g) / std::sqrt(grad + r.epsilon);
  delta_var = r.rho * delta_var + r.one_minus_rho * (delta * delta);
  var = var + r.learning_rate * delta;
}

// Weight decay, then the rule.
inline void update(const backend::OptimizerUpdate& u, float& var, float g, const std::array<float*, 3>& s) {
  if (u.weight_decay != 0.f) var = var - u.weight_decay * var;
  std::visit([&](const auto& rule) { update(rule, var, g, s); }, u.step);
}

// The squared L2 norm as Keras takes it: float32 squares, here summed in double.
inline double squared_norm(const float* g, Index n) {
  double s = 0.0;
  for (Index i = 0; i < n; ++i) s += static_cast<double>(g[i] * g[i]);
  return s;
}

// The factor clipnorm (per gradient) or global_clipnorm (for all) scales by, from the squared norm.
inline double clip_scale(backend::ClipKind kind, double limit, double squared_norm) {
  const double norm = std::sqrt(squared_norm);
  if (kind == backend::ClipKind::norm) return limit / std::max(norm, limit);
  return std::isfinite(norm) ? limit * std::min(1.0 / norm, 1.0 / limit) : NAN;
}

}  // namespace tower::testing::optimizer_reference
