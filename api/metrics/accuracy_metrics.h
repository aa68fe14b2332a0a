#pragma once
// Keras' accuracy metrics (keras/src/metrics/accuracy_metrics.py). Each averages a per-position match (1 or 0)
// over the positions of an example, then over examples weighted by sample_weight ([N]); result() in [0, 1].
//
//   Accuracy                        y_true == y_pred elementwise; same shape up to a trailing axis of 1.
//   BinaryAccuracy                  y_true == (y_pred > threshold ? 1 : 0) elementwise; shapes as Accuracy.
//   CategoricalAccuracy             argmax(y_true) == argmax(y_pred) over the last axis; y_true of y_pred's shape.
//   SparseCategoricalAccuracy       y_true == argmax(y_pred); y_true class indices [N, ...] or [N, ..., 1].
//   TopKCategoricalAccuracy         argmax(y_true) is among the k largest of y_pred; y_true of y_pred's shape.
//   SparseTopKCategoricalAccuracy   y_true is among the k largest of y_pred; y_true as SparseCategoricalAccuracy.
//
// argmax takes the first of equal maxima (TensorFlow's argmax). "Among the k largest" is TensorFlow's in_top_k:
// fewer than k classes score strictly higher than the target, so ties at the boundary count as in; a row with a
// non-finite score never matches. Sparse labels are int32, int64 or whole-number float32; a negative,
// out-of-range or non-integer label on the CPU throws std::invalid_argument naming it, its index and the class
// count (on a GPU it counts as a miss, as in Keras). SparseTopKCategoricalAccuracy's from_sorted_ids is not
// supported.
#include "api/metrics/mean.h"

namespace tower::metrics {

struct AccuracyOptions {
  std::string name = "accuracy";
  template <class V> void visit(V&& v) { v("name", name); }
};

struct BinaryAccuracyOptions {
  double threshold = 0.5;
  std::string name = "binary_accuracy";
  template <class V> void visit(V&& v) {
    v("threshold", threshold);
    v("name", name);
  }
};

struct CategoricalAccuracyOptions {
  std::string name = "categorical_accuracy";
  template <class V> void visit(V&& v) { v("name", name); }
};

struct SparseCategoricalAccuracyOptions {
  std::string name = "sparse_categorical_accuracy";
  template <class V> void visit(V&& v) { v("name", name); }
};

struct TopKCategoricalAccuracyOptions {
  int k = 5;
  std::string name = "top_k_categorical_accuracy";
  template <class V> void visit(V&& v) {
    v("k", k);
    v("name", name);
  }
};

struct SparseTopKCategoricalAccuracyOptions {
  int k = 5;
  std::string name = "sparse_top_k_categorical_accuracy";
  template <class V> void visit(V&& v) {
    v("k", k);
    v("name", name);
  }
};

class AccuracyImpl final
    : public detail::MetricWithOptions<AccuracyImpl, AccuracyOptions, detail::MeanMetricWrapper> {
 public:
  explicit AccuracyImpl(Options options = {}) : MetricWithOptions(std::move(options)) {}
  static const char* type_name() { return "Accuracy"; }

 protected:
  backend::MeanMetricParams prepare(const Tensor& y_true, const Tensor& y_pred, Tensor& values) override;
};

class BinaryAccuracyImpl final
    : public detail::MetricWithOptions<BinaryAccuracyImpl, BinaryAccuracyOptions, detail::MeanMetricWrapper> {
 public:
  explicit BinaryAccuracyImpl(Options options = {}) : MetricWithOptions(std::move(options)) {}
  static const char* type_name() { return "BinaryAccuracy"; }

 protected:
  backend::MeanMetricParams prepare(const Tensor& y_true, const Tensor& y_pred, Tensor& values) override;
};

class CategoricalAccuracyImpl final
    : public detail::MetricWithOptions<CategoricalAccuracyImpl, CategoricalAccuracyOptions,
                                       detail::MeanMetricWrapper> {
 public:
  explicit CategoricalAccuracyImpl(Options options = {}) : MetricWithOptions(std::move(options)) {}
  static const char* type_name() { return "CategoricalAccuracy"; }

 protected:
  backend::MeanMetricParams prepare(const Tensor& y_true, const Tensor& y_pred, Tensor& values) override;
};

class SparseCategoricalAccuracyImpl final
    : public detail::MetricWithOptions<SparseCategoricalAccuracyImpl, SparseCategoricalAccuracyOptions,
                                       detail::MeanMetricWrapper> {
 public:
  explicit SparseCategoricalAccuracyImpl(Options options = {}) : MetricWithOptions(std::move(options)) {}
  static const char* type_name() { return "SparseCategoricalAccuracy"; }

 protected:
  backend::MeanMetricParams prepare(const Tensor& y_true, const Tensor& y_pred, Tensor& values) override;
};

class TopKCategoricalAccuracyImpl final
    : public detail::MetricWithOptions<TopKCategoricalAccuracyImpl, TopKCategoricalAccuracyOptions,
                                       detail::MeanMetricWrapper> {
 public:
  // Throws std::invalid_argument if k < 1.
  explicit TopKCategoricalAccuracyImpl(Options options = {});
  static const char* type_name() { return "TopKCategoricalAccuracy"; }

 protected:
  backend::MeanMetricParams prepare(const Tensor& y_true, const Tensor& y_pred, Tensor& values) override;
};

class SparseTopKCategoricalAccuracyImpl final
    : public detail::MetricWithOptions<SparseTopKCategoricalAccuracyImpl, SparseTopKCategoricalAccuracyOptions,
                                       detail::MeanMetricWrapper> {
 public:
  // Throws std::invalid_argument if k < 1.
  explicit SparseTopKCategoricalAccuracyImpl(Options options = {});
  static const char* type_name() { return "SparseTopKCategoricalAccuracy"; }
  static Config::Map fixed_arguments() { return {{"dtype", "float32"}, {"from_sorted_ids", false}}; }

 protected:
  backend::MeanMetricParams prepare(const Tensor& y_true, const Tensor& y_pred, Tensor& values) override;
};

class Accuracy : public MetricHolder<AccuracyImpl> {
 public:
  using MetricHolder::MetricHolder;
};
class BinaryAccuracy : public MetricHolder<BinaryAccuracyImpl> {
 public:
  using MetricHolder::MetricHolder;
};
class CategoricalAccuracy : public MetricHolder<CategoricalAccuracyImpl> {
 public:
  using MetricHolder::MetricHolder;
};
class SparseCategoricalAccuracy : public MetricHolder<SparseCategoricalAccuracyImpl> {
 public:
  using MetricHolder::MetricHolder;
};
class TopKCategoricalAccuracy : public MetricHolder<TopKCategoricalAccuracyImpl> {
 public:
  using MetricHolder::MetricHolder;
};
class SparseTopKCategoricalAccuracy : public MetricHolder<SparseTopKCategoricalAccuracyImpl> {
 public:
  using MetricHolder::MetricHolder;
};

}  // namespace tower::metrics
