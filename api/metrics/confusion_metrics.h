#pragma once
// Keras' confusion-matrix metrics (keras/src/metrics/confusion_metrics.py) on binary labels: y_true is positive
// where it is non-zero; y_pred holds scores of y_true's shape (up to a trailing axis of 1). Every element is one
// decision, weighted by its example's sample_weight ([N]).
//
//   Precision   tp / (tp + fp) at one threshold: an element is predicted positive where y_pred > threshold.
//   Recall      tp / (tp + fn) at one threshold.
//   AUC         the area under the ROC or precision-recall curve over num_thresholds thresholds evenly spaced
//               in [0, 1] (the end points moved out by 1e-7), with Keras' summation methods; y_pred is clipped
//               to [0, 1] (after a sigmoid with from_logits).
//
// Precision and Recall take Keras' top_k (only the k largest scores of each row of the last axis can be positive;
// the threshold then defaults to -1e10) and class_id (only column class_id of the last axis counts). Tower's
// result() is one number, so `thresholds` is one value in [0, 1] (null: 0.5, or -1e10 with top_k); Keras' lists
// of thresholds are not supported. AUC supports curve "ROC" and "PR", summation_method "interpolation",
// "minoring" and "majoring", and from_logits; Keras' multi_label, num_labels, label_weights, explicit thresholds
// and the "PRGAIN" curve are not supported (a config setting them throws ConfigError).
#include <optional>
#include <vector>

#include "api/metrics/metric.h"

namespace tower::metrics {

struct PrecisionOptions {
  std::optional<double> thresholds;
  std::optional<int> top_k;
  std::optional<int> class_id;
  std::string name = "precision";
  template <class V> void visit(V&& v) {
    v("thresholds", thresholds);
    v("top_k", top_k);
    v("class_id", class_id);
    v("name", name);
  }
};

struct RecallOptions {
  std::optional<double> thresholds;
  std::optional<int> top_k;
  std::optional<int> class_id;
  std::string name = "recall";
  template <class V> void visit(V&& v) {
    v("thresholds", thresholds);
    v("top_k", top_k);
    v("class_id", class_id);
    v("name", name);
  }
};

struct AUCOptions {
  int num_thresholds = 200;
  std::string curve = "ROC";                      // "ROC" or "PR"
  std::string summation_method = "interpolation";  // "interpolation", "minoring" or "majoring"
  bool from_logits = false;
  std::string name = "auc";
  template <class V> void visit(V&& v) {
    v("num_thresholds", num_thresholds);
    v("curve", curve);
    v("summation_method", summation_method);
    v("from_logits", from_logits);
    v("name", name);
  }
};

namespace detail {

// Weighted true/false positive/negative counts at one threshold: the state of Precision and Recall.
class ThresholdCounts : public Metric {
 public:
  using Metric::Metric;
  void update_state(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight = Tensor()) override;
  void reset_state() override { state_.zero(); }
  void merge_state(const Metric& other) override;
  double true_positives() const { return counts()[0]; }
  double false_positives() const { return counts()[1]; }
  double false_negatives() const { return counts()[2]; }

 protected:
  // Throws std::invalid_argument for a threshold outside [0, 1], top_k < 1 or class_id < 0.
  void configure(std::optional<double> threshold, std::optional<int> top_k, std::optional<int> class_id);
  // {tp, fp, fn}, read from the device.
  std::vector<double> counts() const;

 private:
  float threshold_ = 0.5f;  // Keras compares in float32
  std::optional<int> top_k_, class_id_;
  losses::detail::DeviceDoubles state_;  // {tp, fp, fn}
};

}  // namespace detail

class PrecisionImpl final : public detail::MetricWithOptions<PrecisionImpl, PrecisionOptions, detail::ThresholdCounts> {
 public:
  explicit PrecisionImpl(Options options = {});
  static const char* type_name() { return "Precision"; }
  double result() const override;
};

class RecallImpl final : public detail::MetricWithOptions<RecallImpl, RecallOptions, detail::ThresholdCounts> {
 public:
  explicit RecallImpl(Options options = {});
  static const char* type_name() { return "Recall"; }
  double result() const override;
};

class AUCImpl final : public detail::MetricWithOptions<AUCImpl, AUCOptions> {
 public:
  // Throws std::invalid_argument for num_thresholds < 2 or an unknown curve or summation_method (Keras' spellings
  // "roc"/"pr" and "Interpolation"/... are accepted and normalised).
  explicit AUCImpl(Options options = {});
  static const char* type_name() { return "AUC"; }
  static Config::Map fixed_arguments() {
    return {{"dtype", "float32"}, {"multi_label", false}, {"num_labels", Config()}, {"label_weights", Config()},
            {"thresholds", Config()}};
  }

  void update_state(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight = Tensor()) override;
  double result() const override;
  void reset_state() override;
  void merge_state(const Metric& other) override;
  // The counts at each threshold, Keras' variables of the same names, read from the device.
  std::vector<double> true_positives() const { return counts(0); }
  std::vector<double> false_positives() const { return counts(1); }
  std::vector<double> true_negatives() const { return counts(2); }
  std::vector<double> false_negatives() const { return counts(3); }

 private:
  // Counts k of [tp | fp | tn | fn].
  std::vector<double> counts(int k) const;
  losses::detail::DeviceDoubles state_;  // [tp | fp | tn | fn], num_thresholds each
};

class Precision : public MetricHolder<PrecisionImpl> {
 public:
  using MetricHolder::MetricHolder;
};
class Recall : public MetricHolder<RecallImpl> {
 public:
  using MetricHolder::MetricHolder;
};
class AUC : public MetricHolder<AUCImpl> {
 public:
  using MetricHolder::MetricHolder;
};

}  // namespace tower::metrics
