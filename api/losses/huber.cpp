#include "api/losses/huber.h"

#include <stdexcept>

namespace tower::losses {

namespace {
const Config::Map kFixed = {{"reduction", "sum_over_batch_size"}};
}  // namespace

HuberImpl::HuberImpl(Options options) : BackendLoss("Huber", options.name), options_(std::move(options)) {
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
backend::LossParams HuberImpl::params() const {
  return {.kind = backend::LossKind::huber, .delta = static_cast<float>(options_.delta)};
}

}  // namespace tower::losses
