#include "api/metrics/accuracy_metrics.h"

#include <algorithm>
#include <stdexcept>

namespace tower::metrics {

namespace {

using Kind = backend::MeanMetricParams::Kind;

void require_positive_k(const std::string& who, int k) {
  if (k < 1) throw std::invalid_argument(who + ": k must be >= 1, got " + std::to_string(k));
}

// One position per row of the last axis.
backend::MeanMetricParams per_row(Kind kind, const Tensor& y_pred) {
  const Index classes = y_pred.dim(-1);
  return {.kind = kind, .positions = y_pred.numel() / std::max<Index>(classes, 1), .classes = classes};
}

}  // namespace

backend::MeanMetricParams AccuracyImpl::prepare(const Tensor& y_true, const Tensor& y_pred, Tensor&) {
  losses::detail::check_matching_shapes(name(), y_true.shape(), y_pred.shape());
  return {.kind = Kind::accuracy, .positions = y_pred.numel()};
}

backend::MeanMetricParams BinaryAccuracyImpl::prepare(const Tensor& y_true, const Tensor& y_pred, Tensor&) {
  losses::detail::check_matching_shapes(name(), y_true.shape(), y_pred.shape());
  // Keras compares in float32.
  return {.kind = Kind::binary_accuracy, .positions = y_pred.numel(),
          .threshold = static_cast<float>(options_.threshold)};
}

backend::MeanMetricParams CategoricalAccuracyImpl::prepare(const Tensor& y_true, const Tensor& y_pred, Tensor&) {
  losses::detail::check_categorical_shapes(name(), y_true.shape(), y_pred.shape());
  return per_row(Kind::categorical_accuracy, y_pred);
}

backend::MeanMetricParams SparseCategoricalAccuracyImpl::prepare(const Tensor& y_true, const Tensor& y_pred,
                                                                 Tensor&) {
  losses::detail::check_sparse_shapes(name(), y_true.shape(), y_pred.shape());
  losses::detail::check_class_labels(y_true, y_pred.dim(-1), name());
  return per_row(Kind::sparse_categorical_accuracy, y_pred);
}

TopKCategoricalAccuracyImpl::TopKCategoricalAccuracyImpl(Options options) : MetricWithOptions(std::move(options)) {
  require_positive_k(name(), options_.k);
}

backend::MeanMetricParams TopKCategoricalAccuracyImpl::prepare(const Tensor& y_true, const Tensor& y_pred, Tensor&) {
  losses::detail::check_categorical_shapes(name(), y_true.shape(), y_pred.shape());
  losses::detail::require_float32(y_pred, name(), "y_pred");
  backend::MeanMetricParams p = per_row(Kind::top_k_categorical_accuracy, y_pred);
  p.k = options_.k;
  return p;
}

SparseTopKCategoricalAccuracyImpl::SparseTopKCategoricalAccuracyImpl(Options options)
    : MetricWithOptions(std::move(options)) {
  require_positive_k(name(), options_.k);
}

backend::MeanMetricParams SparseTopKCategoricalAccuracyImpl::prepare(const Tensor& y_true, const Tensor& y_pred,
                                                                     Tensor&) {
  losses::detail::check_sparse_shapes(name(), y_true.shape(), y_pred.shape());
  losses::detail::require_float32(y_pred, name(), "y_pred");
  losses::detail::check_class_labels(y_true, y_pred.dim(-1), name());
  backend::MeanMetricParams p = per_row(Kind::sparse_top_k_categorical_accuracy, y_pred);
  p.k = options_.k;
  return p;
}

}  // namespace tower::metrics
