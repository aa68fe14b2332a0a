#include "api/losses/binary_crossentropy.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace tower::losses {

namespace {
const Config::Map kFixed = {{"reduction", "sum_over_batch_size"}, {"axis", -1}};

double clip(double p) {
  return std::clamp(p, static_cast<double>(detail::kEpsilon), static_cast<double>(detail::kOneMinusEpsilon));
}
}  // namespace

BinaryCrossentropyImpl::BinaryCrossentropyImpl(Options options)
    : ElementwiseLoss("BinaryCrossentropy", options.name),
      options_(std::move(options)),
      smoothing_(static_cast<float>(options_.label_smoothing)) {
  if (!(options_.label_smoothing >= 0 && options_.label_smoothing <= 1))
    throw std::invalid_argument(name() + ": label_smoothing must be in [0, 1], got " +
                                std::to_string(options_.label_smoothing));
}

LossPtr BinaryCrossentropyImpl::from_config(const Config& arguments) {
  return detail::make_from_arguments<BinaryCrossentropyImpl>(arguments, kFixed, "BinaryCrossentropy");
}

Config BinaryCrossentropyImpl::get_config() const {
  return detail::serialize(type(), options_to_config(options_), kFixed);
}

double BinaryCrossentropyImpl::value(double t, double p) const {
  t = smooth(t);
  if (options_.from_logits) return std::max(p, 0.0) - p * t + std::log1p(std::exp(-std::abs(p)));
  const double c = clip(p);
  return -(t * std::log(c) + (1.0 - t) * std::log(1.0 - c));
}

double BinaryCrossentropyImpl::derivative(double t, double p) const {
  t = smooth(t);
  if (options_.from_logits) return 1.0 / (1.0 + std::exp(-p)) - t;
  if (p < detail::kEpsilon || p > detail::kOneMinusEpsilon) return 0.0;
  return -t / p + (1.0 - t) / (1.0 - p);
}

}  // namespace tower::losses
