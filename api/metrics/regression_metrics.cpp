#include "api/metrics/regression_metrics.h"

#include "api/losses/mean_absolute_error.h"
#include "api/losses/mean_squared_error.h"

namespace tower::metrics {

namespace {

// The loss's per-example values, one per position of y_pred without its last axis.
void loss_values(losses::Loss& loss, const Tensor& y_true, const Tensor& y_pred, std::vector<double>& values) {
  Tensor per_example(loss.per_example_shape(y_pred.shape()));
  loss.forward(y_true, y_pred, per_example);
  const std::vector<float> v = per_example.to_vector();
  values.assign(v.begin(), v.end());
}

}  // namespace

MeanSquaredErrorImpl::MeanSquaredErrorImpl(Options options)
    : MetricWithOptions(std::move(options)), loss_(losses::MeanSquaredError({.name = name()})) {}

void MeanSquaredErrorImpl::compute(const Tensor& y_true, const Tensor& y_pred, std::vector<double>& values) const {
  loss_values(*loss_, y_true, y_pred, values);
}

MeanAbsoluteErrorImpl::MeanAbsoluteErrorImpl(Options options)
    : MetricWithOptions(std::move(options)), loss_(losses::MeanAbsoluteError({.name = name()})) {}

void MeanAbsoluteErrorImpl::compute(const Tensor& y_true, const Tensor& y_pred, std::vector<double>& values) const {
  loss_values(*loss_, y_true, y_pred, values);
}

}  // namespace tower::metrics
