#pragma once
// Keras' regression metrics (keras/src/metrics/regression_metrics.py): the per-example values of the losses of the
// same names (tower::losses), averaged over examples weighted by sample_weight ([N]). Shapes as the losses take them.
//
//   MeanSquaredError             mean((y_pred - y_true)^2) over the last axis
//   MeanAbsoluteError            mean(|y_pred - y_true|) over the last axis
//   RootMeanSquaredError         the square root of MeanSquaredError's result
//   MeanAbsolutePercentageError  100 mean(|y_true - y_pred| / max(|y_true|, 1e-7)) over the last axis
//   MeanSquaredLogarithmicError  mean((log(max(y_pred, 1e-7) + 1) - log(max(y_true, 1e-7) + 1))^2)
//   LogCoshError                 mean(log(cosh(y_pred - y_true))) over the last axis (Keras' name "logcosh")
//   CosineSimilarity             sum(normalize(y_true) normalize(y_pred)) over axis (the last; the loss's value
//                                negated, so 1 is the best and direction() is up)
//
// R2Score (Keras' R2Score), the coefficient of determination of y_pred [N, outputs] against y_true of its shape (up
// to a trailing axis of 1 on either side), per output over every batch with weights w (sample_weight [N] or
// [N, outputs]): 1 - sum w (t - p)^2 / (sum w t^2 - (sum w t)^2 / sum w), an infinite value taken as 0.
// class_aggregation "uniform_average" (default) averages the outputs, "variance_weighted_average" weights each by
// its total variance, null keeps one value per output (results(); result() then throws std::logic_error). With
// num_regressors p > 0 and n the number of values seen (N * outputs over the batches), the adjusted
// 1 - (1 - R2) (n - 1) / (n - p - 1), or R2 itself where p >= n - 1 (Keras warns there). The constructor throws
// std::invalid_argument for another class_aggregation or p < 0; update_state for inputs not [N, outputs] or outputs
// that change between batches.
#include <optional>

#include "api/losses/loss.h"
#include "api/metrics/mean.h"

namespace tower::metrics {

namespace detail {

// A MeanMetricWrapper over a loss's per-example values, negated where the metric is the loss's opposite.
class LossMean : public MeanMetricWrapper {
 public:
  using MeanMetricWrapper::MeanMetricWrapper;

 protected:
  // The loss whose values the metric averages; derived constructors call it once.
  void set_loss(losses::LossPtr loss, bool negate = false);
  backend::MeanMetricParams prepare(const Tensor& y_true, const Tensor& y_pred, Tensor& values) override;

 private:
  losses::LossPtr loss_;
  bool negate_ = false;
  Tensor per_example_;
};

}  // namespace detail

struct MeanSquaredErrorOptions {
  std::string name = "mean_squared_error";
  template <class V> void visit(V&& v) { v("name", name); }
};

struct MeanAbsoluteErrorOptions {
  std::string name = "mean_absolute_error";
  template <class V> void visit(V&& v) { v("name", name); }
};

struct MeanAbsolutePercentageErrorOptions {
  std::string name = "mean_absolute_percentage_error";
  template <class V> void visit(V&& v) { v("name", name); }
};

struct MeanSquaredLogarithmicErrorOptions {
  std::string name = "mean_squared_logarithmic_error";
  template <class V> void visit(V&& v) { v("name", name); }
};

struct LogCoshErrorOptions {
  std::string name = "logcosh";
  template <class V> void visit(V&& v) { v("name", name); }
};

struct CosineSimilarityOptions {
  int axis = -1;
  std::string name = "cosine_similarity";
  template <class V> void visit(V&& v) {
    v("axis", axis);
    v("name", name);
  }
};

class MeanSquaredErrorImpl final
    : public detail::MetricWithOptions<MeanSquaredErrorImpl, MeanSquaredErrorOptions, detail::LossMean> {
 public:
  explicit MeanSquaredErrorImpl(Options options = {});
  static const char* type_name() { return "MeanSquaredError"; }
};

struct RootMeanSquaredErrorOptions {
  std::string name = "root_mean_squared_error";
  template <class V> void visit(V&& v) { v("name", name); }
};

struct R2ScoreOptions {
  std::optional<std::string> class_aggregation = "uniform_average";
  int num_regressors = 0;
  std::string name = "r2_score";
  template <class V> void visit(V&& v) {
    v("class_aggregation", class_aggregation);
    v("num_regressors", num_regressors);
    v("name", name);
  }
};

class RootMeanSquaredErrorImpl final
    : public detail::MetricWithOptions<RootMeanSquaredErrorImpl, RootMeanSquaredErrorOptions, detail::LossMean> {
 public:
  explicit RootMeanSquaredErrorImpl(Options options = {});
  static const char* type_name() { return "RootMeanSquaredError"; }
  double result() const override;
};

class R2ScoreImpl final : public detail::MetricWithOptions<R2ScoreImpl, R2ScoreOptions> {
 public:
  explicit R2ScoreImpl(Options options = {});
  static const char* type_name() { return "R2Score"; }
  void update_state(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight = Tensor()) override;
  double result() const override;
  std::vector<double> results() const override;
  void reset_state() override { state_.zero(); }
  void merge_state(const Metric& other) override;

