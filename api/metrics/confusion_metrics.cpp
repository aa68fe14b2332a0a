#include "api/metrics/confusion_metrics.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace tower::metrics {

namespace {

// Keras' metrics_utils.NEG_INF: the default threshold with top_k.
constexpr float kNegInf = -1e10f;

double divide_no_nan(double a, double b) { return b == 0 ? 0.0 : a / b; }

Index examples_of(const Tensor& y_pred) { return y_pred.rank() == 0 ? 1 : y_pred.dim(0); }

}  // namespace

namespace detail {

void ThresholdCounts::configure(std::optional<double> threshold, std::optional<int> top_k,
                                std::optional<int> class_id) {
  if (threshold && !(*threshold >= 0 && *threshold <= 1))
    throw std::invalid_argument(name() + ": thresholds must be in [0, 1], got " + std::to_string(*threshold));
  if (top_k && *top_k < 1) throw std::invalid_argument(name() + ": top_k must be >= 1, got " + std::to_string(*top_k));
  if (class_id && *class_id < 0)
    throw std::invalid_argument(name() + ": class_id must be >= 0, got " + std::to_string(*class_id));
  threshold_ = threshold ? static_cast<float>(*threshold) : (top_k ? kNegInf : 0.5f);
  top_k_ = top_k;
  class_id_ = class_id;
}

void ThresholdCounts::update_state(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) {
  losses::detail::check_matching_shapes(name(), y_true.shape(), y_pred.shape());
  if ((top_k_ || class_id_) && y_pred.rank() < 2)
    throw std::invalid_argument(name() + ": top_k and class_id need y_pred of shape [batch, ..., classes], got " +
                                y_pred.shape().to_string());
  const Index numel = y_pred.numel();
  const Index cols = y_pred.rank() >= 2 ? y_pred.dim(-1) : 1, rows = numel / std::max<Index>(cols, 1);
  if (class_id_ && *class_id_ >= cols)
    throw std::invalid_argument(name() + ": class_id " + std::to_string(*class_id_) + " is out of range for " +
                                std::to_string(cols) + " classes");
  const Device device = y_pred.device();
  backend::ThresholdCountParams p{.rows = rows, .classes = cols, .examples = examples_of(y_pred),
                                  .threshold = threshold_, .top_k = top_k_.value_or(0),
                                  .class_id = class_id_.value_or(-1)};
  Tensor w;
  if (sample_weight.defined()) {
    p.weight_per_element = weight_per_element(name(), sample_weight, p.examples, numel);
    w = sample_weight.to(device);
  }
  backend::get(device).update_threshold_counts(p, losses::detail::any_values(y_true.to(device)),
                                               losses::detail::any_values(y_pred), losses::detail::any_values(w),
                                               state_on(state_, 4, device).data());
}

std::vector<double> ThresholdCounts::counts() const {
  return state_.defined() ? state_.read() : std::vector<double>(4, 0.0);
}

void ThresholdCounts::merge_state(const Metric& other) {
  check_mergeable(*this, other);
  merge_states(state_, static_cast<const ThresholdCounts&>(other).state_);
}

void SensitivitySpecificityBase::configure(const char* key, std::optional<double> value, int num_thresholds,
                                           std::optional<int> class_id) {
  if (!value) throw std::invalid_argument(name() + ": " + key + " is required (a value in [0, 1])");
  if (!(*value >= 0 && *value <= 1))
    throw std::invalid_argument(name() + ": " + key + " must be in [0, 1], got " + std::to_string(*value));
  if (num_thresholds < 1)
    throw std::invalid_argument(name() + ": num_thresholds must be > 0, got " + std::to_string(num_thresholds));
  if (class_id && *class_id < 0)
    throw std::invalid_argument(name() + ": class_id must be >= 0, got " + std::to_string(*class_id));
  value_ = static_cast<float>(*value);
  num_thresholds_ = num_thresholds;
  class_id_ = class_id;
}

void SensitivitySpecificityBase::update_state(const Tensor& y_true, const Tensor& y_pred,
                                              const Tensor& sample_weight) {
  losses::detail::check_matching_shapes(name(), y_true.shape(), y_pred.shape());
  const Index classes = y_pred.rank() >= 2 ? y_pred.dim(-1) : 1;
  if (class_id_ && (y_pred.rank() < 2 || *class_id_ >= classes))
    throw std::invalid_argument(name() + ": class_id " + std::to_string(*class_id_) +
                                " needs y_pred of shape [batch, ..., classes] with more classes, got " +
                                y_pred.shape().to_string());
  const Device device = y_pred.device();
  backend::AucParams p{.n = y_pred.numel(), .examples = examples_of(y_pred), .num_thresholds = num_thresholds_,
                       .classes = classes, .class_id = class_id_.value_or(-1), .clamp_first = false};
  Tensor w;
  if (sample_weight.defined()) {
    p.weight_per_element = weight_per_element(name(), sample_weight, p.examples, p.n);
    w = sample_weight.to(device);
  }
  backend::get(device).update_auc(p, losses::detail::any_values(y_true.to(device)),
                                  losses::detail::any_values(y_pred), losses::detail::any_values(w),
                                  state_on(state_, 4 * Index{num_thresholds_}, device).data());
}

void SensitivitySpecificityBase::merge_state(const Metric& other) {
  check_mergeable(*this, other);
  merge_states(state_, static_cast<const SensitivitySpecificityBase&>(other).state_);
}

double SensitivitySpecificityBase::best(Rate dependent, Rate constrained) const {
  if (!state_.defined()) return 0.0;
  const std::vector<double> all = state_.read();
  const auto t = static_cast<std::size_t>(num_thresholds_);
  // Keras keeps the counts and rates in float32; the comparison with value_ is made there.
  const auto rate = [&](Rate r, std::size_t i) {
    const float tp = static_cast<float>(all[i]), fp = static_cast<float>(all[t + i]),
                tn = static_cast<float>(all[2 * t + i]), fn = static_cast<float>(all[3 * t + i]);
    const auto ratio = [](float a, float b) { return b == 0.f ? 0.f : a / b; };
    return r == Rate::sensitivity ? ratio(tp, tp + fn) : r == Rate::specificity ? ratio(tn, tn + fp)
                                                                                : ratio(tp, tp + fp);
  };
  float out = 0.f;
  for (std::size_t i = 0; i < t; ++i)
    if (rate(constrained, i) >= value_) out = std::max(out, rate(dependent, i));
  return out;
}

}  // namespace detail

