#include "api/losses/binary_focal_crossentropy.h"

#include <stdexcept>

namespace tower::losses {

namespace {
const Config::Map kFixed = {{"reduction", "sum_over_batch_size"}, {"axis", -1}};
}  // namespace

BinaryFocalCrossentropyImpl::BinaryFocalCrossentropyImpl(Options options)
    : BackendLoss("BinaryFocalCrossentropy", options.name), options_(std::move(options)) {
  detail::check_focal_arguments(name(), options_.alpha, options_.gamma, options_.label_smoothing);
}

LossPtr BinaryFocalCrossentropyImpl::from_config(const Config& arguments) {
  return detail::make_from_arguments<BinaryFocalCrossentropyImpl>(arguments, kFixed, "BinaryFocalCrossentropy");
}

Config BinaryFocalCrossentropyImpl::get_config() const {
  return detail::serialize(type(), options_to_config(options_), kFixed);
}

// Keras computes with its arguments as float32 values.
backend::LossParams BinaryFocalCrossentropyImpl::params() const {
  return {.kind = backend::LossKind::binary_focal_crossentropy,
          .from_logits = options_.from_logits,
          .label_smoothing = static_cast<float>(options_.label_smoothing),
          .alpha = static_cast<float>(options_.alpha),
          .gamma = static_cast<float>(options_.gamma),
          .apply_class_balancing = options_.apply_class_balancing};
}

}  // namespace tower::losses
