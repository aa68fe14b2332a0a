#include "api/metrics/regression_metrics.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

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

RootMeanSquaredErrorImpl::RootMeanSquaredErrorImpl(Options options) : MetricWithOptions(std::move(options)) {
  set_loss(losses::MeanSquaredError({.name = name()}));
}

double RootMeanSquaredErrorImpl::result() const { return std::sqrt(MeanMetricWrapper::result()); }

R2ScoreImpl::R2ScoreImpl(Options options) : MetricWithOptions(std::move(options)) {
  const auto& a = options_.class_aggregation;
  if (a && *a != "uniform_average" && *a != "variance_weighted_average")
    throw std::invalid_argument(name() + ": class_aggregation must be null, \"uniform_average\" or "
                                "\"variance_weighted_average\", got \"" + *a + "\"");
  if (options_.num_regressors < 0)
    throw std::invalid_argument(name() + ": num_regressors must be >= 0, got " +
                                std::to_string(options_.num_regressors));
}

void R2ScoreImpl::update_state(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) {
  losses::detail::check_matching_shapes(name(), y_true.shape(), y_pred.shape());
  // Keras squeezes or expands a trailing axis of 1 to make both [N, outputs].
  const Index rows = y_pred.rank() == 0 ? 1 : y_pred.dim(0), outputs = rows == 0 ? 1 : y_pred.numel() / rows;
  const int low = std::min(y_true.rank(), y_pred.rank());
  const bool two_d = y_true.rank() == y_pred.rank() ? low == 2 : (low == 1 || low == 2);
  if (!two_d)
    throw std::invalid_argument(name() + ": y_true and y_pred must be [batch, outputs], got " +
                                y_true.shape().to_string() + " and " + y_pred.shape().to_string());
  if (state_.defined() && outputs != outputs_)
    throw std::invalid_argument(name() + ": y_pred " + y_pred.shape().to_string() + " has " +
                                std::to_string(outputs) + " outputs, earlier batches " + std::to_string(outputs_));
  outputs_ = outputs;
  const Device device = y_pred.device();
  backend::ColumnSumsParams p{.kind = backend::ColumnSumsParams::Kind::r2, .rows = rows, .columns = outputs};
  Tensor w;
  if (sample_weight.defined()) {
    p.weight_per_element = detail::weight_per_element(name(), sample_weight, rows, y_pred.numel());
    w = sample_weight.to(device);
  }
  double* state = detail::state_on(state_, 4 * outputs + 1, device).data();
  backend::Backend& b = backend::get(device);
  b.update_column_sums(p, losses::detail::any_values(y_true.to(device)), losses::detail::any_values(y_pred),
                       losses::detail::any_values(w), state);
  b.add_to_doubles(state + 4 * outputs, 1, static_cast<double>(y_pred.numel()));
}

std::vector<double> R2ScoreImpl::results() const {
  if (!state_.defined()) return options_.class_aggregation ? std::vector<double>{0.0} : std::vector<double>{};
  const std::vector<double> s = state_.read();
  const auto c = static_cast<std::size_t>(outputs_);
  // No value since the last reset: 0, as every metric before its first update.
  if (s[4 * c] == 0) return std::vector<double>(options_.class_aggregation ? 1 : c, 0.0);
  std::vector<double> raw(c), total(c);
  for (std::size_t j = 0; j < c; ++j) {
    const double mean = s[j] / s[3 * c + j];
    total[j] = s[c + j] - s[j] * mean;
    raw[j] = 1 - s[2 * c + j] / total[j];
    if (std::isinf(raw[j])) raw[j] = 0;
  }
  const auto adjusted = [&](double r2) {
    const double n = s[4 * c], p = options_.num_regressors;
    return p == 0 || p >= n - 1 ? r2 : 1 - (1 - r2) * (n - 1) / (n - p - 1);
  };
  if (!options_.class_aggregation) {
    for (double& r : raw) r = adjusted(r);
    return raw;
  }
  double sum = 0, weights = 0;
  const bool by_variance = *options_.class_aggregation == "variance_weighted_average";
  for (std::size_t j = 0; j < c; ++j) {
    sum += by_variance ? total[j] * raw[j] : raw[j];
    weights += by_variance ? total[j] : 1.0;
  }
  return {adjusted(sum / weights)};
}

double R2ScoreImpl::result() const {
  if (!options_.class_aggregation)
    throw std::logic_error(name() + ": class_aggregation=null gives one score per output (results()); a single "
                           "value needs \"uniform_average\" or \"variance_weighted_average\"");
  return results()[0];
}

void R2ScoreImpl::merge_state(const Metric& other) {
  detail::check_mergeable(*this, other);
  const auto& o = static_cast<const R2ScoreImpl&>(other);
  if (!o.state_.defined()) return;
  if (state_.defined() && o.outputs_ != outputs_)
    throw std::invalid_argument(name() + ": cannot merge the sums of " + std::to_string(o.outputs_) +
                                " outputs into those of " + std::to_string(outputs_));
  outputs_ = o.outputs_;
  detail::merge_states(state_, o.state_);
}

}  // namespace tower::metrics