PrecisionImpl::PrecisionImpl(Options options) : MetricWithOptions(std::move(options)) {
  configure(options_.thresholds, options_.top_k, options_.class_id);
}

double PrecisionImpl::result() const {
  const std::vector<double> c = counts();
  return divide_no_nan(c[0], c[0] + c[1]);
}

RecallImpl::RecallImpl(Options options) : MetricWithOptions(std::move(options)) {
  configure(options_.thresholds, options_.top_k, options_.class_id);
}

double RecallImpl::result() const {
  const std::vector<double> c = counts();
  return divide_no_nan(c[0], c[0] + c[3]);
}

SensitivityAtSpecificityImpl::SensitivityAtSpecificityImpl(Options options) : MetricWithOptions(std::move(options)) {
  configure("specificity", options_.specificity, options_.num_thresholds, options_.class_id);
}

SpecificityAtSensitivityImpl::SpecificityAtSensitivityImpl(Options options) : MetricWithOptions(std::move(options)) {
  configure("sensitivity", options_.sensitivity, options_.num_thresholds, options_.class_id);
}

PrecisionAtRecallImpl::PrecisionAtRecallImpl(Options options) : MetricWithOptions(std::move(options)) {
  configure("recall", options_.recall, options_.num_thresholds, options_.class_id);
}

RecallAtPrecisionImpl::RecallAtPrecisionImpl(Options options) : MetricWithOptions(std::move(options)) {
  configure("precision", options_.precision, options_.num_thresholds, options_.class_id);
}

