#pragma once
// Keras' confusion-matrix metrics (keras/src/metrics/confusion_metrics.py) on binary labels: y_true is positive
// where it is non-zero; y_pred holds scores of y_true's shape (up to a trailing axis of 1). Every element is one
// decision, weighted by its example's sample_weight ([N]) or by its own weight (sample_weight of y_pred's size).
//
//   TruePositives, FalsePositives,   the weighted count of one condition at one threshold: an element is predicted
//   TrueNegatives, FalseNegatives    positive where y_pred > thresholds (default 0.5)
//   Precision                        tp / (tp + fp) at one threshold
//   Recall                           tp / (tp + fn) at one threshold
//   AUC                              the area under the ROC or precision-recall curve over num_thresholds
//                                    thresholds evenly spaced in [0, 1] (the end points moved out by 1e-7), with
//                                    Keras' summation methods; y_pred is clipped to [0, 1] (after a sigmoid with
//                                    from_logits)
//   SensitivityAtSpecificity         the best of one rate at the thresholds where another reaches `value`
//   SpecificityAtSensitivity         (Keras' SensitivitySpecificityBase): num_thresholds thresholds i / (T - 1)
//   PrecisionAtRecall                in [0, 1] (0.5 alone when num_thresholds is 1), y_pred clipped to [0, 1], a
//   RecallAtPrecision                score above threshold i as AUC buckets it (a score of 0 above none); 0 when
//                                    no threshold reaches the value. Sensitivity is recall, tp / (tp + fn);
//                                    specificity tn / (tn + fp). `value` (specificity, sensitivity, recall,
//                                    precision) must be in [0, 1].
//
// Precision and Recall take Keras' top_k (only the k largest scores of each row of the last axis can be positive;
// the threshold then defaults to -1e10); they and the sensitivity metrics take class_id (only column class_id of
// the last axis counts). Tower's result() is one number, so `thresholds` is one value in [0, 1] (null: 0.5, or
// -1e10 with top_k); Keras' lists of thresholds are not supported (a config with one throws ConfigError). AUC
// supports curve "ROC" and "PR", summation_method "interpolation", "minoring" and "majoring", from_logits, and
// Keras' multi-label arguments: multi_label (y_pred [N, labels]; one curve per column, their areas averaged, or
// weighted by label_weights), num_labels (the columns, known before the first batch; else taken from it) and
// label_weights (one weight per column: without multi_label each column's decisions are weighted by it). Keras'
// explicit thresholds and the "PRGAIN" curve are not supported (a config setting them throws ConfigError).
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
  bool multi_label = false;
  std::optional<int> num_labels;                   // only with multi_label
  std::optional<std::vector<double>> label_weights;
  std::string name = "auc";
  template <class V> void visit(V&& v) {
    v("num_thresholds", num_thresholds);
    v("curve", curve);
    v("summation_method", summation_method);
    v("from_logits", from_logits);
    v("multi_label", multi_label);
    v("num_labels", num_labels);
    v("label_weights", label_weights);
    v("name", name);
  }
};

// TruePositives, FalsePositives, TrueNegatives, FalseNegatives.
struct TruePositivesOptions {
  std::optional<double> thresholds;
  std::string name = "true_positives";
  template <class V> void visit(V&& v) {
    v("thresholds", thresholds);
    v("name", name);
  }
};

struct FalsePositivesOptions {
  std::optional<double> thresholds;
  std::string name = "false_positives";
  template <class V> void visit(V&& v) {
    v("thresholds", thresholds);
    v("name", name);
  }
};

struct TrueNegativesOptions {
  std::optional<double> thresholds;
  std::string name = "true_negatives";
  template <class V> void visit(V&& v) {
    v("thresholds", thresholds);
    v("name", name);
  }
};

struct FalseNegativesOptions {
  std::optional<double> thresholds;
  std::string name = "false_negatives";
  template <class V> void visit(V&& v) {
    v("thresholds", thresholds);
    v("name", name);
  }
};

// The value each sensitivity metric is asked for is required, as in Keras (a missing one throws).
struct SensitivityAtSpecificityOptions {
  std::optional<double> specificity;
  int num_thresholds = 200;
  std::optional<int> class_id;
  std::string name = "sensitivity_at_specificity";
  template <class V> void visit(V&& v) {
    v("specificity", specificity);
    v("num_thresholds", num_thresholds);
    v("class_id", class_id);
    v("name", name);
  }
};

