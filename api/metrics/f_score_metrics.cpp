#include "api/metrics/f_score_metrics.h"

#include <stdexcept>

namespace tower::metrics {

namespace detail {

namespace {

constexpr double kEpsilon = 1e-7;

std::string describe(const std::optional<std::string>& average) { return average ? "\"" + *average + "\"" : "null"; }

}  // namespace

void FBetaBase::configure(const std::optional<std::string>& average, double beta, std::optional<double> threshold) {
  if (average && *average != "micro" && *average != "macro" && *average != "weighted")
    throw std::invalid_argument(name() + ": average must be null, \"micro\", \"macro\" or \"weighted\", got " +
                                describe(average));
  if (!(beta > 0)) throw std::invalid_argument(name() + ": beta must be > 0, got " + std::to_string(beta));
  if (threshold && !(*threshold > 0 && *threshold <= 1))
    throw std::invalid_argument(name() + ": threshold must be in (0, 1], got " + std::to_string(*threshold));
  average_ = average;
  beta_ = beta;
  if (threshold) threshold_ = static_cast<float>(*threshold);
}

void FBetaBase::update_state(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) {
  if (y_pred.rank() != 2 || y_true.shape() != y_pred.shape())
    throw std::invalid_argument(name() + ": y_true and y_pred must both be [batch, classes], got " +
                                y_true.shape().to_string() + " and " + y_pred.shape().to_string());
  if (state_.defined() && y_pred.dim(1) != classes_)
    throw std::invalid_argument(name() + ": y_pred " + y_pred.shape().to_string() + " has " +
                                std::to_string(y_pred.dim(1)) + " classes, earlier batches " +
                                std::to_string(classes_));
  classes_ = y_pred.dim(1);
  const Device device = y_pred.device();
  backend::ColumnSumsParams p{.kind = backend::ColumnSumsParams::Kind::fbeta, .rows = y_pred.dim(0),
                              .columns = classes_, .threshold = threshold_.value_or(0.f),
                              .top_of_row = !threshold_};
  Tensor w;
  if (sample_weight.defined()) {
    p.weight_per_element = weight_per_element(name(), sample_weight, p.rows, y_pred.numel());
    w = sample_weight.to(device);
  }
  backend::get(device).update_column_sums(p, losses::detail::any_values(y_true.to(device)),
                                          losses::detail::any_values(y_pred), losses::detail::any_values(w),
                                          state_on(state_, 4 * classes_, device).data());
}

std::vector<double> FBetaBase::results() const {
  if (!state_.defined()) return average_ ? std::vector<double>{0.0} : std::vector<double>{};
  const std::vector<double> s = state_.read();
  const auto c = static_cast<std::size_t>(classes_);
  const double b2 = beta_ * beta_;
  const auto f = [b2](double tp, double fp, double fn) {
    const double precision = tp / (tp + fp + kEpsilon), recall = tp / (tp + fn + kEpsilon);
    return (1 + b2) * precision * recall / (b2 * precision + recall + kEpsilon);
  };
  if (average_ && *average_ == "micro") {
    double tp = 0, fp = 0, fn = 0;
    for (std::size_t j = 0; j < c; ++j) {
      tp += s[j];
      fp += s[c + j];
      fn += s[2 * c + j];
    }
    return {f(tp, fp, fn)};
  }
  std::vector<double> per_class(c);
  for (std::size_t j = 0; j < c; ++j) per_class[j] = f(s[j], s[c + j], s[2 * c + j]);
  if (!average_) return per_class;
  double sum = 0, support = 0;
  for (std::size_t j = 0; j < c; ++j) support += s[3 * c + j];
  for (std::size_t j = 0; j < c; ++j)
    sum += *average_ == "weighted" ? per_class[j] * s[3 * c + j] / (support + kEpsilon) : per_class[j];
  return {*average_ == "weighted" ? sum : sum / static_cast<double>(c)};
}

double FBetaBase::result() const {
  if (!average_)
    throw std::logic_error(name() + ": average=null gives one score per class (results()); a single value needs "
                           "average \"micro\", \"macro\" or \"weighted\"");
  return results()[0];
}

void FBetaBase::merge_state(const Metric& other) {
  check_mergeable(*this, other);
  const auto& o = static_cast<const FBetaBase&>(other);
  if (!o.state_.defined()) return;
  if (state_.defined() && o.classes_ != classes_)
    throw std::invalid_argument(name() + ": cannot merge the counts of " + std::to_string(o.classes_) +
                                " classes into those of " + std::to_string(classes_));
  classes_ = o.classes_;
  merge_states(state_, o.state_);
}

}  // namespace detail

FBetaScoreImpl::FBetaScoreImpl(Options options) : MetricWithOptions(std::move(options)) {
  configure(options_.average, options_.beta, options_.threshold);
}

F1ScoreImpl::F1ScoreImpl(Options options) : MetricWithOptions(std::move(options)) {
  configure(options_.average, 1.0, options_.threshold);
}

}  // namespace tower::metrics
