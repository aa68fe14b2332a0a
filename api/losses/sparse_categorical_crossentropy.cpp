#include "api/losses/sparse_categorical_crossentropy.h"

#include <stdexcept>

namespace tower::losses {

namespace {
const Config::Map kFixed = {{"reduction", "sum_over_batch_size"}};
}  // namespace

SparseCategoricalCrossentropyImpl::SparseCategoricalCrossentropyImpl(Options options)
    : BackendLoss("SparseCategoricalCrossentropy", options.name), options_(std::move(options)) {}

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

backend::LossParams SparseCategoricalCrossentropyImpl::params() const {
  backend::LossParams p{.kind = backend::LossKind::sparse_categorical_crossentropy,
                        .from_logits = options_.from_logits};
  if (options_.ignore_class) p.ignore_class = static_cast<double>(*options_.ignore_class);
  return p;
}

}  // namespace tower::losses
