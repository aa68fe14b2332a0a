#include "api/metrics/accuracy_metrics.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace tower::metrics {

namespace {

using losses::detail::HostValues;

// The first index of the largest value of a row (TensorFlow's argmax).
template <class Row>
Index argmax(const Row& row, Index begin, Index cols) {
  Index best = 0;
  for (Index j = 1; j < cols; ++j)
    if (row[begin + j] > row[begin + best]) best = j;
  return best;
}

// TensorFlow's in_top_k: fewer than k classes score strictly higher than the target, and every score is finite.
bool in_top_k(const float* row, Index cols, Index target, int k) {
  const float score = row[target];
  Index higher = 0;
  for (Index j = 0; j < cols; ++j) {
    if (!std::isfinite(row[j])) return false;
    if (row[j] > score) ++higher;
  }
  return higher < k;
}

void require_positive_k(const std::string& who, int k) {
  if (k < 1) throw std::invalid_argument(who + ": k must be >= 1, got " + std::to_string(k));
}

}  // namespace

void AccuracyImpl::compute(const Tensor& y_true, const Tensor& y_pred, std::vector<double>& values) const {
  losses::detail::check_matching_shapes(name(), y_true.shape(), y_pred.shape());
  const Tensor yt = y_true.to(Device::cpu()), yp = y_pred.to(Device::cpu());
  const HostValues t(yt), p(yp);
  values.resize(static_cast<std::size_t>(yp.numel()));
  for (Index i = 0; i < yp.numel(); ++i) values[i] = t[i] == p[i] ? 1.0 : 0.0;
}

void BinaryAccuracyImpl::compute(const Tensor& y_true, const Tensor& y_pred, std::vector<double>& values) const {
  losses::detail::check_matching_shapes(name(), y_true.shape(), y_pred.shape());
  const Tensor yt = y_true.to(Device::cpu()), yp = y_pred.to(Device::cpu());
  const HostValues t(yt), p(yp);
  const float threshold = static_cast<float>(options_.threshold);  // Keras compares in float32
  values.resize(static_cast<std::size_t>(yp.numel()));
  for (Index i = 0; i < yp.numel(); ++i) values[i] = t[i] == (p[i] > threshold ? 1.0 : 0.0) ? 1.0 : 0.0;
}

void CategoricalAccuracyImpl::compute(const Tensor& y_true, const Tensor& y_pred,
                                      std::vector<double>& values) const {
  losses::detail::check_categorical_shapes(name(), y_true.shape(), y_pred.shape());
  const Tensor yt = y_true.to(Device::cpu()), yp = y_pred.to(Device::cpu());
  const HostValues t(yt), p(yp);
  const Index cols = yp.dim(-1), rows = yp.numel() / std::max<Index>(cols, 1);
  values.resize(static_cast<std::size_t>(rows));
  for (Index r = 0; r < rows; ++r) values[r] = argmax(t, r * cols, cols) == argmax(p, r * cols, cols) ? 1.0 : 0.0;
}

void SparseCategoricalAccuracyImpl::compute(const Tensor& y_true, const Tensor& y_pred,
                                            std::vector<double>& values) const {
  losses::detail::check_sparse_shapes(name(), y_true.shape(), y_pred.shape());
  const Index cols = y_pred.dim(-1), rows = y_pred.numel() / std::max<Index>(cols, 1);
  const std::vector<Index> labels = losses::detail::sparse_labels(y_true, cols, name());
  const Tensor yp = y_pred.to(Device::cpu());
  const HostValues p(yp);
  values.resize(static_cast<std::size_t>(rows));
  for (Index r = 0; r < rows; ++r) values[r] = argmax(p, r * cols, cols) == labels[r] ? 1.0 : 0.0;
}

TopKCategoricalAccuracyImpl::TopKCategoricalAccuracyImpl(Options options) : MetricWithOptions(std::move(options)) {
  require_positive_k(name(), options_.k);
}

void TopKCategoricalAccuracyImpl::compute(const Tensor& y_true, const Tensor& y_pred,
                                          std::vector<double>& values) const {
  losses::detail::check_categorical_shapes(name(), y_true.shape(), y_pred.shape());
  losses::detail::require_float32(y_pred, name(), "y_pred");
  const Tensor yt = y_true.to(Device::cpu()), yp = y_pred.to(Device::cpu());
  const HostValues t(yt);
  const float* p = yp.data<float>();
  const Index cols = yp.dim(-1), rows = yp.numel() / std::max<Index>(cols, 1);
  values.resize(static_cast<std::size_t>(rows));
  for (Index r = 0; r < rows; ++r)
    values[r] = in_top_k(p + r * cols, cols, argmax(t, r * cols, cols), options_.k) ? 1.0 : 0.0;
}

SparseTopKCategoricalAccuracyImpl::SparseTopKCategoricalAccuracyImpl(Options options)
    : MetricWithOptions(std::move(options)) {
  require_positive_k(name(), options_.k);
}

void SparseTopKCategoricalAccuracyImpl::compute(const Tensor& y_true, const Tensor& y_pred,
                                                std::vector<double>& values) const {
  losses::detail::check_sparse_shapes(name(), y_true.shape(), y_pred.shape());
  losses::detail::require_float32(y_pred, name(), "y_pred");
  const Index cols = y_pred.dim(-1), rows = y_pred.numel() / std::max<Index>(cols, 1);
  const std::vector<Index> labels = losses::detail::sparse_labels(y_true, cols, name());
  const Tensor yp = y_pred.to(Device::cpu());
  const float* p = yp.data<float>();
  values.resize(static_cast<std::size_t>(rows));
  for (Index r = 0; r < rows; ++r) values[r] = in_top_k(p + r * cols, cols, labels[r], options_.k) ? 1.0 : 0.0;
}

}  // namespace tower::metrics
