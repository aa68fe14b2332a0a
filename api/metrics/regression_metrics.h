#pragma once
// Keras' regression metrics (keras/src/metrics/regression_metrics.py): the per-example values of the losses of the
// same names (tower::losses), averaged over examples weighted by sample_weight ([N]). Shapes as the losses take them.
//
//   MeanSquaredError    mean((y_pred - y_true)^2) over the last axis
//   MeanAbsoluteError   mean(|y_pred - y_true|) over the last axis
#include "api/metrics/mean.h"

namespace tower::metrics {

struct MeanSquaredErrorOptions {
  std::string name = "mean_squared_error";
  template <class V> void visit(V&& v) { v("name", name); }
};

struct MeanAbsoluteErrorOptions {
  std::string name = "mean_absolute_error";
  template <class V> void visit(V&& v) { v("name", name); }
};

class MeanSquaredErrorImpl final
    : public detail::MetricWithOptions<MeanSquaredErrorImpl, MeanSquaredErrorOptions, detail::MeanMetricWrapper> {
 public:
  explicit MeanSquaredErrorImpl(Options options = {});
  static const char* type_name() { return "MeanSquaredError"; }

 protected:
  backend::MeanMetricParams prepare(const Tensor& y_true, const Tensor& y_pred, Tensor& values) override;

 private:
  losses::LossPtr loss_;
  Tensor per_example_;
};

class MeanAbsoluteErrorImpl final
    : public detail::MetricWithOptions<MeanAbsoluteErrorImpl, MeanAbsoluteErrorOptions, detail::MeanMetricWrapper> {
 public:
  explicit MeanAbsoluteErrorImpl(Options options = {});
  static const char* type_name() { return "MeanAbsoluteError"; }

 protected:
  backend::MeanMetricParams prepare(const Tensor& y_true, const Tensor& y_pred, Tensor& values) override;

 private:
  losses::LossPtr loss_;
  Tensor per_example_;
};

class MeanSquaredError : public MetricHolder<MeanSquaredErrorImpl> {
 public:
  using MetricHolder::MetricHolder;
};
class MeanAbsoluteError : public MetricHolder<MeanAbsoluteErrorImpl> {
 public:
  using MetricHolder::MetricHolder;
};

}  // namespace tower::metrics
