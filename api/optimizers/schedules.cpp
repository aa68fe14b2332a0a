#include "api/optimizers/schedules.h"

#include <cmath>
#include <functional>
#include <numbers>
#include <stdexcept>
#include <utility>

namespace tower::optimizers {

namespace schedules {

namespace {

std::string number(double v) { return Config(v).to_json(); }

void require_positive_steps(const char* type, const char* key, std::int64_t steps) {
  if (steps <= 0)
    throw std::invalid_argument(std::string(type) + ": argument '" + key + "' must be > 0, got " +
                                std::to_string(steps));
}

// A schedule whose options struct is its config.
template <class Options>
class Schedule : public LearningRateSchedule {
 public:
  Schedule(const char* type, Options options) : type_(type), options_(std::move(options)) {}
  Config get_config() const final {
    Config c = Config::map();
    c.set("class_name", type_);
    c.set("config", options_to_config(options_));
    return c;
  }

 protected:
  const char* type_;
  Options options_;
};

class ExponentialDecayImpl final : public Schedule<ExponentialDecayOptions> {
 public:
  explicit ExponentialDecayImpl(ExponentialDecayOptions o) : Schedule("ExponentialDecay", std::move(o)) {
    require_positive_steps(type_, "decay_steps", options_.decay_steps);
  }
  double operator()(std::int64_t step) const override {
    double p = static_cast<double>(step) / static_cast<double>(options_.decay_steps);
    if (options_.staircase) p = std::floor(p);
    return options_.initial_learning_rate * std::pow(options_.decay_rate, p);
  }
};

class PiecewiseConstantDecayImpl final : public Schedule<PiecewiseConstantDecayOptions> {
 public:
  explicit PiecewiseConstantDecayImpl(PiecewiseConstantDecayOptions o)
      : Schedule("PiecewiseConstantDecay", std::move(o)) {
    const auto& b = options_.boundaries;
    if (b.empty() || options_.values.size() != b.size() + 1)
      throw std::invalid_argument(std::string(type_) +
                                  ": needs at least one boundary and one more value than boundaries, got " +
                                  std::to_string(b.size()) + " boundaries and " +
                                  std::to_string(options_.values.size()) + " values");
    for (std::size_t i = 1; i < b.size(); ++i)
      if (b[i] <= b[i - 1])
        throw std::invalid_argument(std::string(type_) + ": boundaries must increase, got " +
                                    std::to_string(b[i - 1]) + " then " + std::to_string(b[i]));
  }
  double operator()(std::int64_t step) const override {
    const auto& b = options_.boundaries;
    std::size_t i = 0;
    while (i < b.size() && step > b[i]) ++i;
    return options_.values[i];
  }
};

class PolynomialDecayImpl final : public Schedule<PolynomialDecayOptions> {
 public:
  explicit PolynomialDecayImpl(PolynomialDecayOptions o) : Schedule("PolynomialDecay", std::move(o)) {
    require_positive_steps(type_, "decay_steps", options_.decay_steps);
  }
  double operator()(std::int64_t step) const override {
    double s = static_cast<double>(step);
    double decay_steps = static_cast<double>(options_.decay_steps);
    if (options_.cycle) {
      // The first multiple of decay_steps at or above step (1 at step 0).
      const double multiplier = step == 0 ? 1.0 : std::ceil(s / decay_steps);
      decay_steps *= multiplier;
    } else {
      s = std::min(s, decay_steps);
    }
    const double p = s / decay_steps;
    return (options_.initial_learning_rate - options_.end_learning_rate) * std::pow(1.0 - p, options_.power) +
           options_.end_learning_rate;
  }
};

class InverseTimeDecayImpl final : public Schedule<InverseTimeDecayOptions> {
 public:
  explicit InverseTimeDecayImpl(InverseTimeDecayOptions o) : Schedule("InverseTimeDecay", std::move(o)) {
    require_positive_steps(type_, "decay_steps", options_.decay_steps);
  }
  double operator()(std::int64_t step) const override {
    double p = static_cast<double>(step) / static_cast<double>(options_.decay_steps);
    if (options_.staircase) p = std::floor(p);
    return options_.initial_learning_rate / (1.0 + options_.decay_rate * p);
  }
};

// Keras' cosine factor: (1 - alpha) * 0.5 * (1 + cos(pi * fraction)) + alpha.
double cosine_factor(double fraction, double alpha, double scale = 1.0) {
  const double cosine = 0.5 * scale * (1.0 + std::cos(std::numbers::pi * fraction));
  return (1.0 - alpha) * cosine + alpha;
}

class CosineDecayImpl final : public Schedule<CosineDecayOptions> {
 public:
  explicit CosineDecayImpl(CosineDecayOptions o) : Schedule("CosineDecay", std::move(o)) {
    require_positive_steps(type_, "decay_steps", options_.decay_steps);
    if (options_.warmup_steps < 0)
      throw std::invalid_argument(std::string(type_) + ": argument 'warmup_steps' must be >= 0, got " +
                                  std::to_string(options_.warmup_steps));
  }
  double operator()(std::int64_t step) const override {
    const double decay_steps = static_cast<double>(options_.decay_steps);
    double s = static_cast<double>(step);
    if (!options_.warmup_target) {
      s = std::min(s, decay_steps);
      return options_.initial_learning_rate * cosine_factor(s / decay_steps, options_.alpha);
    }
    const double target = *options_.warmup_target;
    const double warmup_steps = static_cast<double>(options_.warmup_steps);
    s = std::min(s, decay_steps + warmup_steps);
    if (s < warmup_steps)
      return (target - options_.initial_learning_rate) * (s / warmup_steps) + options_.initial_learning_rate;
    return target * cosine_factor((s - warmup_steps) / decay_steps, options_.alpha);
  }
};

class CosineDecayRestartsImpl final : public Schedule<CosineDecayRestartsOptions> {
 public:
  explicit CosineDecayRestartsImpl(CosineDecayRestartsOptions o) : Schedule("CosineDecayRestarts", std::move(o)) {
    require_positive_steps(type_, "first_decay_steps", options_.first_decay_steps);
    if (!(options_.t_mul > 0.0))
      throw std::invalid_argument(std::string(type_) + ": argument 't_mul' must be > 0, got " +
                                  number(options_.t_mul));
  }
  double operator()(std::int64_t step) const override {
    const double t_mul = options_.t_mul;
    double fraction = static_cast<double>(step) / static_cast<double>(options_.first_decay_steps);
    double restart = 0.0;
    if (t_mul == 1.0) {
      restart = std::floor(fraction);
      fraction -= restart;
    } else {
      // Period i starts after sum_{k<i} t_mul^k = (1 - t_mul^i) / (1 - t_mul) first periods. Keras takes i from
      // a logarithm; at a restart the logarithm can round just below the whole number, so the index is moved
      // to the period that actually contains `fraction`.
      const auto start = [t_mul](double i) { return (1.0 - std::pow(t_mul, i)) / (1.0 - t_mul); };
      restart = std::floor(std::log(1.0 - fraction * (1.0 - t_mul)) / std::log(t_mul));
      if (std::isfinite(restart)) {
        while (start(restart + 1.0) <= fraction) restart += 1.0;
        while (restart > 0.0 && start(restart) > fraction) restart -= 1.0;
      }
      fraction = (fraction - start(restart)) / std::pow(t_mul, restart);
    }
    const double m_fac = std::pow(options_.m_mul, restart);
    return options_.initial_learning_rate * cosine_factor(fraction, options_.alpha, m_fac);
  }
};

template <class Options, class Make>
void add(Registry<SchedulePtr>& r, const char* name, Make make) {
  r.add(name, [name, make](const Config& c) { return make(options_from_config<Options>(c, name, {"name"})); });
}

}  // namespace

SchedulePtr ExponentialDecay(ExponentialDecayOptions o) { return std::make_shared<ExponentialDecayImpl>(std::move(o)); }
SchedulePtr PiecewiseConstantDecay(PiecewiseConstantDecayOptions o) {
  return std::make_shared<PiecewiseConstantDecayImpl>(std::move(o));
}
SchedulePtr PolynomialDecay(PolynomialDecayOptions o) { return std::make_shared<PolynomialDecayImpl>(std::move(o)); }
SchedulePtr InverseTimeDecay(InverseTimeDecayOptions o) {
  return std::make_shared<InverseTimeDecayImpl>(std::move(o));
}
SchedulePtr CosineDecay(CosineDecayOptions o) { return std::make_shared<CosineDecayImpl>(std::move(o)); }
SchedulePtr CosineDecayRestarts(CosineDecayRestartsOptions o) {
  return std::make_shared<CosineDecayRestartsImpl>(std::move(o));
}

Registry<SchedulePtr>& registry() {
  static Registry<SchedulePtr> r("learning-rate schedule");
  static const bool populated = [] {
    add<ExponentialDecayOptions>(r, "ExponentialDecay", ExponentialDecay);
    add<PiecewiseConstantDecayOptions>(r, "PiecewiseConstantDecay", PiecewiseConstantDecay);
    add<PolynomialDecayOptions>(r, "PolynomialDecay", PolynomialDecay);
    add<InverseTimeDecayOptions>(r, "InverseTimeDecay", InverseTimeDecay);
    add<CosineDecayOptions>(r, "CosineDecay", CosineDecay);
    add<CosineDecayRestartsOptions>(r, "CosineDecayRestarts", CosineDecayRestarts);
    return true;
  }();
  (void)populated;
  return r;
}

std::vector<std::string> schedule_types() { return registry().class_names(); }

SchedulePtr schedule_from_config(const Config& c) {
  if (!c.is_map())
    throw ConfigError("learning-rate schedule: expected {\"class_name\": ..., \"config\": {...}}, got " +
                      c.to_json());
  return registry().from_config(c);
}

Config LearningRate::to_config() const { return schedule_ ? schedule_->get_config() : Config(value_); }

LearningRate LearningRate::from_config(const Config& c) {
  if (c.is_number()) return LearningRate(c.as_double());
  if (c.is_map()) return LearningRate(schedule_from_config(c));
  throw ConfigError("learning_rate: expected a number or a schedule {\"class_name\", \"config\"}, got " +
                    c.type_name());
}

Config to_value(const LearningRate& v) { return v.to_config(); }
void from_value(const Config& c, LearningRate& v) { v = LearningRate::from_config(c); }

}  // namespace schedules

}  // namespace tower::optimizers