AUCImpl::AUCImpl(Options options) : MetricWithOptions(std::move(options)) {
  if (options_.num_thresholds < 2)
    throw std::invalid_argument(name() + ": num_thresholds must be > 1, got " +
                                std::to_string(options_.num_thresholds));
  std::string curve = options_.curve, method = options_.summation_method;
  std::transform(curve.begin(), curve.end(), curve.begin(), [](unsigned char c) { return std::toupper(c); });
  std::transform(method.begin(), method.end(), method.begin(), [](unsigned char c) { return std::tolower(c); });
  if (curve != "ROC" && curve != "PR")
    throw std::invalid_argument(name() + ": curve must be \"ROC\" or \"PR\", got \"" + options_.curve + "\"");
  if (method != "interpolation" && method != "minoring" && method != "majoring")
    throw std::invalid_argument(name() + ": summation_method must be \"interpolation\", \"minoring\" or "
                                "\"majoring\", got \"" + options_.summation_method + "\"");
  options_.curve = curve;
  options_.summation_method = method;
  if (options_.num_labels && !options_.multi_label)
    throw std::invalid_argument(name() + ": num_labels is needed only when multi_label is true, got num_labels " +
                                std::to_string(*options_.num_labels));
  if (options_.num_labels && *options_.num_labels < 1)
    throw std::invalid_argument(name() + ": num_labels must be >= 1, got " + std::to_string(*options_.num_labels));
  if (options_.num_labels) labels_ = *options_.num_labels;
  if (options_.num_labels && options_.label_weights &&
      static_cast<Index>(options_.label_weights->size()) != labels_)
    throw std::invalid_argument(name() + ": " + std::to_string(options_.label_weights->size()) +
                                " label_weights for num_labels " + std::to_string(labels_));
  if (options_.label_weights) {
    for (const double w : *options_.label_weights)
      if (!(w >= 0)) throw std::invalid_argument(name() + ": label_weights must be >= 0, got " + std::to_string(w));
    const std::vector<float> weights(options_.label_weights->begin(), options_.label_weights->end());
    label_weights_ = Tensor::from_vector(weights, {static_cast<Index>(weights.size())});
  }
  reset_state();
}

void AUCImpl::reset_state() { state_.zero(); }

void AUCImpl::merge_state(const Metric& other) {
  detail::check_mergeable(*this, other);
  const auto& o = static_cast<const AUCImpl&>(other);
  if (!o.state_.defined()) return;
  if (state_.defined() && o.labels_ != labels_)
    throw std::invalid_argument(name() + ": cannot merge the counts of " + std::to_string(o.labels_) +
                                " labels into those of " + std::to_string(labels_));
  labels_ = o.labels_;
  detail::merge_states(state_, o.state_);
}

// Keras' _update_confusion_matrix_variables_optimized for evenly spaced thresholds (backend::AucParams).
void AUCImpl::update_state(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) {
  losses::detail::check_matching_shapes(name(), y_true.shape(), y_pred.shape());
  const Index columns = y_pred.rank() >= 2 ? y_pred.dim(-1) : 1;
  if (options_.multi_label) {
    if (y_pred.rank() != 2)
      throw std::invalid_argument(name() + ": y_pred must be [batch, labels] with multi_label, got " +
                                  y_pred.shape().to_string());
    if (state_.defined() || options_.num_labels) {
      if (columns != labels_)
        throw std::invalid_argument(name() + ": y_pred " + y_pred.shape().to_string() + " has " +
                                    std::to_string(columns) + " labels, the metric " + std::to_string(labels_));
    } else {
      labels_ = columns;
    }
  }
  if (label_weights_.defined() && label_weights_.numel() != columns)
    throw std::invalid_argument(name() + ": " + std::to_string(label_weights_.numel()) +
                                " label_weights for y_pred " + y_pred.shape().to_string() + " of " +
                                std::to_string(columns) + " labels");
  const Device device = y_pred.device();
  if (label_weights_.defined() && label_weights_.device() != device) label_weights_ = label_weights_.to(device);
  backend::AucParams p{.n = y_pred.numel(), .examples = examples_of(y_pred),
                       .num_thresholds = options_.num_thresholds, .from_logits = options_.from_logits,
                       .classes = columns, .multi_label = options_.multi_label};
  // With multi_label the weights average the areas instead (result()).
  if (!options_.multi_label) p.label_weights = losses::detail::any_values(label_weights_);
  Tensor w;
  if (sample_weight.defined()) {
    p.weight_per_element = detail::weight_per_element(name(), sample_weight, p.examples, p.n);
    w = sample_weight.to(device);
  }
  backend::get(device).update_auc(p, losses::detail::any_values(y_true.to(device)),
                                  losses::detail::any_values(y_pred), losses::detail::any_values(w),
                                  detail::state_on(state_, 4 * labels_ * options_.num_thresholds, device).data());
}

