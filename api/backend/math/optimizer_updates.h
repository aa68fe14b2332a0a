#pragma once
// Optimizer updates and gradient clipping, one element at a time: the formulas of Backend::apply_update and
// Backend::clip_gradients that both backends run (the CPU in its vectorised loops, CUDA in grid-stride kernels).
// Each update is Keras' float32 arithmetic in Keras' operation order.
#include <cmath>
#include <cstdint>
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

struct LionUpdate {
  LionStep s;
  float* var;
  const float* g;
  float* m;
  TOWER_HD void operator()(Index i) const {
    const float gi = g[i];
    const float c = m[i] * s.beta_1 + gi * s.one_minus_beta_1;
    // Keras' sign: 0 stays 0 and NaN stays NaN.
    const float sign = c > 0.f ? 1.f : (c < 0.f ? -1.f : c);
    var[i] -= s.learning_rate * sign;
    m[i] = m[i] * s.beta_2 + gi * s.one_minus_beta_2;
  }
};

struct FtrlUpdate {
  FtrlStep s;
  float* var;
  const float* g;
  float* accumulator;
  float* linear;
  TOWER_HD void operator()(Index i) const {
    const float gi = g[i], v = var[i], accumulated = accumulator[i];
    const float gradient = gi + s.l2_shrinkage_twice * v;
    const float new_accumulated = accumulated + gi * gi;
    const float new_power = ::powf(new_accumulated, s.power);
    linear[i] += gradient - ((new_power - ::powf(accumulated, s.power)) / s.learning_rate) * v;
    const float quadratic = new_power / s.learning_rate + s.two_l2;
    const float l = linear[i];
    const float clipped = l < -s.l1 ? -s.l1 : (l > s.l1 ? s.l1 : l);
    var[i] = (clipped - l) / quadratic;
    accumulator[i] = new_accumulated;
  }
};

// ---- the reducing rules' passes (Lamb, Adafactor; run_reducing below runs them in order) ------------------------
// Lamb's first pass: the moments.
struct LambMoments {
  LambStep s;
  const float* g;
  float* m;
  float* v;
  TOWER_HD void operator()(Index i) const {
    const float gi = g[i];
    m[i] += (gi - m[i]) * s.one_minus_beta_1;
    v[i] += (gi * gi - v[i]) * s.one_minus_beta_2;
  }
};

// Lamb's update direction of an element from its moments.
TOWER_HD float lamb_direction(const LambStep& s, float m, float v) {
  return (m / s.bias_correction_1) / (std::sqrt(v / s.bias_correction_2) + s.epsilon);
}

// The square of element i of the variable, or (direction) of Lamb's update direction, as a term of a sum.
struct LambSquare {
  LambStep s;
  const float* var;
  const float* m;
  const float* v;
  bool direction;
  TOWER_HD double operator()(Index i) const {
    const float x = direction ? lamb_direction(s, m[i], v[i]) : var[i];
    return static_cast<double>(x * x);
  }
};

// Lamb's last pass: var -= ratio * lr * direction, the ratio from the sums of squares in sums[0, 2).
struct LambApply {
  LambStep s;
  float* var;
  const float* m;
  const float* v;
  const float* sums;
  TOWER_HD void operator()(Index i) const {
    const float w_norm = std::sqrt(sums[0]), u_norm = std::sqrt(sums[1]);
    const float ratio = w_norm > 0.f ? (u_norm > 0.f ? w_norm / u_norm : 1.f) : 1.f;
    var[i] -= ratio * s.learning_rate * lamb_direction(s, m[i], v[i]);
  }
};

TOWER_HD float adafactor_square(const AdafactorStep& s, float g) { return g * g + s.epsilon_1; }

