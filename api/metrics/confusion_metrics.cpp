#include "api/metrics/confusion_metrics.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

namespace tower::metrics {

namespace {

using losses::detail::HostValues;

// Keras' metrics_utils.NEG_INF: the score given to entries outside the top k, and the default threshold with top_k.
constexpr float kNegInf = -1e10f;

double divide_no_nan(double a, double b) { return b == 0 ? 0.0 : a / b; }

// The weight of element i of an [examples, per_example] batch: sample_weight is undefined, one weight per example or
// one per element.
class ElementWeights {
 public:
  ElementWeights(const std::string& who, const Tensor& sample_weight, Index examples, Index numel)
      : host_(sample_weight.defined() ? sample_weight.to(Device::cpu()) : Tensor()),
        per_example_(examples > 0 ? numel / examples : 1) {
    if (!sample_weight.defined()) return;
    if (sample_weight.numel() != examples && sample_weight.numel() != numel)
      throw std::invalid_argument(who + ": sample_weight of shape " + sample_weight.shape().to_string() +
                                  " does not fit " + std::to_string(examples) +
                                  " examples (expected one weight per example)");
    values_.emplace(host_);
    per_element_ = sample_weight.numel() != examples;
  }
  double operator[](Index i) const {
    if (!values_) return 1.0;
    return (*values_)[per_element_ ? i : i / per_example_];
  }

 private:
  Tensor host_;
  Index per_example_;
  bool per_element_ = false;
  std::optional<HostValues> values_;
};

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
  const Tensor yt = y_true.to(Device::cpu()), yp = y_pred.to(Device::cpu());
  const HostValues t(yt), p(yp);
  const Index numel = yp.numel();
  const Index cols = yp.rank() >= 2 ? yp.dim(-1) : 1, rows = numel / std::max<Index>(cols, 1);
  if (class_id_ && *class_id_ >= cols)
    throw std::invalid_argument(name() + ": class_id " + std::to_string(*class_id_) + " is out of range for " +
                                std::to_string(cols) + " classes");
  const ElementWeights w(name(), sample_weight, examples_of(yp), numel);
  std::vector<float> scores(static_cast<std::size_t>(cols));
  std::vector<Index> order(static_cast<std::size_t>(cols));
  for (Index r = 0; r < rows; ++r) {
    for (Index j = 0; j < cols; ++j) scores[j] = static_cast<float>(p[r * cols + j]);
    if (top_k_ && *top_k_ < cols) {
      // Keras' _filter_top_k: entries outside the k largest (equal scores: the lower index first) become -1e10.
      std::iota(order.begin(), order.end(), Index{0});
      std::stable_sort(order.begin(), order.end(), [&](Index a, Index b) { return scores[a] > scores[b]; });
      for (Index j = *top_k_; j < cols; ++j) scores[order[j]] = kNegInf;
    }
    for (Index j = 0; j < cols; ++j) {
      if (class_id_ && j != *class_id_) continue;
      const Index i = r * cols + j;
      const bool positive = t[i] != 0, predicted = scores[j] > threshold_;
      const double wi = w[i];
      if (positive && predicted) tp_ += wi;
      if (!positive && predicted) fp_ += wi;
      if (positive && !predicted) fn_ += wi;
    }
  }
}

void ThresholdCounts::merge_state(const Metric& other) {
  check_mergeable(*this, other);
  const auto& o = static_cast<const ThresholdCounts&>(other);
  tp_ += o.tp_;
  fp_ += o.fp_;
  fn_ += o.fn_;
}

}  // namespace detail

PrecisionImpl::PrecisionImpl(Options options) : MetricWithOptions(std::move(options)) {
  configure(options_.thresholds, options_.top_k, options_.class_id);
}

double PrecisionImpl::result() const {
  return divide_no_nan(true_positives(), true_positives() + false_positives());
}

RecallImpl::RecallImpl(Options options) : MetricWithOptions(std::move(options)) {
  configure(options_.thresholds, options_.top_k, options_.class_id);
}

double RecallImpl::result() const { return divide_no_nan(true_positives(), true_positives() + false_negatives()); }

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
  reset_state();
}

