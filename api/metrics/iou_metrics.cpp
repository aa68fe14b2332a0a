#include "api/metrics/iou_metrics.h"

#include <cmath>
#include <sstream>
#include <stdexcept>

#include "api/backend/math/any_values.h"

namespace tower::metrics {

namespace detail {

namespace {

std::string number(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

}  // namespace

void IoUBase::configure(const Setup& setup) {
  if (!setup.num_classes || *setup.num_classes < 1)
    throw std::invalid_argument(name() + ": num_classes must be given and >= 1, got " +
                                (setup.num_classes ? std::to_string(*setup.num_classes) : std::string("none")));
  if (setup.axis != -1)
    throw std::invalid_argument(name() + ": only axis -1 (the last) is supported, got " + std::to_string(setup.axis));
  if (setup.binary_threshold && !(*setup.binary_threshold >= 0 && *setup.binary_threshold <= 1))
    throw std::invalid_argument(name() + ": threshold must be in [0, 1], got " +
                                std::to_string(*setup.binary_threshold));
  setup_ = setup;
  if (setup_.target_class_ids.empty())
    for (int c = 0; c < *setup.num_classes; ++c) setup_.target_class_ids.push_back(c);
  for (const int c : setup_.target_class_ids)
    if (c < 0 || c >= *setup.num_classes)
      throw std::invalid_argument(name() + ": target class id " + std::to_string(c) + " is not in [0, " +
                                  std::to_string(*setup.num_classes) + ")");
}

void IoUBase::check_host_labels(const Tensor& labels, const char* what, bool skip_ignored) const {
  if (labels.dtype() != DType::float32 && labels.dtype() != DType::int32 && labels.dtype() != DType::int64)
    throw std::invalid_argument(name() + ": " + what + " must be int32, int64 or float32, got " +
                                dtype_name(labels.dtype()));
  // On a GPU the check would stop the step to read the labels back; there such a label adds nothing.
  if (!labels.device().is_cpu()) return;
  const backend::AnyValues values = losses::detail::any_values(labels);
  const auto classes = static_cast<double>(*setup_.num_classes);
  for (Index i = 0; i < labels.numel(); ++i) {
    const double v = std::trunc(backend::math::value_at(values, i));
    if (skip_ignored && setup_.ignore_class && v == *setup_.ignore_class) continue;
    if (!(v >= 0 && v < classes))
      throw std::invalid_argument(name() + ": " + what + " " + number(backend::math::value_at(values, i)) +
                                  " at index " + std::to_string(i) + " is not a class in [0, " +
                                  std::to_string(*setup_.num_classes) + ") for num_classes " +
                                  std::to_string(*setup_.num_classes));
  }
}

void IoUBase::update_state(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) {
  const bool binary = setup_.binary_threshold.has_value();
  const bool sparse_true = setup_.sparse_y_true || binary, sparse_pred = setup_.sparse_y_pred || binary;
  const Index true_classes = sparse_true || y_true.rank() == 0 ? 1 : y_true.dim(-1);
  const Index pred_classes = sparse_pred || y_pred.rank() == 0 ? 1 : y_pred.dim(-1);
  const Index n = y_pred.numel() / std::max<Index>(pred_classes, 1);
  const bool same_classes = sparse_true || sparse_pred || true_classes == pred_classes;
  if (y_true.numel() / std::max<Index>(true_classes, 1) != n || !same_classes)
    throw std::invalid_argument(name() + ": y_true " + y_true.shape().to_string() + " and y_pred " +
                                y_pred.shape().to_string() + " do not have the same positions (sparse_y_true " +
                                (sparse_true ? "true" : "false") + ", sparse_y_pred " +
                                (sparse_pred ? "true" : "false") + ")");
  if (sparse_true) check_host_labels(y_true, "label", true);
  if (sparse_pred && !binary) check_host_labels(y_pred, "predicted class", false);
  const Device device = y_pred.device();
  backend::ConfusionMatrixParams p{.n = n, .examples = y_pred.rank() == 0 ? 1 : y_pred.dim(0),
                                   .num_classes = *setup_.num_classes,
                                   .classes = sparse_true ? pred_classes : true_classes,
                                   .sparse_y_true = sparse_true, .sparse_y_pred = sparse_pred,
                                   .binary_threshold = binary,
                                   .threshold = static_cast<float>(setup_.binary_threshold.value_or(0.5)),
                                   .has_ignore_class = setup_.ignore_class.has_value(),
                                   .ignore_class = setup_.ignore_class.value_or(0)};
  Tensor w;
  if (sample_weight.defined()) {
    p.weight_per_element = weight_per_element(name(), sample_weight, p.examples, n);
    w = sample_weight.to(device);
  }
  const Index cells = p.num_classes * p.num_classes;
  backend::get(device).update_confusion_matrix(p, losses::detail::any_values(y_true.to(device)),
                                               losses::detail::any_values(y_pred), losses::detail::any_values(w),
                                               state_on(state_, cells, device).data());
}

std::vector<double> IoUBase::confusion_matrix() const {
  const auto c = static_cast<std::size_t>(*setup_.num_classes);
  return state_.defined() ? state_.read() : std::vector<double>(c * c, 0.0);
}

double IoUBase::result() const {
  const std::vector<double> cm = confusion_matrix();
  const auto c = static_cast<std::size_t>(*setup_.num_classes);
  double sum = 0, valid = 0;
  for (const int target : setup_.target_class_ids) {
    const auto k = static_cast<std::size_t>(target);
    double row = 0, column = 0;
    for (std::size_t j = 0; j < c; ++j) {
      row += cm[k * c + j];
      column += cm[j * c + k];
    }
    const double tp = cm[k * c + k], denominator = row + column - tp;
    if (denominator <= 1e-9) continue;
    sum += tp / (denominator + 1e-7);
    valid += 1;
  }
  return sum / (valid + 1e-7);
}

void IoUBase::merge_state(const Metric& other) {
  check_mergeable(*this, other);
  merge_states(state_, static_cast<const IoUBase&>(other).state_);
}

}  // namespace detail

IoUImpl::IoUImpl(Options options) : MetricWithOptions(std::move(options)) {
  if (options_.target_class_ids.empty()) throw std::invalid_argument(name() + ": target_class_ids is required");
  configure({.num_classes = options_.num_classes, .target_class_ids = options_.target_class_ids,
             .ignore_class = options_.ignore_class, .sparse_y_true = options_.sparse_y_true,
             .sparse_y_pred = options_.sparse_y_pred, .axis = options_.axis});
}

MeanIoUImpl::MeanIoUImpl(Options options) : MetricWithOptions(std::move(options)) {
  configure({.num_classes = options_.num_classes, .ignore_class = options_.ignore_class,
             .sparse_y_true = options_.sparse_y_true, .sparse_y_pred = options_.sparse_y_pred,
             .axis = options_.axis});
}

OneHotIoUImpl::OneHotIoUImpl(Options options) : MetricWithOptions(std::move(options)) {
  if (options_.target_class_ids.empty()) throw std::invalid_argument(name() + ": target_class_ids is required");
  configure({.num_classes = options_.num_classes, .target_class_ids = options_.target_class_ids,
             .ignore_class = options_.ignore_class, .sparse_y_true = false,
             .sparse_y_pred = options_.sparse_y_pred, .axis = options_.axis});
}

OneHotMeanIoUImpl::OneHotMeanIoUImpl(Options options) : MetricWithOptions(std::move(options)) {
  configure({.num_classes = options_.num_classes, .ignore_class = options_.ignore_class, .sparse_y_true = false,
             .sparse_y_pred = options_.sparse_y_pred, .axis = options_.axis});
}

BinaryIoUImpl::BinaryIoUImpl(Options options) : MetricWithOptions(std::move(options)) {
  if (options_.target_class_ids.empty()) throw std::invalid_argument(name() + ": target_class_ids is required");
  configure({.num_classes = 2, .target_class_ids = options_.target_class_ids, .binary_threshold = options_.threshold});
}

}  // namespace tower::metrics
