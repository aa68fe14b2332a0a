#include "api/losses/categorical_crossentropy.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

namespace tower::losses {

namespace {
const Config::Map kFixed = {{"reduction", "sum_over_batch_size"}, {"axis", -1}};

bool clipped(double q) { return q < detail::kEpsilon || q > detail::kOneMinusEpsilon; }
}  // namespace

CategoricalCrossentropyImpl::CategoricalCrossentropyImpl(Options options)
    : Loss("CategoricalCrossentropy", options.name), options_(std::move(options)) {
  if (!(options_.label_smoothing >= 0 && options_.label_smoothing <= 1))
    throw std::invalid_argument(name() + ": label_smoothing must be in [0, 1], got " +
                                std::to_string(options_.label_smoothing));
}

LossPtr CategoricalCrossentropyImpl::from_config(const Config& arguments) {
  return detail::make_from_arguments<CategoricalCrossentropyImpl>(arguments, kFixed, "CategoricalCrossentropy");
}

Config CategoricalCrossentropyImpl::get_config() const {
  return detail::serialize(type(), options_to_config(options_), kFixed);
}

Shape CategoricalCrossentropyImpl::per_example_shape(const Shape& y_pred) const {
  if (y_pred.rank() < 2)
    throw std::invalid_argument(name() + ": y_pred must be [batch, ..., classes], got shape " + y_pred.to_string());
  return Loss::per_example_shape(y_pred);
}

void CategoricalCrossentropyImpl::check_shapes(const Shape& y_true, const Shape& y_pred) const {
  detail::check_categorical_shapes(name(), y_true, y_pred);
}

void CategoricalCrossentropyImpl::forward(const Tensor& y_true, const Tensor& y_pred, Tensor& per_example) {
  run(Mode::forward, y_true, y_pred, nullptr, per_example);
}

void CategoricalCrossentropyImpl::backward(const Tensor& y_true, const Tensor& y_pred, const Tensor& scale,
                                           Tensor& grad) {
  run(Mode::backward, y_true, y_pred, &scale, grad);
}

void CategoricalCrossentropyImpl::backward_through_softmax(const Tensor& y_true, const Tensor& probs,
                                                           const Tensor& scale, Tensor& grad_logits) {
  if (!can_fuse_softmax()) Loss::backward_through_softmax(y_true, probs, scale, grad_logits);
  run(Mode::fused, y_true, probs, &scale, grad_logits);
}

void CategoricalCrossentropyImpl::run(Mode mode, const Tensor& y_true, const Tensor& y_pred, const Tensor* scale,
                                      Tensor& out) {
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
  const Tensor yt = y_true.to(Device::cpu()), yp = y_pred.to(Device::cpu());
  const detail::HostValues labels(yt);
  const float* p = yp.data<float>();
  detail::HostOutput host_out(out);
  float* o = host_out.data();
  const double ls = static_cast<float>(options_.label_smoothing);
  std::vector<double> t(static_cast<std::size_t>(cols)), aux(static_cast<std::size_t>(cols));
  for (Index r = 0; r < rows; ++r) {
    const float* pr = p + r * cols;
    double t_sum = 0;
    for (Index j = 0; j < cols; ++j) {
      t[j] = labels[r * cols + j] * (1.0 - ls) + ls / static_cast<double>(cols);
      t_sum += t[j];
    }
    const double sc = scale ? s.data<float>()[r] : 0.0;
    if (mode == Mode::fused) {
      for (Index j = 0; j < cols; ++j) o[r * cols + j] = static_cast<float>(sc * (pr[j] * t_sum - t[j]));
    } else if (options_.from_logits) {
      // aux = softmax(logits); lse = log(sum(exp(logits))).
      const double m = *std::max_element(pr, pr + cols);
      double sum = 0;
      for (Index j = 0; j < cols; ++j) sum += aux[j] = std::exp(pr[j] - m);
      const double lse = m + std::log(sum);
      if (mode == Mode::forward) {
        double loss = 0;
        for (Index j = 0; j < cols; ++j) loss += t[j] * (lse - pr[j]);
        o[r] = static_cast<float>(loss);
      } else {
        for (Index j = 0; j < cols; ++j) o[r * cols + j] = static_cast<float>(sc * (aux[j] / sum * t_sum - t[j]));
      }
    } else {
      // aux = q = p / sum(p), the renormalised probabilities.
      double sum = 0;
      for (Index j = 0; j < cols; ++j) sum += pr[j];
      for (Index j = 0; j < cols; ++j) aux[j] = pr[j] / sum;
      if (mode == Mode::forward) {
        double loss = 0;
        for (Index j = 0; j < cols; ++j)
          loss -= t[j] * std::log(std::clamp(aux[j], double{detail::kEpsilon}, double{detail::kOneMinusEpsilon}));
        o[r] = static_cast<float>(loss);
      } else {
        // dL/dq_j = -t_j / q_j where q_j is not clipped; dL/dp_k = (dL/dq_k - sum_j dL/dq_j q_j) / sum(p).
        double dot = 0;
        for (Index j = 0; j < cols; ++j) dot += (clipped(aux[j]) ? 0.0 : -t[j]);
        for (Index k = 0; k < cols; ++k) {
          const double dq = clipped(aux[k]) ? 0.0 : -t[k] / aux[k];
          o[r * cols + k] = static_cast<float>(sc * (dq - dot) / sum);
        }
      }
    }
  }
  host_out.commit();
}

}  // namespace tower::losses
