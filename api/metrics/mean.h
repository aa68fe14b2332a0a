#pragma once
// Mean (keras.metrics.Mean): the weighted mean of the values it is given, and detail::MeanMetricWrapper, the base
// of every metric that averages a per-example value of (y_true, y_pred) (Keras' MeanMetricWrapper).
//
// A batch of values [N, ...] adds one entry per example: the mean of that example's values, weighted by its sample
// weight (1 without weights); result() = sum(w * entry) / sum(w), 0 before any update.
#include "api/losses/device_doubles.h"
#include "api/metrics/metric.h"

namespace tower::metrics {

namespace detail {

// total / count, the state of Mean and of every MeanMetricWrapper metric.
class WeightedMean : public Metric {
 public:
  using Metric::Metric;
  double result() const override;
  void reset_state() override { state_.zero(); }
  void merge_state(const Metric& other) override;
  double total() const;
  double count() const;

 protected:
  // Adds a batch through the backend of y_pred's device: p gives the kind of value and the positions; examples and
  // the weight layout come from y_pred and sample_weight (undefined, one weight per example, or one per position:
  // Keras then weights each value and counts the example's mean weight; another count throws
  // std::invalid_argument).
  void accumulate(backend::MeanMetricParams p, const Tensor& y_true, const Tensor& y_pred,
                  const Tensor& sample_weight);
  // total += value * weight, count += weight.
  void add(double value, double weight);

 private:
  losses::detail::DeviceDoubles state_;  // {total, count}
};

// Keras' MeanMetricWrapper: one value per position of each example ([N, ...] flattened), and each example
// contributes the mean over its positions.
class MeanMetricWrapper : public WeightedMean {
 public:
  using WeightedMean::WeightedMean;
  // y_pred's first axis is the batch; sample_weight undefined or one weight per example.
  void update_state(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight = Tensor()) final;

 protected:
  // Checks the shapes and labels (std::invalid_argument naming them) and gives the op's kind, positions and
  // classes for this batch. `values` is what the op reads as y_pred: y_pred itself, or the values the metric
  // averages (a loss's per-example values).
  virtual backend::MeanMetricParams prepare(const Tensor& y_true, const Tensor& y_pred, Tensor& values) = 0;
};

}  // namespace detail

struct MeanOptions {
  std::string name = "mean";
  template <class V> void visit(V&& v) { v("name", name); }
};

class MeanImpl final : public detail::MetricWithOptions<MeanImpl, MeanOptions, detail::WeightedMean> {
 public:
  explicit MeanImpl(Options options = {}) : MetricWithOptions(std::move(options)) {}
  static const char* type_name() { return "Mean"; }

  // One value with its weight.
  void update(double value, double weight = 1.0);
  // values: [N, ...] (a scalar is one example), any dtype Tensor holds; sample_weight: undefined, [N] or values'
  // shape. Throws std::invalid_argument for another weight count.
  void update_state(const Tensor& values, const Tensor& sample_weight = Tensor());
  // Mean averages values, not predictions (Keras' Mean takes no y_pred either): throws std::invalid_argument.
  // Use update_state(values), or a metric of predictions such as MeanSquaredError.
  void update_state(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) override;
};

class Mean : public MetricHolder<MeanImpl> {
 public:
  using MetricHolder::MetricHolder;
};

}  // namespace tower::metrics