void AUCImpl::reset_state() {
  const auto n = static_cast<std::size_t>(options_.num_thresholds);
  tp_.assign(n, 0.0);
  fp_.assign(n, 0.0);
  tn_.assign(n, 0.0);
  fn_.assign(n, 0.0);
}

void AUCImpl::merge_state(const Metric& other) {
  detail::check_mergeable(*this, other);
  const auto& o = static_cast<const AUCImpl&>(other);
  for (std::size_t i = 0; i < tp_.size(); ++i) {
    tp_[i] += o.tp_[i];
    fp_[i] += o.fp_[i];
    tn_[i] += o.tn_[i];
    fn_[i] += o.fn_[i];
  }
}

// Keras' _update_confusion_matrix_variables_optimized for evenly spaced thresholds: a score p lies above threshold
// i exactly when its bucket ceil(p (T - 1)) - 1 (computed in float32, and at least 0) is >= i, so the counts are
// reverse cumulative sums of per-bucket sums.
void AUCImpl::update_state(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) {
  losses::detail::check_matching_shapes(name(), y_true.shape(), y_pred.shape());
  const Tensor yt = y_true.to(Device::cpu()), yp = y_pred.to(Device::cpu());
  const HostValues t(yt), p(yp);
  const Index numel = yp.numel();
  const ElementWeights w(name(), sample_weight, examples_of(yp), numel);
  const Index buckets = options_.num_thresholds;
  const float top = static_cast<float>(buckets - 1);
  std::vector<double> pos(static_cast<std::size_t>(buckets), 0.0), neg(static_cast<std::size_t>(buckets), 0.0);
  double total_pos = 0, total_neg = 0;
  for (Index i = 0; i < numel; ++i) {
    float score = static_cast<float>(p[i]);
    if (options_.from_logits) score = 1.f / (1.f + std::exp(-score));
    score = std::clamp(score, 0.f, 1.f);
    const Index bucket = std::max<Index>(static_cast<Index>(std::ceil(score * top) - 1.f), 0);
    const double wi = w[i];
    if (t[i] != 0) {
      pos[bucket] += wi;
      total_pos += wi;
    } else {
      neg[bucket] += wi;
      total_neg += wi;
    }
  }
  double cum_pos = 0, cum_neg = 0;
  for (Index i = buckets - 1; i >= 0; --i) {
    cum_pos += pos[i];
    cum_neg += neg[i];
    tp_[i] += cum_pos;
    fp_[i] += cum_neg;
    tn_[i] += total_neg - cum_neg;
    fn_[i] += total_pos - cum_pos;
  }
}

// Keras' AUC.interpolate_pr_auc (Davis & Goadrich 2006): precision interpolated linearly in the number of predicted
// positives between thresholds.
double AUCImpl::interpolate_pr_auc() const {
  double area = 0;
  for (std::size_t i = 0; i + 1 < tp_.size(); ++i) {
    const double p0 = tp_[i] + fp_[i], p1 = tp_[i + 1] + fp_[i + 1];
    const double dtp = tp_[i] - tp_[i + 1];
    const double slope = divide_no_nan(dtp, std::max(p0 - p1, 0.0));
    const double intercept = tp_[i + 1] - slope * p1;
    const double ratio = (p0 > 0 && p1 > 0) ? divide_no_nan(p0, std::max(p1, 0.0)) : 1.0;
    area += divide_no_nan(slope * (dtp + intercept * std::log(ratio)), std::max(tp_[i + 1] + fn_[i + 1], 0.0));
  }
  return area;
}

double AUCImpl::result() const {
  const bool pr = options_.curve == "PR";
  if (pr && options_.summation_method == "interpolation") return interpolate_pr_auc();
  const std::size_t n = tp_.size();
  std::vector<double> x(n), y(n);
  for (std::size_t i = 0; i < n; ++i) {
    const double recall = divide_no_nan(tp_[i], tp_[i] + fn_[i]);
    if (pr) {
      x[i] = recall;
      y[i] = divide_no_nan(tp_[i], tp_[i] + fp_[i]);
    } else {
      x[i] = divide_no_nan(fp_[i], fp_[i] + tn_[i]);
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

}  // namespace tower::metrics