std::vector<double> AUCImpl::counts(int k) const {
  const auto n = static_cast<std::size_t>(labels_ * options_.num_thresholds);
  if (!state_.defined()) return std::vector<double>(n, 0.0);
  const std::vector<double> all = state_.read();
  return std::vector<double>(all.begin() + k * n, all.begin() + (k + 1) * n);
}

namespace {

// Keras' AUC.interpolate_pr_auc (Davis & Goadrich 2006): precision interpolated linearly in the number of predicted
// positives between thresholds.
double interpolate_pr_auc(const std::vector<double>& tp, const std::vector<double>& fp,
                          const std::vector<double>& fn) {
  double area = 0;
  for (std::size_t i = 0; i + 1 < tp.size(); ++i) {
    const double p0 = tp[i] + fp[i], p1 = tp[i + 1] + fp[i + 1];
    const double dtp = tp[i] - tp[i + 1];
    const double slope = divide_no_nan(dtp, std::max(p0 - p1, 0.0));
    const double intercept = tp[i + 1] - slope * p1;
    const double ratio = (p0 > 0 && p1 > 0) ? divide_no_nan(p0, std::max(p1, 0.0)) : 1.0;
    area += divide_no_nan(slope * (dtp + intercept * std::log(ratio)), std::max(tp[i + 1] + fn[i + 1], 0.0));
  }
  return area;
}

}  // namespace

double AUCImpl::area(const std::vector<double>& tp, const std::vector<double>& fp, const std::vector<double>& tn,
                     const std::vector<double>& fn) const {
  const bool pr = options_.curve == "PR";
  if (pr && options_.summation_method == "interpolation") return interpolate_pr_auc(tp, fp, fn);
  const std::size_t n = tp.size();
  std::vector<double> x(n), y(n);
  for (std::size_t i = 0; i < n; ++i) {
    const double recall = divide_no_nan(tp[i], tp[i] + fn[i]);
    if (pr) {
      x[i] = recall;
      y[i] = divide_no_nan(tp[i], tp[i] + fp[i]);
    } else {
      x[i] = divide_no_nan(fp[i], fp[i] + tn[i]);
      y[i] = recall;
    }
  }
  double area = 0;
  for (std::size_t i = 0; i + 1 < n; ++i) {
    double height;
    if (options_.summation_method == "interpolation")
      height = (y[i] + y[i + 1]) / 2;
    else if (options_.summation_method == "minoring")
      height = std::min(y[i], y[i + 1]);
    else
      height = std::max(y[i], y[i + 1]);
    area += (x[i] - x[i + 1]) * height;
  }
  return area;
}

double AUCImpl::result() const {
  const std::vector<double> tp = counts(0), fp = counts(1), tn = counts(2), fn = counts(3);
  const auto t = static_cast<std::ptrdiff_t>(options_.num_thresholds);
  const auto of_label = [t](const std::vector<double>& v, Index l) {
    return std::vector<double>(v.begin() + l * t, v.begin() + (l + 1) * t);
  };
  if (!options_.multi_label) return area(tp, fp, tn, fn);
  // Keras averages the labels' areas, weighted by label_weights when given.
  double sum = 0, weights = 0;
  for (Index l = 0; l < labels_; ++l) {
    const double w = options_.label_weights ? (*options_.label_weights)[static_cast<std::size_t>(l)] : 1.0;
    sum += w * area(of_label(tp, l), of_label(fp, l), of_label(tn, l), of_label(fn, l));
    weights += w;
  }
  return divide_no_nan(sum, weights);
}

}  // namespace tower::metrics