 private:
  Index outputs_ = 0;                    // known from the first batch
  losses::detail::DeviceDoubles state_;  // [sum w t | sum w t^2 | sum w (t - p)^2 | sum w], outputs_ each; n
};

class MeanSquaredError : public MetricHolder<MeanSquaredErrorImpl> {
 public:
  using MetricHolder::MetricHolder;
};

class MeanAbsoluteErrorImpl final
    : public detail::MetricWithOptions<MeanAbsoluteErrorImpl, MeanAbsoluteErrorOptions, detail::LossMean> {
 public:
  explicit MeanAbsoluteErrorImpl(Options options = {});
  static const char* type_name() { return "MeanAbsoluteError"; }
};

class MeanAbsoluteError : public MetricHolder<MeanAbsoluteErrorImpl> {
 public:
  using MetricHolder::MetricHolder;
};
class RootMeanSquaredError : public MetricHolder<RootMeanSquaredErrorImpl> {
 public:
  using MetricHolder::MetricHolder;
};
class R2Score : public MetricHolder<R2ScoreImpl> {
 public:
  using MetricHolder::MetricHolder;
};

class MeanAbsolutePercentageErrorImpl final
    : public detail::MetricWithOptions<MeanAbsolutePercentageErrorImpl, MeanAbsolutePercentageErrorOptions,
                                       detail::LossMean> {
 public:
  explicit MeanAbsolutePercentageErrorImpl(Options options = {});
  static const char* type_name() { return "MeanAbsolutePercentageError"; }
};

class MeanAbsolutePercentageError : public MetricHolder<MeanAbsolutePercentageErrorImpl> {
 public:
  using MetricHolder::MetricHolder;
};

class MeanSquaredLogarithmicErrorImpl final
    : public detail::MetricWithOptions<MeanSquaredLogarithmicErrorImpl, MeanSquaredLogarithmicErrorOptions,
                                       detail::LossMean> {
 public:
  explicit MeanSquaredLogarithmicErrorImpl(Options options = {});
  static const char* type_name() { return "MeanSquaredLogarithmicError"; }
};

class MeanSquaredLogarithmicError : public MetricHolder<MeanSquaredLogarithmicErrorImpl> {
 public:
  using MetricHolder::MetricHolder;
};

class LogCoshErrorImpl final
    : public detail::MetricWithOptions<LogCoshErrorImpl, LogCoshErrorOptions, detail::LossMean> {
 public:
  explicit LogCoshErrorImpl(Options options = {});
  static const char* type_name() { return "LogCoshError"; }
};

class LogCoshError : public MetricHolder<LogCoshErrorImpl> {
 public:
  using MetricHolder::MetricHolder;
};

class CosineSimilarityImpl final
    : public detail::MetricWithOptions<CosineSimilarityImpl, CosineSimilarityOptions, detail::LossMean> {
 public:
  explicit CosineSimilarityImpl(Options options = {});
  static const char* type_name() { return "CosineSimilarity"; }
};

class CosineSimilarity : public MetricHolder<CosineSimilarityImpl> {
 public:
  using MetricHolder::MetricHolder;
};

}  // namespace tower::metrics
