#pragma once
// Keras' regression metrics (keras/src/metrics/regression_metrics.py): the per-example values of the losses of the
// same names (tower::losses), averaged over examples weighted by sample_weight ([N]). Shapes as the losses take them.
//
//   MeanSquaredError             mean((y_pred - y_true)^2) over the last axis
//   MeanAbsoluteError            mean(|y_pred - y_true|) over the last axis
//   MeanAbsolutePercentageError  100 mean(|y_true - y_pred| / max(|y_true|, 1e-7)) over the last axis
//   MeanSquaredLogarithmicError  mean((log(max(y_pred, 1e-7) + 1) - log(max(y_true, 1e-7) + 1))^2)
//   LogCoshError                 mean(log(cosh(y_pred - y_true))) over the last axis (Keras' name "logcosh")
//   CosineSimilarity             sum(normalize(y_true) normalize(y_pred)) over axis (the last; the loss's value
//                                negated, so 1 is the best and direction() is up)
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
