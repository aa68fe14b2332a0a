#pragma once
// Optimizer updates and gradient clipping, one element at a time: the formulas of Backend::apply_update and
// Backend::clip_gradients that both backends run (the CPU in its vectorised loops, CUDA in grid-stride kernels).
// Each update is Keras' float32 arithmetic in Keras' operation order.
#include <cmath>
#include <limits>
#include <type_traits>
#include <variant>

#include "api/backend/backend.h"
#include "api/backend/math/hd.h"

namespace tower::backend::math {

// std::max and std::min exactly (the first argument when neither is less), callable on the device.
TOWER_HD float larger(float a, float b) { return a < b ? b : a; }
TOWER_HD double larger(double a, double b) { return a < b ? b : a; }
TOWER_HD double smaller(double a, double b) { return b < a ? b : a; }

// ---- update functors: f(i) updates element i of the variable and its slots ------------------------------------
enum class SGDKind { plain, momentum, nesterov };

// Every update functor holds its rule's step struct as `s`, the scalars ScalarsFrom replaces when they are read
// from memory.
template <SGDKind kind>
struct SGDUpdate {
  SGDStep s;
  float* var;
  const float* g;
  float* m;
  TOWER_HD void operator()(Index i) const {
    const float neg_lr = -s.learning_rate, momentum = s.momentum;
    if constexpr (kind == SGDKind::plain) {
      var[i] = neg_lr * g[i] + var[i];
    } else {
      m[i] = neg_lr * g[i] + momentum * m[i];
      if constexpr (kind == SGDKind::nesterov) {
        var[i] = momentum * m[i] + var[i];
        var[i] = neg_lr * g[i] + var[i];
      } else {
        var[i] = m[i] + var[i];
      }
    }
  }
};

template <bool amsgrad>
struct AdamUpdate {
  AdamStep s;
  float* var;
  const float* g;
  float* m;
  float* v;
  float* v_hat;
  TOWER_HD void operator()(Index i) const {
    m[i] += (g[i] - m[i]) * s.one_minus_beta_1;
    v[i] += (g[i] * g[i] - v[i]) * s.one_minus_beta_2;
    float second = v[i];
    if constexpr (amsgrad) {
      v_hat[i] = larger(v_hat[i], v[i]);
      second = v_hat[i];
    }
    var[i] -= (m[i] * s.alpha) / (std::sqrt(second) + s.epsilon);
  }
};

struct AdamaxUpdate {
  AdamaxStep s;
  float* var;
  const float* g;
  float* m;
  float* u;
  TOWER_HD void operator()(Index i) const {
    const float gi = g[i];
    m[i] += (gi - m[i]) * s.one_minus_beta_1;
    u[i] = larger(s.beta_2 * u[i], std::fabs(gi));
    var[i] -= (s.learning_rate * m[i]) / (s.bias_correction * (u[i] + s.epsilon));
  }
};

struct NadamUpdate {
  NadamStep s;
  float* var;
  const float* g;
  float* m;
  float* v;
  TOWER_HD void operator()(Index i) const {
    const float gi = g[i];
    m[i] += (gi - m[i]) * s.one_minus_beta_1;
    v[i] += (gi * gi - v[i]) * s.one_minus_beta_2;
    const float m_hat = s.momentum_coefficient * m[i] + s.gradient_coefficient * gi;
    const float v_hat = v[i] * s.velocity_correction;
    var[i] -= (m_hat * s.learning_rate) / (std::sqrt(v_hat) + s.epsilon);
  }
};

// Compiled per combination, so that the element loop holds no tests and vectorises.
template <bool centered, bool with_momentum>
struct RMSpropUpdate {
  RMSpropStep s;
  float* var;
  const float* g;
  float* velocity;
  float* mom;      // with_momentum only
  float* average;  // centered only
  TOWER_HD void operator()(Index i) const {
    const float gi = g[i];
    velocity[i] = s.rho * velocity[i] + s.one_minus_rho * (gi * gi);
    float denominator;
    if constexpr (centered) {
      average[i] = s.rho * average[i] + s.one_minus_rho * gi;
      denominator = velocity[i] - average[i] * average[i] + s.epsilon;
    } else {
      denominator = velocity[i] + s.epsilon;
    }
    const float increment = (s.learning_rate * gi) / std::sqrt(denominator);
    if constexpr (with_momentum) {
      mom[i] = s.momentum * mom[i] + increment;
      var[i] -= mom[i];
    } else {
      var[i] -= increment;
    }
  }
};

struct AdagradUpdate {
  AdagradStep s;
  float* var;
  const float* g;
  float* accumulator;
  TOWER_HD void operator()(Index i) const {
    const float gi = g[i];
    accumulator[i] += gi * gi;
    var[i] -= (s.learning_rate * gi) / std::sqrt(accumulator[i] + s.epsilon);
  }
};

struct AdadeltaUpdate {
  AdadeltaStep s;
  float* var;
  const float* g;
  float* accumulated_grad;
  float* accumulated_delta;
  TOWER_HD void operator()(Index i) const {
    const float gi = g[i];
    accumulated_grad[i] = s.rho * accumulated_grad[i] + s.one_minus_rho * (gi * gi);
    const float delta =
        -((std::sqrt(accumulated_delta[i] + s.epsilon) * gi) / std::sqrt(accumulated_grad[i] + s.epsilon));
    accumulated_delta[i] = s.rho * accumulated_delta[i] + s.one_minus_rho * (delta * delta);
    var[i] += s.learning_rate * delta;
  }
};

// Decoupled weight decay, then `update` on the same element.
template <class Update>
struct DecayThen {
  float decay;
  float* var;
  Update update;
  TOWER_HD void operator()(Index i) const {
    var[i] -= decay * var[i];
    update(i);
  }
};

// ---- the functor of a step ---------------------------------------------------------------------------------------
// Each calls run(f) with the functor of one rule over the tensors t.
template <class Run>
void with_rule(const SGDStep& s, const UpdateTensors& t, Run&& run) {
  if (s.momentum == 0.f)
    run(SGDUpdate<SGDKind::plain>{s, t.variable, t.gradient, nullptr});
  else if (s.nesterov)
    run(SGDUpdate<SGDKind::nesterov>{s, t.variable, t.gradient, t.slots[0]});
  else
    run(SGDUpdate<SGDKind::momentum>{s, t.variable, t.gradient, t.slots[0]});
}

template <class Run>
void with_rule(const AdamStep& s, const UpdateTensors& t, Run&& run) {
  if (s.amsgrad)
    run(AdamUpdate<true>{s, t.variable, t.gradient, t.slots[0], t.slots[1], t.slots[2]});
  else
    run(AdamUpdate<false>{s, t.variable, t.gradient, t.slots[0], t.slots[1], nullptr});
}

template <class Run>
void with_rule(const AdamaxStep& s, const UpdateTensors& t, Run&& run) {
  run(AdamaxUpdate{s, t.variable, t.gradient, t.slots[0], t.slots[1]});
}

template <class Run>
void with_rule(const NadamStep& s, const UpdateTensors& t, Run&& run) {
  run(NadamUpdate{s, t.variable, t.gradient, t.slots[0], t.slots[1]});
}

template <class Run>
void with_rule(const RMSpropStep& s, const UpdateTensors& t, Run&& run) {
  float* const velocity = t.slots[0];
  const bool with_momentum = s.momentum > 0.f;
  float* const mom = with_momentum ? t.slots[1] : nullptr;
  float* const average = s.centered ? t.slots[with_momentum ? 2 : 1] : nullptr;
  if (s.centered && with_momentum)
    run(RMSpropUpdate<true, true>{s, t.variable, t.gradient, velocity, mom, average});
  else if (s.centered)
    run(RMSpropUpdate<true, false>{s, t.variable, t.gradient, velocity, mom, average});
  else if (with_momentum)
    run(RMSpropUpdate<false, true>{s, t.variable, t.gradient, velocity, mom, average});
  else
    run(RMSpropUpdate<false, false>{s, t.variable, t.gradient, velocity, mom, average});
}

template <class Run>
void with_rule(const AdagradStep& s, const UpdateTensors& t, Run&& run) {
  run(AdagradUpdate{s, t.variable, t.gradient, t.slots[0]});
}

template <class Run>
void with_rule(const AdadeltaStep& s, const UpdateTensors& t, Run&& run) {
  run(AdadeltaUpdate{s, t.variable, t.gradient, t.slots[0], t.slots[1]});
}

// ---- scalars read from memory when the update runs (OptimizerUpdate::scalars) ------------------------------------
template <class F, class Step>
TOWER_HD void load_scalars(F& f, const StepScalars<Step>& scalars) {
  f.s = scalars.step;
}
template <class Update, class Step>
TOWER_HD void load_scalars(DecayThen<Update>& f, const StepScalars<Step>& scalars) {
  f.decay = scalars.weight_decay;
  load_scalars(f.update, scalars);
}

// f(i) with f's scalars replaced by those in memory at `scalars`, read as the element is computed.
template <class F, class Step>
struct ScalarsFrom {
  const StepScalars<Step>* scalars;
  F f;
  TOWER_HD void operator()(Index i) const {
    F loaded = f;
    load_scalars(loaded, *scalars);
    loaded(i);
  }
};

// Calls run(f) with the functor that applies `update` to the tensors t, weight decay included: f(i) updates
// element i, for i in [0, t.n). With update.scalars, f reads the scalars from there (ScalarsFrom); the code is
// still chosen by update's own values.
template <class Run>
void with_update(const OptimizerUpdate& update, const UpdateTensors& t, Run&& run) {
  std::visit(
      [&](const auto& step) {
        using Step = std::decay_t<decltype(step)>;
        const auto run_reading = [&](const auto& f) {
          if (update.scalars)
            run(ScalarsFrom<std::decay_t<decltype(f)>, Step>{static_cast<const StepScalars<Step>*>(update.scalars), f});
          else
            run(f);
        };
        with_rule(step, t, [&](const auto& f) {
          if (update.weight_decay != 0.f)
            run_reading(DecayThen<std::decay_t<decltype(f)>>{update.weight_decay, t.variable, f});
          else
            run_reading(f);
        });
      },
      update.step);
}

// ---- clipping functors -------------------------------------------------------------------------------------------
// The square of an element, summed in double: the squared L2 norm of a gradient.
struct SquareOf {
  TOWER_HD double operator()(float x) const { return static_cast<double>(x * x); }
};

// f(k) turns the squared norm values[k] of gradient k into its clipnorm scale, limit / max(||g||, limit).
struct NormClipScale {
  double limit;
  float* values;
  TOWER_HD void operator()(Index k) const {
    const double norm = std::sqrt(static_cast<double>(values[k]));
    values[k] = static_cast<float>(limit / larger(norm, limit));
  }
};

// f(0) writes into *scale the global_clipnorm scale of `count` gradients whose squared norms are norms[0, count).
struct GlobalNormClipScale {
  double limit;
  const float* norms;
  Index count;
  float* scale;
  TOWER_HD void operator()(Index) const {
    double total = 0.0;
    for (Index k = 0; k < count; ++k) total += static_cast<double>(norms[k]);
    const double norm = std::sqrt(total);
    *scale = std::isfinite(norm) ? static_cast<float>(limit * smaller(1.0 / norm, 1.0 / limit))
                                 : std::numeric_limits<float>::quiet_NaN();
  }
};

// clipped = *scale * g, the scale read from device memory when the element is computed.
struct ScaledCopy {
  const float* scale;
  const float* g;
  float* clipped;
  TOWER_HD void operator()(Index i) const { clipped[i] = *scale * g[i]; }
};

// clipped = g clamped to [-limit, limit].
struct ClampedCopy {
  float limit;
  const float* g;
  float* clipped;
  TOWER_HD void operator()(Index i) const {
    const float x = g[i];
    clipped[i] = x < -limit ? -limit : (x > limit ? limit : x);
  }
};

}  // namespace tower::backend::math
