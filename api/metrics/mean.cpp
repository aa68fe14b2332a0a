#include "api/metrics/mean.h"

#include <stdexcept>

namespace tower::metrics {

namespace detail {

double WeightedMean::result() const {
  if (!state_.defined()) return 0.0;
  const std::vector<double> s = state_.read();
  return s[1] == 0 ? 0.0 : s[0] / s[1];
}

double WeightedMean::total() const { return state_.defined() ? state_.read()[0] : 0.0; }

double WeightedMean::count() const { return state_.defined() ? state_.read()[1] : 0.0; }

void WeightedMean::merge_state(const Metric& other) {
  check_mergeable(*this, other);
  merge_states(state_, static_cast<const WeightedMean&>(other).state_);
}

void WeightedMean::accumulate(backend::MeanMetricParams p, const Tensor& y_true, const Tensor& y_pred,
                              const Tensor& sample_weight) {
  const Device device = y_pred.device();
  Tensor w;
  if (sample_weight.defined()) {
    p.weight_per_position = weight_per_element(name(), sample_weight, p.examples, p.positions);
    w = sample_weight.to(device);
  }
  const bool reads_labels = y_true.defined() && p.kind != backend::MeanMetricParams::Kind::values;
  const Tensor t = reads_labels ? y_true.to(device) : Tensor();
  backend::get(device).update_mean_metric(p, losses::detail::any_values(t), losses::detail::any_values(y_pred),
                                          losses::detail::any_values(w), state_on(state_, 2, device).data());
}

void WeightedMean::add(double value, double weight) {
  const Device device = state_.defined() ? state_.device() : Device::cpu();
  double* s = state_on(state_, 2, device).data();
  backend::Backend& b = backend::get(device);
  b.add_to_doubles(s, 1, value * weight);
  b.add_to_doubles(s + 1, 1, weight);
}

void MeanMetricWrapper::update_state(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) {
  if (y_pred.rank() == 0)
    throw std::invalid_argument(name() + ": y_pred must have a batch axis, got shape " + y_pred.shape().to_string());
  Tensor values = y_pred;
  backend::MeanMetricParams p = prepare(y_true, y_pred, values);
  p.examples = y_pred.dim(0);
  accumulate(p, y_true, values, sample_weight);
}

}  // namespace detail

void MeanImpl::update(double value, double weight) { add(value, weight); }

void MeanImpl::update_state(const Tensor& values, const Tensor& sample_weight) {
  const backend::MeanMetricParams p{.kind = backend::MeanMetricParams::Kind::values,
                                    .examples = values.rank() == 0 ? 1 : values.dim(0),
                                    .positions = values.numel()};
  accumulate(p, Tensor(), values, sample_weight);
}

void MeanImpl::update_state(const Tensor&, const Tensor&, const Tensor&) {
  throw std::invalid_argument(name() + ": Mean averages values: call update_state(values[, sample_weight]); "
                              "as a compiled metric use a metric of predictions such as MeanSquaredError");
}

}  // namespace tower::metrics
