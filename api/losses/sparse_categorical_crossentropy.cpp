#include "api/losses/sparse_categorical_crossentropy.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace tower::losses {

namespace {
const Config::Map kFixed = {{"reduction", "sum_over_batch_size"}, {"ignore_class", Config()}};

bool clipped(double p) { return p < detail::kEpsilon || p > detail::kOneMinusEpsilon; }
double clip(double p) { return std::clamp(p, double{detail::kEpsilon}, double{detail::kOneMinusEpsilon}); }
}  // namespace

SparseCategoricalCrossentropyImpl::SparseCategoricalCrossentropyImpl(Options options)
    : Loss("SparseCategoricalCrossentropy", options.name), options_(std::move(options)) {}

LossPtr SparseCategoricalCrossentropyImpl::from_config(const Config& arguments) {
  return detail::make_from_arguments<SparseCategoricalCrossentropyImpl>(arguments, kFixed,
                                                                        "SparseCategoricalCrossentropy");
}

Config SparseCategoricalCrossentropyImpl::get_config() const {
  return detail::serialize(type(), options_to_config(options_), kFixed);
}

Shape SparseCategoricalCrossentropyImpl::per_example_shape(const Shape& y_pred) const {
  if (y_pred.rank() < 2)
    throw std::invalid_argument(name() + ": y_pred must be [batch, ..., classes], got shape " + y_pred.to_string());
  return Loss::per_example_shape(y_pred);
}

void SparseCategoricalCrossentropyImpl::check_shapes(const Shape& y_true, const Shape& y_pred) const {
  detail::check_sparse_shapes(name(), y_true, y_pred);
}

void SparseCategoricalCrossentropyImpl::forward(const Tensor& y_true, const Tensor& y_pred, Tensor& per_example) {
  run(Mode::forward, y_true, y_pred, nullptr, per_example);
}

void SparseCategoricalCrossentropyImpl::backward(const Tensor& y_true, const Tensor& y_pred, const Tensor& scale,
                                                 Tensor& grad) {
  run(Mode::backward, y_true, y_pred, &scale, grad);
}

void SparseCategoricalCrossentropyImpl::backward_through_softmax(const Tensor& y_true, const Tensor& probs,
                                                                 const Tensor& scale, Tensor& grad_logits) {
  if (!can_fuse_softmax()) Loss::backward_through_softmax(y_true, probs, scale, grad_logits);
  run(Mode::fused, y_true, probs, &scale, grad_logits);
}

void SparseCategoricalCrossentropyImpl::run(Mode mode, const Tensor& y_true, const Tensor& y_pred,
                                            const Tensor* scale, Tensor& out) {
  check_shapes(y_true.shape(), y_pred.shape());
  detail::require_float32(y_pred, name(), "y_pred");
  detail::require_float32(out, name(), mode == Mode::forward ? "per_example" : "grad");
  const Index cols = y_pred.dim(-1), rows = y_pred.numel() / std::max<Index>(cols, 1);
  detail::require_numel(out, mode == Mode::forward ? rows : y_pred.numel(), name(),
                        mode == Mode::forward ? "per_example" : "grad");
  Tensor s;
  if (scale) {
    detail::require_float32(*scale, name(), "scale");
    detail::require_numel(*scale, rows, name(), "scale");
    s = scale->to(Device::cpu());
  }
  const std::vector<Index> labels = detail::sparse_labels(y_true, cols, name());
  const Tensor yp = y_pred.to(Device::cpu());
  const float* p = yp.data<float>();
  detail::HostOutput host_out(out);
  float* o = host_out.data();
  for (Index r = 0; r < rows; ++r) {
    const float* pr = p + r * cols;
    float* gr = mode == Mode::forward ? nullptr : o + r * cols;
    const Index y = labels[static_cast<std::size_t>(r)];
    const double sc = scale ? s.data<float>()[r] : 0.0;
    if (mode == Mode::fused) {
      for (Index j = 0; j < cols; ++j) gr[j] = static_cast<float>(sc * (pr[j] - (j == y ? 1.0 : 0.0)));
    } else if (options_.from_logits) {
      const double m = *std::max_element(pr, pr + cols);
      double sum = 0;
      for (Index j = 0; j < cols; ++j) sum += std::exp(pr[j] - m);
      if (mode == Mode::forward) {
        o[r] = static_cast<float>(m + std::log(sum) - pr[y]);
      } else {
        for (Index j = 0; j < cols; ++j)
          gr[j] = static_cast<float>(sc * (std::exp(pr[j] - m) / sum - (j == y ? 1.0 : 0.0)));
      }
    } else {
      double sum = 0;
      for (Index j = 0; j < cols; ++j) sum += clip(pr[j]);
      if (mode == Mode::forward) {
        o[r] = static_cast<float>(std::log(sum) - std::log(clip(pr[y])));
      } else {
        for (Index j = 0; j < cols; ++j)
          gr[j] = clipped(pr[j]) ? 0.f : static_cast<float>(sc * (1.0 / sum - (j == y ? 1.0 / pr[j] : 0.0)));
      }
    }
  }
  host_out.commit();
}

}  // namespace tower::losses
