#pragma once
// Naive scalar references of the fused optimizer ops (Backend::apply_update, Backend::clip_gradients), written
// from the rules documented in backend.h in float32, one element at a time. Shared by
// optimizer_updates_test.cpp and the op table.
#include <algorithm>
#include <array>
#include <cmath>
#include <type_traits>
#include <vector>
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

inline void update(const backend::LionStep& r, float& var, float g, const std::array<float*, 3>& s) {
  float& m = *s[0];
  const float c = m * r.beta_1 + g * r.one_minus_beta_1;
  var = var - r.learning_rate * (c > 0.f ? 1.f : (c < 0.f ? -1.f : c));
  m = m * r.beta_2 + g * r.one_minus_beta_2;
}

inline void update(const backend::FtrlStep& r, float& var, float g, const std::array<float*, 3>& s) {
  float &accumulator = *s[0], &linear = *s[1];
  const float new_accumulator = accumulator + g * g;
  const float new_power = std::pow(new_accumulator, r.power);
  linear = linear + ((g + r.l2_shrinkage_twice * var) -
                     ((new_power - std::pow(accumulator, r.power)) / r.learning_rate) * var);
  const float quadratic = new_power / r.learning_rate + r.two_l2;
  var = (std::clamp(linear, -r.l1, r.l1) - linear) / quadratic;
  accumulator = new_accumulator;
}

// Weight decay, then the rule (an element-wise one: Lamb and Adafactor need the whole tensor, update_tensor).
inline void update(const backend::OptimizerUpdate& u, float& var, float g, const std::array<float*, 3>& s) {
  if (u.weight_decay != 0.f) var = var - u.weight_decay * var;
  std::visit(
      [&](const auto& rule) {
        using Rule = std::decay_t<decltype(rule)>;
        if constexpr (!std::is_same_v<Rule, backend::LambStep> && !std::is_same_v<Rule, backend::AdafactorStep>)
          update(rule, var, g, s);
      },
      u.step);
}

inline double sum_of_squares(const std::vector<float>& x) {
  double sum = 0.0;
  for (float v : x) sum += static_cast<double>(v * v);
  return sum;
}

// Lamb over a whole tensor of n elements, the norms in double.
inline void update_tensor(const backend::LambStep& r, float* var, const float* g, const std::array<float*, 3>& s,
                          Index n, Index, Index) {
  float *m = s[0], *v = s[1];
  std::vector<float> direction(static_cast<std::size_t>(n)), weights(var, var + n);
  for (Index i = 0; i < n; ++i) {
    m[i] = m[i] + (g[i] - m[i]) * r.one_minus_beta_1;
    v[i] = v[i] + (g[i] * g[i] - v[i]) * r.one_minus_beta_2;
    direction[static_cast<std::size_t>(i)] =
        (m[i] / r.bias_correction_1) / (std::sqrt(v[i] / r.bias_correction_2) + r.epsilon);
  }
  const float w_norm = std::sqrt(static_cast<float>(sum_of_squares(weights)));
  const float u_norm = std::sqrt(static_cast<float>(sum_of_squares(direction)));
  const float ratio = w_norm > 0.f && u_norm > 0.f ? w_norm / u_norm : 1.f;
  for (Index i = 0; i < n; ++i) var[i] = var[i] - ratio * r.learning_rate * direction[static_cast<std::size_t>(i)];
}

// Adafactor over a whole tensor: factored over its last two dimensions [rows, cols] where rows > 0.
inline void update_tensor(const backend::AdafactorStep& r, float* var, const float* g,
                          const std::array<float*, 3>& s, Index n, Index rows, Index cols) {
  float *row_moments = s[0], *col_moments = s[1], *v = s[2];
  const auto square = [&](Index e) { return g[e] * g[e] + r.epsilon_1; };
  if (rows > 0) {
    const Index matrices = n / (rows * cols);
    for (Index b = 0; b < matrices; ++b) {
      for (Index i = 0; i < rows; ++i) {
        double sum = 0.0;
        for (Index j = 0; j < cols; ++j) sum += square((b * rows + i) * cols + j);
        float& x = row_moments[b * rows + i];
        x = r.beta_2 * x + r.one_minus_beta_2 * static_cast<float>(sum / static_cast<double>(cols));
      }
      for (Index j = 0; j < cols; ++j) {
        double sum = 0.0;
        for (Index i = 0; i < rows; ++i) sum += square((b * rows + i) * cols + j);
        float& x = col_moments[b * cols + j];
        x = r.beta_2 * x + r.one_minus_beta_2 * static_cast<float>(sum / static_cast<double>(rows));
      }
      double sum = 0.0;
      for (Index i = 0; i < rows; ++i) sum += row_moments[b * rows + i];
      const float mean = static_cast<float>(sum / static_cast<double>(rows));
      for (Index i = 0; i < rows; ++i)
        for (Index j = 0; j < cols; ++j)
          v[(b * rows + i) * cols + j] = (row_moments[b * rows + i] / mean) * col_moments[b * cols + j];
    }
  } else {
    for (Index e = 0; e < n; ++e) v[e] = r.beta_2 * v[e] + r.one_minus_beta_2 * square(e);
  }
  std::vector<float> direction(static_cast<std::size_t>(n)), weights(var, var + n);
  for (Index e = 0; e < n; ++e) direction[static_cast<std::size_t>(e)] = g[e] / std::sqrt(v[e]);
  const float count = static_cast<float>(n);
  const float alpha =
      std::max(r.epsilon_2, std::sqrt(static_cast<float>(sum_of_squares(weights)) / count)) * r.step_size;
  const float denominator =
      std::max(1.f, std::sqrt(static_cast<float>(sum_of_squares(direction)) / count) / r.clip_threshold);
  for (Index e = 0; e < n; ++e) var[e] = var[e] - alpha * (direction[static_cast<std::size_t>(e)] / denominator);
}

// One step of u over a whole tensor of n elements (rows, cols as in backend::UpdateTensors): weight decay, then
// the rule, element by element or, for Lamb and Adafactor, over the tensor.
inline void update_tensor(const backend::OptimizerUpdate& u, float* var, const float* g,
                          const std::array<float*, 3>& s, Index n, Index rows, Index cols) {
  std::visit(
      [&](const auto& rule) {
        using Rule = std::decay_t<decltype(rule)>;
        if constexpr (std::is_same_v<Rule, backend::LambStep> || std::is_same_v<Rule, backend::AdafactorStep>) {
          if (u.weight_decay != 0.f)
            for (Index i = 0; i < n; ++i) var[i] = var[i] - u.weight_decay * var[i];
          update_tensor(rule, var, g, s, n, rows, cols);
        } else {
          for (Index i = 0; i < n; ++i) {
            std::array<float*, 3> element{};
            for (std::size_t j = 0; j < 3; ++j) element[j] = s[j] ? s[j] + i : nullptr;
            update(u, var[i], g[i], element);
          }
        }
      },
      u.step);
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
