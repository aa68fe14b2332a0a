#include "api/losses/categorical_crossentropy.h"

#include <stdexcept>

namespace tower::losses {

namespace {
const Config::Map kFixed = {{"reduction", "sum_over_batch_size"}, {"axis", -1}};
}  // namespace

CategoricalCrossentropyImpl::CategoricalCrossentropyImpl(Options options)
    : BackendLoss("CategoricalCrossentropy", options.name), options_(std::move(options)) {
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

// Keras computes with label_smoothing as a float32.
backend::LossParams CategoricalCrossentropyImpl::params() const {
  return {.kind = backend::LossKind::categorical_crossentropy,
          .from_logits = options_.from_logits,
          .label_smoothing = static_cast<float>(options_.label_smoothing)};
}

}  // namespace tower::losses
