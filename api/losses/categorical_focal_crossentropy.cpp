#include "api/losses/categorical_focal_crossentropy.h"

#include <stdexcept>

namespace tower::losses {

namespace {
const Config::Map kFixed = {{"reduction", "sum_over_batch_size"}, {"axis", -1}};
}  // namespace

CategoricalFocalCrossentropyImpl::CategoricalFocalCrossentropyImpl(Options options)
    : BackendLoss("CategoricalFocalCrossentropy", options.name), options_(std::move(options)) {
  detail::check_focal_arguments(name(), options_.alpha, options_.gamma, options_.label_smoothing);
}

LossPtr CategoricalFocalCrossentropyImpl::from_config(const Config& arguments) {
  return detail::make_from_arguments<CategoricalFocalCrossentropyImpl>(arguments, kFixed,
                                                                       "CategoricalFocalCrossentropy");
}

Config CategoricalFocalCrossentropyImpl::get_config() const {
  return detail::serialize(type(), options_to_config(options_), kFixed);
}

Shape CategoricalFocalCrossentropyImpl::per_example_shape(const Shape& y_pred) const {
  if (y_pred.rank() < 2)
    throw std::invalid_argument(name() + ": y_pred must be [batch, ..., classes], got shape " + y_pred.to_string());
  return Loss::per_example_shape(y_pred);
}

void CategoricalFocalCrossentropyImpl::check_shapes(const Shape& y_true, const Shape& y_pred) const {
  detail::check_categorical_shapes(name(), y_true, y_pred);
}

// Keras computes with its arguments as float32 values.
backend::LossParams CategoricalFocalCrossentropyImpl::params() const {
  return {.kind = backend::LossKind::categorical_focal_crossentropy,
          .from_logits = options_.from_logits,
          .label_smoothing = static_cast<float>(options_.label_smoothing),
          .alpha = static_cast<float>(options_.alpha),
          .gamma = static_cast<float>(options_.gamma)};
}

}  // namespace tower::losses
