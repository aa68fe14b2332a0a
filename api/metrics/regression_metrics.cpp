#include "api/metrics/regression_metrics.h"

#include "api/losses/mean_absolute_error.h"
#include "api/losses/mean_squared_error.h"

namespace tower::metrics {

namespace {

// The loss's per-example values on y_pred's device, one position each.
backend::MeanMetricParams loss_values(losses::Loss& loss, const Tensor& y_true, const Tensor& y_pred,
                                      Tensor& per_example, Tensor& values) {
  const Shape shape = loss.per_example_shape(y_pred.shape());
  if (!per_example.defined() || per_example.shape() != shape || per_example.device() != y_pred.device())
    per_example = Tensor(shape, DType::float32, y_pred.device());
  loss.forward(y_true, y_pred, per_example);
  values = per_example;
  return {.kind = backend::MeanMetricParams::Kind::values, .positions = per_example.numel()};
}

}  // namespace

MeanSquaredErrorImpl::MeanSquaredErrorImpl(Options options)
    : MetricWithOptions(std::move(options)), loss_(losses::MeanSquaredError({.name = name()})) {}

backend::MeanMetricParams MeanSquaredErrorImpl::prepare(const Tensor& y_true, const Tensor& y_pred, Tensor& values) {
  return loss_values(*loss_, y_true, y_pred, per_example_, values);
}

MeanAbsoluteErrorImpl::MeanAbsoluteErrorImpl(Options options)
    : MetricWithOptions(std::move(options)), loss_(losses::MeanAbsoluteError({.name = name()})) {}

backend::MeanMetricParams MeanAbsoluteErrorImpl::prepare(const Tensor& y_true, const Tensor& y_pred,
                                                         Tensor& values) {
  return loss_values(*loss_, y_true, y_pred, per_example_, values);
}

}  // namespace tower::metrics
