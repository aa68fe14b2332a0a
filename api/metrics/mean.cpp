#include "api/metrics/mean.h"

#include <stdexcept>

namespace tower::metrics {

namespace detail {

void WeightedMean::merge_state(const Metric& other) {
  check_mergeable(*this, other);
  const auto& o = static_cast<const WeightedMean&>(other);
  add(o.total_, o.count_);
}

void WeightedMean::accumulate(const std::vector<double>& values, Index examples, const Tensor& sample_weight) {
  const Index n = static_cast<Index>(values.size());
  const Index per_example = examples > 0 ? n / examples : 0;
  double total = 0, count = 0;
  if (!sample_weight.defined()) {
    for (Index e = 0; e < examples; ++e) {
      double sum = 0;
      for (Index i = e * per_example; i < (e + 1) * per_example; ++i) sum += values[i];
      total += per_example ? sum / per_example : 0.0;
    }
    add(total, static_cast<double>(examples));
    return;
  }
  if (sample_weight.numel() != examples && sample_weight.numel() != n)
    throw std::invalid_argument(name() + ": sample_weight of shape " + sample_weight.shape().to_string() +
                                " does not fit " + std::to_string(examples) + " examples (expected one weight per " +
                                "example)");
  const Tensor host = sample_weight.to(Device::cpu());
  const losses::detail::HostValues w(host);
  const bool per_value = sample_weight.numel() != examples;
  for (Index e = 0; e < examples; ++e) {
    double sum = 0, weight = 0;
    for (Index i = e * per_example; i < (e + 1) * per_example; ++i) {
      const double wi = per_value ? w[i] : w[e];
      sum += values[i] * wi;
      weight += wi;
    }
    if (per_example == 0) continue;
    total += sum / per_example;
    count += weight / per_example;
  }
  add(total, count);
}

void MeanMetricWrapper::update_state(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) {
  if (y_pred.rank() == 0)
    throw std::invalid_argument(name() + ": y_pred must have a batch axis, got shape " + y_pred.shape().to_string());
  std::vector<double> values;
  compute(y_true, y_pred, values);
  accumulate(values, y_pred.dim(0), sample_weight);
}

}  // namespace detail

void MeanImpl::update(double value, double weight) { add(value * weight, weight); }

void MeanImpl::update_state(const Tensor& values, const Tensor& sample_weight) {
  const Tensor host = values.to(Device::cpu());
  const losses::detail::HostValues v(host);
  std::vector<double> flat(static_cast<std::size_t>(host.numel()));
  for (Index i = 0; i < host.numel(); ++i) flat[i] = v[i];
  accumulate(flat, host.rank() == 0 ? 1 : host.dim(0), sample_weight);
}

void MeanImpl::update_state(const Tensor&, const Tensor&, const Tensor&) {
  throw std::invalid_argument(name() + ": Mean averages values: call update_state(values[, sample_weight]); "
                              "as a compiled metric use a metric of predictions such as MeanSquaredError");
}

}  // namespace tower::metrics
