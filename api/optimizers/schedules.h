#pragma once
// Learning-rate schedules (keras.optimizers.schedules) and LearningRate, which an optimizer's learning_rate
// option takes: a number or a schedule.
//
// Each schedule is Keras' formula evaluated in double precision (Keras evaluates in float32; the two agree to
// float32 rounding). `step` is the optimizer's iteration count, 0 for the first update.
//
//   ExponentialDecay        lr0 * decay_rate ^ (step / decay_steps)            (floor of the exponent: staircase)
//   PiecewiseConstantDecay  values[0] for step <= boundaries[0], values[i] for boundaries[i-1] < step <=
//                           boundaries[i], values.back() for step > boundaries.back()
//   PolynomialDecay         (lr0 - end) * (1 - min(step, decay_steps) / decay_steps) ^ power + end; with
//                           cycle, decay_steps is stretched to the first multiple above step
//   InverseTimeDecay        lr0 / (1 + decay_rate * step / decay_steps)        (floor of the ratio: staircase)
//   CosineDecay             lr0 * ((1 - alpha) * 0.5 * (1 + cos(pi * min(step, decay_steps) / decay_steps)) +
//                           alpha); with warmup_target, a linear warmup from lr0 to warmup_target over
//                           warmup_steps, then the same cosine decay from warmup_target over decay_steps
//   CosineDecayRestarts     SGDR: cosine periods of first_decay_steps * t_mul^i steps, each restarting at
//                           lr0 * m_mul^i, decaying towards alpha times that
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "api/io/config.h"
#include "api/io/registry.h"
#include "api/engine/layer_options.h"

namespace tower::optimizers::schedules {

class LearningRateSchedule {
 public:
  virtual ~LearningRateSchedule() = default;
  // The rate at optimizer step `step` (0 for the first update).
  virtual double operator()(std::int64_t step) const = 0;
  // {"class_name": "ExponentialDecay", "config": {...}} with Keras' argument names.
  virtual Config get_config() const = 0;
};
using SchedulePtr = std::shared_ptr<LearningRateSchedule>;

class LearningRate {
 public:
  LearningRate(double value) : value_(value) {}
  LearningRate(SchedulePtr schedule) : schedule_(std::move(schedule)) {}
  double at(std::int64_t step) const { return schedule_ ? (*schedule_)(step) : value_; }
  const SchedulePtr& schedule() const { return schedule_; }
  // A number, or the schedule's {"class_name", "config"}.
  Config to_config() const;
  // A number or a schedule config (Keras' serialized form with "module" and "registered_name" is accepted).
  static LearningRate from_config(const Config& c);

 private:
  double value_ = 0.001;
  SchedulePtr schedule_;
};

// Keras' argument names and defaults; each factory validates its arguments (std::invalid_argument).
struct ExponentialDecayOptions {
  double initial_learning_rate = 0.0;
  std::int64_t decay_steps = 0;  // > 0
  double decay_rate = 0.0;
  bool staircase = false;
  template <class V> void visit(V&& v) {
    v("initial_learning_rate", initial_learning_rate);
    v("decay_steps", decay_steps);
    v("decay_rate", decay_rate);
    v("staircase", staircase);
  }
};
struct PiecewiseConstantDecayOptions {
  std::vector<std::int64_t> boundaries;  // strictly increasing, at least one
  std::vector<double> values;            // boundaries.size() + 1 values
  template <class V> void visit(V&& v) {
    v("boundaries", boundaries);
    v("values", values);
  }
};
struct PolynomialDecayOptions {
  double initial_learning_rate = 0.0;
  std::int64_t decay_steps = 0;  // > 0
  double end_learning_rate = 0.0001;
  double power = 1.0;
  bool cycle = false;
  template <class V> void visit(V&& v) {
    v("initial_learning_rate", initial_learning_rate);
    v("decay_steps", decay_steps);
    v("end_learning_rate", end_learning_rate);
    v("power", power);
    v("cycle", cycle);
  }
};
struct InverseTimeDecayOptions {
  double initial_learning_rate = 0.0;
  std::int64_t decay_steps = 0;  // > 0
  double decay_rate = 0.0;
  bool staircase = false;
  template <class V> void visit(V&& v) {
    v("initial_learning_rate", initial_learning_rate);
    v("decay_steps", decay_steps);
    v("decay_rate", decay_rate);
    v("staircase", staircase);
  }
};
struct CosineDecayOptions {
  double initial_learning_rate = 0.0;
  std::int64_t decay_steps = 0;  // > 0
  double alpha = 0.0;
  std::optional<double> warmup_target;  // unset: no warmup (Keras' None)
  std::int64_t warmup_steps = 0;        // >= 0
  template <class V> void visit(V&& v) {
    v("initial_learning_rate", initial_learning_rate);
    v("decay_steps", decay_steps);
    v("alpha", alpha);
    v("warmup_target", warmup_target);
    v("warmup_steps", warmup_steps);
  }
};
struct CosineDecayRestartsOptions {
  double initial_learning_rate = 0.0;
  std::int64_t first_decay_steps = 0;  // > 0
  double t_mul = 2.0;                  // > 0
  double m_mul = 1.0;
  double alpha = 0.0;
  template <class V> void visit(V&& v) {
    v("initial_learning_rate", initial_learning_rate);
    v("first_decay_steps", first_decay_steps);
    v("t_mul", t_mul);
    v("m_mul", m_mul);
    v("alpha", alpha);
  }
};

SchedulePtr ExponentialDecay(ExponentialDecayOptions o);
SchedulePtr PiecewiseConstantDecay(PiecewiseConstantDecayOptions o);
SchedulePtr PolynomialDecay(PolynomialDecayOptions o);
SchedulePtr InverseTimeDecay(InverseTimeDecayOptions o);
SchedulePtr CosineDecay(CosineDecayOptions o);
SchedulePtr CosineDecayRestarts(CosineDecayRestartsOptions o);

// From {"class_name", "config"}; an unknown class lists the known ones, an unknown argument names the closest
// known one. Keras' "name" argument is accepted and ignored.
SchedulePtr schedule_from_config(const Config& c);
// The class names schedule_from_config knows.
std::vector<std::string> schedule_types();
// The schedule classes by Keras class name (io/registry.h).
Registry<SchedulePtr>& registry();

Config to_value(const LearningRate& v);
void from_value(const Config& c, LearningRate& v);

}  // namespace tower::optimizers::schedules

