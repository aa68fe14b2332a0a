#include "api/losses/binary_crossentropy.h"

#include <stdexcept>

namespace tower::losses {

namespace {
const Config::Map kFixed = {{"reduction", "sum_over_batch_size"}, {"axis", -1}};
}  // namespace

BinaryCrossentropyImpl::BinaryCrossentropyImpl(Options options)
    : BackendLoss("BinaryCrossentropy", options.name), options_(std::move(options)) {
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

// Keras computes with label_smoothing as a float32.
backend::LossParams BinaryCrossentropyImpl::params() const {
  return {.kind = backend::LossKind::binary_crossentropy,
          .from_logits = options_.from_logits,
          .label_smoothing = static_cast<float>(options_.label_smoothing)};
}

}  // namespace tower::losses