// f(k), k = b * rows + i: r[k] from the mean of row i of matrix b of the gradient.
struct AdafactorRows {
  AdafactorStep s;
  const float* g;
  float* r;
  Index rows, cols;
  TOWER_HD void operator()(Index k) const {
    const float* row = g + k * cols;
    double sum = 0.0;
    for (Index j = 0; j < cols; ++j) sum += static_cast<double>(adafactor_square(s, row[j]));
    r[k] = s.beta_2 * r[k] + s.one_minus_beta_2 * static_cast<float>(sum / static_cast<double>(cols));
  }
};

// f(k), k = b * cols + j: c[k] from the mean of column j of matrix b of the gradient.
struct AdafactorCols {
  AdafactorStep s;
  const float* g;
  float* c;
  Index rows, cols;
  TOWER_HD void operator()(Index k) const {
    const float* column = g + (k / cols) * rows * cols + k % cols;
    double sum = 0.0;
    for (Index i = 0; i < rows; ++i) sum += static_cast<double>(adafactor_square(s, column[i * cols]));
    c[k] = s.beta_2 * c[k] + s.one_minus_beta_2 * static_cast<float>(sum / static_cast<double>(rows));
  }
};

// f(b): means[b] = the mean of r over matrix b.
struct AdafactorRowMeans {
  AdafactorStep s;
  const float* r;
  float* means;
  Index rows;
  TOWER_HD void operator()(Index b) const {
    double sum = 0.0;
    for (Index i = 0; i < rows; ++i) sum += static_cast<double>(r[b * rows + i]);
    means[b] = static_cast<float>(sum / static_cast<double>(rows));
  }
};

// The velocity of element e: factored (rows > 0) from r, its means and c, else the moving average of the squares.
struct AdafactorVelocity {
  AdafactorStep s;
  const float* g;
  const float* r;
  const float* c;
  const float* means;
  float* v;
  Index rows, cols;
  TOWER_HD void operator()(Index e) const {
    if (rows > 0) {
      const Index row = e / cols;
      v[e] = (r[row] / means[row / rows]) * c[(row / rows) * cols + e % cols];
    } else {
      v[e] = s.beta_2 * v[e] + s.one_minus_beta_2 * adafactor_square(s, g[e]);
    }
  }
};

// The square of element i of the variable, or (direction) of g / sqrt(velocity), as a term of a sum.
struct AdafactorSquare {
  AdafactorStep s;
  const float* var;
  const float* g;
  const float* v;
  bool direction;
  TOWER_HD double operator()(Index i) const {
    const float x = direction ? g[i] / std::sqrt(v[i]) : var[i];
    return static_cast<double>(x * x);
  }
};

