#include "api/losses/huber.h"

#include <cmath>
#include <stdexcept>

namespace tower::losses {

namespace {
const Config::Map kFixed = {{"reduction", "sum_over_batch_size"}};
}  // namespace

HuberImpl::HuberImpl(Options options) : ElementwiseLoss("Huber", options.name), options_(std::move(options)) {
  if (!(options_.delta >= 0))
    throw std::invalid_argument(name() + ": delta must be >= 0, got " + std::to_string(options_.delta));
}

LossPtr HuberImpl::from_config(const Config& arguments) {
  return detail::make_from_arguments<HuberImpl>(arguments, kFixed, "Huber");
}

Config HuberImpl::get_config() const {
  return detail::serialize(type(), options_to_config(options_), kFixed);
}

// Keras computes delta in y_pred's dtype, so the band edge is float32(delta).
double HuberImpl::value(double t, double p) const {
  const double e = p - t, delta = static_cast<float>(options_.delta);
  return std::abs(e) <= delta ? 0.5 * e * e : delta * std::abs(e) - 0.5 * delta * delta;
}

double HuberImpl::derivative(double t, double p) const {
  const double e = p - t, delta = static_cast<float>(options_.delta);
  if (std::abs(e) <= delta) return e;
  return e > 0 ? delta : -delta;
}

}  // namespace tower::losses