struct SpecificityAtSensitivityOptions {
  std::optional<double> sensitivity;
  int num_thresholds = 200;
  std::optional<int> class_id;
  std::string name = "specificity_at_sensitivity";
  template <class V> void visit(V&& v) {
    v("sensitivity", sensitivity);
    v("num_thresholds", num_thresholds);
    v("class_id", class_id);
    v("name", name);
  }
};

struct PrecisionAtRecallOptions {
  std::optional<double> recall;
  int num_thresholds = 200;
  std::optional<int> class_id;
  std::string name = "precision_at_recall";
  template <class V> void visit(V&& v) {
    v("recall", recall);
    v("num_thresholds", num_thresholds);
    v("class_id", class_id);
    v("name", name);
  }
};

struct RecallAtPrecisionOptions {
  std::optional<double> precision;
  int num_thresholds = 200;
  std::optional<int> class_id;
  std::string name = "recall_at_precision";
  template <class V> void visit(V&& v) {
    v("precision", precision);
    v("num_thresholds", num_thresholds);
    v("class_id", class_id);
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
  double true_negatives() const { return counts()[2]; }
  double false_negatives() const { return counts()[3]; }

 protected:
  // Throws std::invalid_argument for a threshold outside [0, 1], top_k < 1 or class_id < 0.
  void configure(std::optional<double> threshold, std::optional<int> top_k, std::optional<int> class_id);
  // {tp, fp, tn, fn}, read from the device.
  std::vector<double> counts() const;

 private:
  float threshold_ = 0.5f;  // Keras compares in float32
  std::optional<int> top_k_, class_id_;
  losses::detail::DeviceDoubles state_;  // {tp, fp, tn, fn}
};

// One condition count of ThresholdCounts as the result (TruePositives, ...): Condition is 0 tp, 1 fp, 2 tn, 3 fn.
template <class Derived, class OptionsT, int Condition>
class ConditionCount : public MetricWithOptions<Derived, OptionsT, ThresholdCounts> {
 public:
  // Throws std::invalid_argument for a threshold outside [0, 1].
  explicit ConditionCount(OptionsT options)
      : MetricWithOptions<Derived, OptionsT, ThresholdCounts>(std::move(options)) {
    this->configure(this->options_.thresholds, std::nullopt, std::nullopt);
  }
  double result() const override { return this->counts()[Condition]; }
};

// The confusion counts at num_thresholds evenly spaced thresholds, the state of the sensitivity metrics; result()
// is the best of `dependent` where `constrained` >= value (Keras' _find_max_under_constraint), 0 where none is.
class SensitivitySpecificityBase : public Metric {
 public:
  using Metric::Metric;
  void update_state(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight = Tensor()) override;
  void reset_state() override { state_.zero(); }
  void merge_state(const Metric& other) override;

 protected:
  enum class Rate { sensitivity, specificity, precision };
  // Throws std::invalid_argument naming `key` for a missing value or one outside [0, 1], for num_thresholds < 1
  // and class_id < 0.
  void configure(const char* key, std::optional<double> value, int num_thresholds, std::optional<int> class_id);
  double best(Rate dependent, Rate constrained) const;

 private:
  float value_ = 0;  // Keras compares in float32
  int num_thresholds_ = 200;
  std::optional<int> class_id_;
  losses::detail::DeviceDoubles state_;  // [tp | fp | tn | fn], num_thresholds each
};

}  // namespace detail

class TruePositivesImpl final : public detail::ConditionCount<TruePositivesImpl, TruePositivesOptions, 0> {
 public:
  using ConditionCount::ConditionCount;
  static const char* type_name() { return "TruePositives"; }
};

class FalsePositivesImpl final : public detail::ConditionCount<FalsePositivesImpl, FalsePositivesOptions, 1> {
 public:
  using ConditionCount::ConditionCount;
  static const char* type_name() { return "FalsePositives"; }
};

class TrueNegativesImpl final : public detail::ConditionCount<TrueNegativesImpl, TrueNegativesOptions, 2> {
 public:
  using ConditionCount::ConditionCount;
  static const char* type_name() { return "TrueNegatives"; }
};

class FalseNegativesImpl final : public detail::ConditionCount<FalseNegativesImpl, FalseNegativesOptions, 3> {
 public:
  using ConditionCount::ConditionCount;
  static const char* type_name() { return "FalseNegatives"; }
};