// Adafactor's last pass: var -= alpha * u / max(1, rms(u) / clip_threshold), alpha = max(epsilon_2, rms(var)) *
// step_size, from the sums of squares in sums[0, 2) over n elements.
struct AdafactorApply {
  AdafactorStep s;
  float* var;
  const float* g;
  const float* v;
  const float* sums;
  Index n;
  TOWER_HD void operator()(Index i) const {
    const float count = static_cast<float>(n);
    const float alpha = larger(s.epsilon_2, std::sqrt(sums[0] / count)) * s.step_size;
    const float denominator = larger(1.f, std::sqrt(sums[1] / count) / s.clip_threshold);
    var[i] -= alpha * ((g[i] / std::sqrt(v[i])) / denominator);
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

// `update` only on an applying step (gradient accumulation).
template <class Update>
struct Gated {
  std::int32_t apply;
  Update update;
  TOWER_HD void operator()(Index i) const {
    if (apply) update(i);
  }
};

// The base options after a rule's update of an element: on an applying step the update, then the accumulated
// gradient zeroed (when accumulating); on every step the moving average (when averaging) and, on an overwriting
// step, the variable replaced by it.
template <class Update>
struct Controlled {
  std::int32_t apply;
  float ema_momentum;
  std::int32_t overwrite;
  float* var;
  float* accumulator;
  float* average;
  Update update;
  TOWER_HD void operator()(Index i) const {
    if (apply) {
      update(i);
      if (accumulator) accumulator[i] = 0.f;
    }
    if (average) {
      average[i] = ema_momentum * average[i] + (1.f - ema_momentum) * var[i];
      if (overwrite) var[i] = average[i];
    }
  }
};

// Gradient accumulation: accumulator = gradient + accumulator, divided by steps on an applying step.
struct AccumulateGradient {
  std::int32_t steps;
  std::int32_t apply;
  const float* g;
  float* accumulator;
  TOWER_HD void operator()(Index i) const {
    const float sum = g[i] + accumulator[i];
    accumulator[i] = apply ? sum / static_cast<float>(steps) : sum;
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

template <class Run>
void with_rule(const LionStep& s, const UpdateTensors& t, Run&& run) {
  run(LionUpdate{s, t.variable, t.gradient, t.slots[0]});
}

template <class Run>
void with_rule(const FtrlStep& s, const UpdateTensors& t, Run&& run) {
  run(FtrlUpdate{s, t.variable, t.gradient, t.slots[0], t.slots[1]});
}

// Whether a rule reduces over each tensor (run by run_reducing) rather than updating element by element.
template <class Step>
inline constexpr bool kReducing = std::is_same_v<Step, LambStep> || std::is_same_v<Step, AdafactorStep>;
inline bool reduces(const OptimizerStep& step) {
  return std::visit([](const auto& s) { return kReducing<std::decay_t<decltype(s)>>; }, step);
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
template <class Update, class Step>
TOWER_HD void load_scalars(Gated<Update>& f, const StepScalars<Step>& scalars) {
  f.apply = scalars.apply_step;
  load_scalars(f.update, scalars);
}
template <class Update, class Step>
TOWER_HD void load_scalars(Controlled<Update>& f, const StepScalars<Step>& scalars) {
  f.apply = scalars.apply_step;
  f.ema_momentum = scalars.ema_momentum;
  f.overwrite = scalars.overwrite_with_ema;
  load_scalars(f.update, scalars);
}
template <class Step>
TOWER_HD void load_scalars(AccumulateGradient& f, const StepScalars<Step>& scalars) {
  f.steps = scalars.gradient_accumulation_steps;
  f.apply = scalars.apply_step;
}

// f(i) with f's scalars replaced by those in memory at `scalars`, read as the element is computed.
template <class F, class Step>
struct ScalarsFrom {
  const StepScalars<Step>* scalars;
  F f;
  TOWER_HD auto operator()(Index i) const {
    F loaded = f;
    load_scalars(loaded, *scalars);
    return loaded(i);
  }
};

// Calls run(g) with g = f, or with f reading its scalars from update.scalars where they are in memory.
template <class Step, class F, class Run>
void reading_scalars(const OptimizerUpdate& update, const F& f, Run&& run) {
  if (update.scalars)
    run(ScalarsFrom<F, Step>{static_cast<const StepScalars<Step>*>(update.scalars), f});
  else
    run(f);
}

// Calls run(f) with the functor that applies `update` to the tensors t, weight decay included: f(i) updates
// element i, for i in [0, t.n). With update.scalars, f reads the scalars from there (ScalarsFrom); the code is
// still chosen by update's own values.
// A rule that reduces (reduces(update.step)) is run by run_reducing instead.
template <class Run>
void with_update(const OptimizerUpdate& update, const UpdateTensors& t, Run&& run) {
  std::visit(
      [&](const auto& step) {
        using Step = std::decay_t<decltype(step)>;
        if constexpr (!kReducing<Step>) {
          const auto run_reading = [&](const auto& f) { reading_scalars<Step>(update, f, run); };
          const auto run_controlled = [&](const auto& f) {
            if (update.gradient_accumulation_steps > 0 || update.use_ema)
              run_reading(Controlled<std::decay_t<decltype(f)>>{update.apply_step, update.ema_momentum,
                                                                 update.overwrite_with_ema, t.variable, t.accumulator,
                                                                 t.average, f});
            else
              run_reading(f);
          };
          with_rule(step, t, [&](const auto& f) {
            if (update.weight_decay != 0.f)
              run_controlled(DecayThen<std::decay_t<decltype(f)>>{update.weight_decay, t.variable, f});
            else
              run_controlled(f);
          });
        }
      },
      update.step);
}

// Calls run(f) with the gradient accumulation functor of tensor t (Backend::accumulate_gradients).
template <class Run>
void with_accumulation(const OptimizerUpdate& update, const UpdateTensors& t, Run&& run) {
  std::visit(
      [&](const auto& step) {
        reading_scalars<std::decay_t<decltype(step)>>(
            update, AccumulateGradient{update.gradient_accumulation_steps, update.apply_step, t.gradient, t.accumulator},
            run);
      },
      update.step);
}

// Runs a reducing rule over tensor t, pass by pass, through `exec`, which each backend provides:
//   exec.each(n, f)      f(i) for i in [0, n), each touching element i only;
//   exec.loop(n, f)      f(k) for k in [0, n), each looping over a row or a column of its own;
//   exec.sum(n, f, out)  *out (device memory) = the sum of the terms f(i) for i in [0, n), added in double.
// The first pass that writes the variable takes the weight decay, the last the base options (Controlled); the
// passes before the last run only on an applying step.
template <class Exec>
void run_reducing(const OptimizerUpdate& update, const UpdateTensors& t, Exec& exec) {
  const auto gated = [&](const auto& f) { return Gated<std::decay_t<decltype(f)>>{update.apply_step, f}; };
  const auto controlled = [&](const auto& f) {
    return Controlled<std::decay_t<decltype(f)>>{update.apply_step, update.ema_momentum, update.overwrite_with_ema,
                                                 t.variable, t.accumulator, t.average, f};
  };
  std::visit(
      [&](const auto& step) {
        using Step = std::decay_t<decltype(step)>;
        const auto each = [&](Index n, const auto& f) { reading_scalars<Step>(update, f, [&](const auto& g) { exec.each(n, g); }); };
        const auto loop = [&](Index n, const auto& f) { reading_scalars<Step>(update, f, [&](const auto& g) { exec.loop(n, g); }); };
        const auto sum = [&](const auto& f, float* out) {
          reading_scalars<Step>(update, f, [&](const auto& g) { exec.sum(t.n, g, out); });
        };
        const auto decayed_each = [&](const auto& f) {
          if (update.weight_decay != 0.f)
            each(t.n, gated(DecayThen<std::decay_t<decltype(f)>>{update.weight_decay, t.variable, f}));
          else
            each(t.n, gated(f));
        };
        if constexpr (std::is_same_v<Step, LambStep>) {
          float *m = t.slots[0], *v = t.slots[1];
          decayed_each(LambMoments{step, t.gradient, m, v});
          sum(LambSquare{step, t.variable, m, v, false}, t.scratch);
          sum(LambSquare{step, t.variable, m, v, true}, t.scratch + 1);
          each(t.n, controlled(LambApply{step, t.variable, m, v, t.scratch}));
        } else if constexpr (std::is_same_v<Step, AdafactorStep>) {
          float *r = t.slots[0], *c = t.slots[1], *v = t.slots[2], *means = t.scratch + 2;
          const Index rows = t.rows, cols = t.cols;
          if (rows > 0) {
            const Index matrices = t.n / (rows * cols);
            loop(matrices * rows, gated(AdafactorRows{step, t.gradient, r, rows, cols}));
            loop(matrices * cols, gated(AdafactorCols{step, t.gradient, c, rows, cols}));
            loop(matrices, gated(AdafactorRowMeans{step, r, means, rows}));
          }
          decayed_each(AdafactorVelocity{step, t.gradient, r, c, means, v, rows, cols});
          sum(AdafactorSquare{step, t.variable, t.gradient, v, false}, t.scratch);
          sum(AdafactorSquare{step, t.variable, t.gradient, v, true}, t.scratch + 1);
          each(t.n, controlled(AdafactorApply{step, t.variable, t.gradient, v, t.scratch, t.n}));
        }
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
