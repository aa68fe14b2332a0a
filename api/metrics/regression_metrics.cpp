#include "api/metrics/regression_metrics.h"

#include "api/losses/cosine_similarity.h"
#include "api/losses/log_cosh.h"
#include "api/losses/mean_absolute_error.h"
#include "api/losses/mean_absolute_percentage_error.h"
#include "api/losses/mean_squared_error.h"
#include "api/losses/mean_squared_logarithmic_error.h"

namespace tower::metrics {

namespace detail {

void LossMean::set_loss(losses::LossPtr loss, bool negate) {
  loss_ = std::move(loss);
  negate_ = negate;
}

// The loss's per-example values on y_pred's device, one position each.
backend::MeanMetricParams LossMean::prepare(const Tensor& y_true, const Tensor& y_pred, Tensor& values) {
  const Shape shape = loss_->per_example_shape(y_pred.shape());
  if (!per_example_.defined() || per_example_.shape() != shape || per_example_.device() != y_pred.device())
    per_example_ = Tensor(shape, DType::float32, y_pred.device());
  loss_->forward(y_true, y_pred, per_example_);
  if (negate_)
    backend::get(y_pred.device())
        .scale_shift(per_example_.data<float>(), -1.f, 0.f, per_example_.data<float>(), per_example_.numel());
  values = per_example_;
  return {.kind = backend::MeanMetricParams::Kind::values, .positions = per_example_.numel()};
}

}  // namespace detail

MeanSquaredErrorImpl::MeanSquaredErrorImpl(Options options) : MetricWithOptions(std::move(options)) {
  set_loss(losses::MeanSquaredError({.name = name()}));
}

MeanAbsoluteErrorImpl::MeanAbsoluteErrorImpl(Options options) : MetricWithOptions(std::move(options)) {
  set_loss(losses::MeanAbsoluteError({.name = name()}));
}

MeanAbsolutePercentageErrorImpl::MeanAbsolutePercentageErrorImpl(Options options)
    : MetricWithOptions(std::move(options)) {
  set_loss(losses::MeanAbsolutePercentageError({.name = name()}));
}

MeanSquaredLogarithmicErrorImpl::MeanSquaredLogarithmicErrorImpl(Options options)
    : MetricWithOptions(std::move(options)) {
  set_loss(losses::MeanSquaredLogarithmicError({.name = name()}));
}

LogCoshErrorImpl::LogCoshErrorImpl(Options options) : MetricWithOptions(std::move(options)) {
  set_loss(losses::LogCosh({.name = name()}));
}

CosineSimilarityImpl::CosineSimilarityImpl(Options options) : MetricWithOptions(std::move(options)) {
  set_loss(losses::CosineSimilarity({.axis = options_.axis, .name = name()}), true);
}

}  // namespace tower::metrics