class SensitivityAtSpecificityImpl final
    : public detail::MetricWithOptions<SensitivityAtSpecificityImpl, SensitivityAtSpecificityOptions,
                                       detail::SensitivitySpecificityBase> {
 public:
  explicit SensitivityAtSpecificityImpl(Options options = {});
  static const char* type_name() { return "SensitivityAtSpecificity"; }
  double result() const override { return best(Rate::sensitivity, Rate::specificity); }
};

class SpecificityAtSensitivityImpl final
    : public detail::MetricWithOptions<SpecificityAtSensitivityImpl, SpecificityAtSensitivityOptions,
                                       detail::SensitivitySpecificityBase> {
 public:
  explicit SpecificityAtSensitivityImpl(Options options = {});
  static const char* type_name() { return "SpecificityAtSensitivity"; }
  double result() const override { return best(Rate::specificity, Rate::sensitivity); }
};

class PrecisionAtRecallImpl final
    : public detail::MetricWithOptions<PrecisionAtRecallImpl, PrecisionAtRecallOptions,
                                       detail::SensitivitySpecificityBase> {
 public:
  explicit PrecisionAtRecallImpl(Options options = {});
  static const char* type_name() { return "PrecisionAtRecall"; }
  double result() const override { return best(Rate::precision, Rate::sensitivity); }
};

class RecallAtPrecisionImpl final
    : public detail::MetricWithOptions<RecallAtPrecisionImpl, RecallAtPrecisionOptions,
                                       detail::SensitivitySpecificityBase> {
 public:
  explicit RecallAtPrecisionImpl(Options options = {});
  static const char* type_name() { return "RecallAtPrecision"; }
  double result() const override { return best(Rate::sensitivity, Rate::precision); }
};

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
  // Throws std::invalid_argument for num_thresholds < 2, an unknown curve or summation_method (Keras' spellings
  // "roc"/"pr" and "Interpolation"/... are accepted and normalised), num_labels without multi_label or < 1, and a
  // negative label weight. update_state throws std::invalid_argument for y_pred not [N, labels] with multi_label,
  // and for label_weights or num_labels that do not match y_pred's last axis.
  explicit AUCImpl(Options options = {});
  static const char* type_name() { return "AUC"; }
  static Config::Map fixed_arguments() { return {{"dtype", "float32"}, {"thresholds", Config()}}; }

  void update_state(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight = Tensor()) override;
  double result() const override;
  void reset_state() override;
  void merge_state(const Metric& other) override;
  // The counts at each threshold, Keras' variables of the same names, read from the device; with multi_label,
  // label by label (label l's counts at [l * num_thresholds, (l + 1) * num_thresholds)).
  std::vector<double> true_positives() const { return counts(0); }
  std::vector<double> false_positives() const { return counts(1); }
  std::vector<double> true_negatives() const { return counts(2); }
  std::vector<double> false_negatives() const { return counts(3); }

 private:
  // Counts k of [tp | fp | tn | fn].
  std::vector<double> counts(int k) const;
  // The area of one label's curve from its counts.
  double area(const std::vector<double>& tp, const std::vector<double>& fp, const std::vector<double>& tn,
              const std::vector<double>& fn) const;
  Index labels_ = 1;                     // the columns with multi_label, known from num_labels or the first batch
  Tensor label_weights_;                 // on the device of the last update
  losses::detail::DeviceDoubles state_;  // [tp | fp | tn | fn], labels_ * num_thresholds each
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
class TruePositives : public MetricHolder<TruePositivesImpl> {
 public:
  using MetricHolder::MetricHolder;
};
class FalsePositives : public MetricHolder<FalsePositivesImpl> {
 public:
  using MetricHolder::MetricHolder;
};
class TrueNegatives : public MetricHolder<TrueNegativesImpl> {
 public:
  using MetricHolder::MetricHolder;
};
class FalseNegatives : public MetricHolder<FalseNegativesImpl> {
 public:
  using MetricHolder::MetricHolder;
};
class SensitivityAtSpecificity : public MetricHolder<SensitivityAtSpecificityImpl> {
 public:
  using MetricHolder::MetricHolder;
};
class SpecificityAtSensitivity : public MetricHolder<SpecificityAtSensitivityImpl> {
 public:
  using MetricHolder::MetricHolder;
};
class PrecisionAtRecall : public MetricHolder<PrecisionAtRecallImpl> {
 public:
  using MetricHolder::MetricHolder;
};
class RecallAtPrecision : public MetricHolder<RecallAtPrecisionImpl> {
 public:
  using MetricHolder::MetricHolder;
};

}  // namespace tower::metrics
